// Goldens of the decider as exported with a slot head (`decider-slots`), made by the independent
// Python references, never by Assay's TypeScript: the decider goldens' requests (decider-goldens.ts:
// >10, >26, 255 and 256 options, states past the 32,768-token cut, every added token of the
// tokenizer in every field, seeded mixtures) with the Qwen3.5-id tokenizer's added tokens, plus
// this family's own (several questions at once, rows over the replica's position table); rows laid
// out by tools/families/decider/decider_layout.py (text tokenized as data, as Assay's rule says), the label
// logits of every row up to NUMPY_ROW_TOKENS by the numpy forward of the replica
// (tools/families/kit/causal_forward.py + tools/families/decider-slots/decider_slots_forward.py), and the answers'
// probabilities by decider_layout.py's readout of those logits (the replica's [T, 1, T]).
// test/families/decider-slots-evaluator.test.ts holds the engine to them.
//
//   npx tsx tools/families/decider-slots/goldens.ts    rewrites test/families/decider-slots/goldens.json
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { DECIDER_REFERENCE, dataTokenizer, goldenRequests, type GoldenRequest } from '../decider/goldens.js';
import { ensureSlotsReplica, SLOTS_REPLICA_SHAPE, SLOTS_TEMPERATURE } from './replica.js';
import * as kit from '../kit/goldens-kit.js';
import { aTokens, choice, letters, noul, score } from '../kit/goldens-kit.js';

export const SLOTS_GOLDENS = join(kit.ROOT, 'test', 'families', 'decider-slots', 'goldens.json');
const FORWARD = join(kit.ROOT, 'tools', 'families', 'decider-slots', 'decider_slots_forward.py');
/**
 * Rows up to this many tokens get label logits from the numpy forward (and the test runs them
 * through the graph): the replica's attention is a full [seq, seq] matrix per head, so a row at the
 * 32,768-token cut would take ~9 GB in the graph; those rows are checked as tokens and slots only.
 */
export const NUMPY_ROW_TOKENS = 3_072;
const ABOUT = [
  'Goldens of the decider slot-head export (decider-slots): rows by tools/families/decider/decider_layout.py, label logits by',
  'tools/families/decider-slots/decider_slots_forward.py (numpy, float64) on the replica models/generated/decider-slots-replica,',
  'probabilities by the reference readout. Regenerate: npx tsx tools/families/decider-slots/goldens.ts',
];

function requests(dir: string): GoldenRequest[] {
  const out = goldenRequests(dir).map(({ label_logits: _fake, ...r }) => r);
  const state = 'Order 1042 arrived two days late and the box was damaged. I would like my money back.';
  out.push({
    name: 'one request, every type, narrow and wide rows',
    state: { ticket: state, lines: letters(9) },
    questions: [
      ['refund', noul('Does the customer ask for a refund?', { true: 'money back' })],
      [
        'topic',
        choice(
          'Topic?',
          letters(30).map((l) => [l, l === 'B' ? 'billing' : null]),
        ),
      ],
      [
        'small',
        choice('Pick one', [
          ['x', null],
          ['y', 'why'],
        ]),
      ],
      ['severity', score('How severe?', ['0: none', '1: some', '2: much', '3: all'])],
    ],
  });
  out.push({
    name: 'state at the cut with 255 long options: a row past the position table (refused)',
    state: aTokens(33_000),
    questions: [
      [
        'q',
        choice(
          'Which?',
          letters(255).map((l) => [l, aTokens(20)]),
        ),
      ],
    ],
  });
  return out;
}

interface LayoutResult {
  name: string;
  refused?: string;
  ctx?: number[];
  rows?: Array<{ piece: number[]; slot: number }>;
  [key: string]: unknown;
}

function numpyLogits(dir: string, rows: Array<{ ids: number[]; slot: number }>): number[][] {
  const run = spawnSync('/usr/bin/python3', [FORWARD, dir], {
    input: JSON.stringify({ rows }),
    encoding: 'utf8',
    maxBuffer: 1 << 30,
  });
  if (run.status !== 0) throw new Error(`${FORWARD}: ${run.stderr}`);
  return (JSON.parse(run.stdout) as { label_logits: number[][] }).label_logits;
}

async function main(): Promise<void> {
  const dir = ensureSlotsReplica();
  const reqs = requests(dir);
  const tok = dataTokenizer(dir);
  const job = { temperature: [...SLOTS_TEMPERATURE], row_temperature: SLOTS_TEMPERATURE[0], answer_temperature: {} };
  const tokenize = (texts: string[]) => kit.tokenIds(tok, texts);
  const laid = kit.runLayoutReference<string[]>(
    DECIDER_REFERENCE,
    { ...job, requests: reqs },
    tokenize,
  ) as LayoutResult[];
  // The replica's position table is the longest row it reads: a longer row is refused.
  const limit = SLOTS_REPLICA_SHAPE.positions;
  const results = laid.map((r) => {
    if (r.refused) return r;
    const longest = Math.max(...r.rows!.map((row) => r.ctx!.length + row.piece.length));
    return longest > limit
      ? { name: r.name, refused: `row of ${longest} tokens over ${limit}`, row_tokens: longest }
      : r;
  });
  // The label logits of every row of the requests whose rows are short enough, in one numpy run.
  const runs: Array<{ request: number; rows: Array<{ ids: number[]; slot: number }> }> = [];
  results.forEach((r, i) => {
    if (r.refused) return;
    const rows = r.rows!.map((row) => ({ ids: [...r.ctx!, ...row.piece], slot: row.slot }));
    if (rows.every((row) => row.ids.length <= NUMPY_ROW_TOKENS)) runs.push({ request: i, rows });
  });
  const logits = numpyLogits(
    dir,
    runs.flatMap((x) => x.rows),
  );
  let at = 0;
  const withLogits = reqs.map((r) => ({ ...r }));
  for (const x of runs) {
    const mine = logits.slice(at, at + x.rows.length).map((row) => row.map((v) => Number(v.toPrecision(9))));
    at += x.rows.length;
    withLogits[x.request]!.label_logits = mine;
  }
  // The readout of those logits (the rows again, now with probabilities).
  const read = kit.runLayoutReference<string[]>(
    DECIDER_REFERENCE,
    { ...job, requests: withLogits.filter((r) => r.label_logits) },
    tokenize,
  ) as LayoutResult[];
  const byName = new Map(read.map((r) => [r.name, r]));
  const final = results.map((r) => {
    const p = byName.get(r.name)?.probabilities;
    return p === undefined ? r : { ...r, probabilities: p };
  });
  mkdirSync(dirname(SLOTS_GOLDENS), { recursive: true });
  kit.writeGoldens(SLOTS_GOLDENS, { about: ABOUT, ...job }, withLogits, final, `, ${runs.length} with label logits`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
