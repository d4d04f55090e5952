// Goldens of the causal-row families on real trunks (development only, never packed), made by the
// independent references, never by Assay: each family's rows by the authors' layout as the toy
// replicas' goldens lay them out (tools/families/<family>/: kev_layout.py, decision_layout.py,
// decider_layout.py, arbiter_layout.py, through the same harness and tokenizers), each row's head
// outputs by the torch reference forward of the replica (tools/trunks/forward.py: the row alone,
// unpadded, float64, the DeltaNet layers token by token), and the answers by the layout's own
// readout of those outputs. One file per family, test/families/trunks/<family>.json: the requests,
// then per trunk kind the weights' digest and each request's rows (token counts and positions),
// head outputs and answers. test/families/trunks/*.test.ts holds Assay to them.
//
// The requests: states long enough to span several 64-token chunks and many 32-token windows
// (300 to 700 tokens), states whose rows end near a chunk boundary, several questions on one state,
// the same question asked twice under two ids, every type.
//
//   npx tsx tools/trunks/goldens.ts [FAMILY ...]   rewrites test/families/trunks/<family>.json
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import { runReference as arbiterReference, gemmaTokenizer } from '../families/arbiter/goldens.js';
import { DECIDER_REFERENCE } from '../families/decider/goldens.js';
import { SLOTS_TEMPERATURE } from '../families/decider-slots/replica.js';
import { runReference as decisionReference, qwenTokenizer } from '../families/decision/goldens.js';
import * as kit from '../families/kit/goldens-kit.js';
import { aTokens, choice, type Json, noul, type Question, score } from '../families/kit/goldens-kit.js';
import { runKevReference } from '../families/kev/goldens.js';
import { qwen35Tokenizer } from '../families/kit/qwen35-tokenizer.js';
import {
  ensureTrunkReplicas,
  FORWARD,
  PYTHON,
  trunkConfig,
  TRUNK_FAMILIES,
  TRUNK_KINDS,
  TRUNK_REPLICA_SEED,
  TRUNK_REPLICA_VERSION,
  type TrunkFamily,
  type TrunkKind,
} from './replicas.js';

export function trunkGoldensFile(family: TrunkFamily): string {
  return join(kit.ROOT, 'test', 'families', 'trunks', `${family}.json`);
}

/** A request: a state and its questions, [id, question] in the order sent (choice criteria as pairs). */
export interface TrunkRequest {
  name: string;
  state: Json;
  questions: Array<[string, Question]>;
}

/** One row of a request as the reference laid it out: its question, its length and its positions. */
export interface TrunkRow {
  key: string;
  level?: number;
  tokens: number;
  positions: Record<string, number | number[]>;
}

/** A request's result on one trunk: its rows, each row's head outputs (the read ones) and the answers. */
export interface TrunkResult {
  name: string;
  rows: TrunkRow[];
  outputs: number[][];
  /** Per question id: the readout (probabilities, and noul / confidence / score where the type has them). */
  answers: Record<string, { probabilities: number[]; noul?: number; confidence?: number; score?: number }>;
}

export interface TrunkGoldens {
  about: string[];
  family: TrunkFamily;
  replica: { generator_version: number; seed: number };
  digests: Record<TrunkKind, string>;
  requests: TrunkRequest[];
  results: Record<TrunkKind, TrunkResult[]>;
}

const text = kit.seededText([...kit.WORDS.english, ...kit.WORDS.nonAscii]);

/** The requests every family is asked (each valid in every family's layout: Arbiter's six levels, 2..16 options). */
export function trunkRequests(): TrunkRequest[] {
  const rand = kit.seeded(54);
  const refund = noul('Does the customer ask for a refund?', { true: 'money back', false: 'no refund asked' });
  const late = noul('Did the order arrive late?');
  const topic = choice('What is the main topic?', [
    ['delivery', null],
    ['billing', 'invoices and charges'],
    ['product', 'the item itself'],
  ]);
  const pick = choice('Pick one', [
    ['yes', null],
    ['no', 'not at all'],
  ]);
  const severity = score('How severe is the issue?', ['none', 'minor', 'some', 'serious', 'severe', 'critical']);
  const out: TrunkRequest[] = [];
  const add = (name: string, state: Json, questions: Array<[string, Question]>) => out.push({ name, state, questions });
  add('short state, every type', 'The order arrived two days late and the box was damaged. I want a refund.', [
    ['refund', refund],
    ['topic', topic],
    ['severity', severity],
  ]);
  add('a state of ~330 tokens (several chunks, many windows), a question asked twice', text(rand, 160), [
    ['refund', refund],
    ['topic', topic],
    ['severity', severity],
    ['refund_again', refund],
  ]);
  add('a state of ~700 tokens, two ids for one choice', text(rand, 330), [
    ['topic', topic],
    ['topic_again', topic],
    ['late', late],
  ]);
  add('six questions on one state of ~230 tokens', text(rand, 110), [
    ['a', late],
    ['b', pick],
    ['c', severity],
    ['d', refund],
    ['e', topic],
    ['f', late],
  ]);
  // rows whose state ends near a 64-token boundary (each layout adds its own prefix: several lengths)
  for (const n of [40, 57, 60, 63, 64, 121, 124, 127, 128, 190])
    add(`a state of ${n} "a" tokens`, aTokens(n), [
      ['late', late],
      ['pick', pick],
    ]);
  add('an object state', { order: 1042, late_days: 2, damaged: true, note: text(rand, 40), tags: ['x', 'y'] }, [
    ['pick', pick],
    ['severity', severity],
  ]);
  add(
    'a list state of twelve items',
    Array.from({ length: 12 }, () => text(rand, 12)),
    [
      ['refund', refund],
      ['topic', topic],
    ],
  );
  return out;
}

/** One question of a request as a single-question layout request. */
interface Single {
  name: string;
  state: Json;
  question: Question;
  scores?: number[];
  logits?: number[];
}

/** Each question of each request as its own layout request (`request#id`). */
function singles(reqs: TrunkRequest[]): Single[] {
  return reqs.flatMap((r) =>
    r.questions.map(([key, question]) => ({ name: `${r.name}#${key}`, state: r.state, question })),
  );
}

/** A family's reference: lays the requests out into rows, then reads the rows' head outputs. */
interface FamilyReference {
  layout(reqs: TrunkRequest[]): Array<Array<TrunkRow & { ids: number[] }>>;
  readout(reqs: TrunkRequest[], outputs: number[][][]): Array<TrunkResult['answers']>;
}

/** A single-question layout (Kev, Decision, Arbiter): one row per question. */
function perQuestion(
  run: (singles: Single[]) => Array<Record<string, unknown>>,
  row: (r: Record<string, unknown>) => { ids: number[]; positions: Record<string, number | number[]> },
  outputsKey: 'scores' | 'logits',
): FamilyReference {
  const grouped = <T>(reqs: TrunkRequest[], xs: T[]): T[][] => {
    let at = 0;
    return reqs.map((r) => xs.slice(at, (at += r.questions.length)));
  };
  return {
    layout(reqs) {
      const laid = run(singles(reqs));
      for (const r of laid) if (r.refused) throw new Error(`${String(r.name)}: refused by the reference`);
      const rows = laid.map((r, i) => {
        const { ids, positions } = row(r);
        return { key: String(r.name).split('#').pop()!, ids, tokens: ids.length, positions, i };
      });
      return grouped(reqs, rows);
    },
    readout(reqs, outputs) {
      const withOutputs = singles(reqs).map((s, i) => ({ ...s, [outputsKey]: outputs.flat()[i] }));
      const read = run(withOutputs);
      return grouped(reqs, read).map((qs, i) =>
        Object.fromEntries(qs.map((q, j) => [reqs[i]!.questions[j]![0], q.readout as never])),
      );
    },
  };
}

const kev = perQuestion(
  (s) => runKevReference(s as never),
  (r) => {
    const row = r.row as { ids: number[]; decide: number; opts: number[] };
    return { ids: row.ids, positions: { decide_pos: row.decide, opt_pos: row.opts } };
  },
  'scores',
);
const decision = perQuestion(
  (s) => decisionReference(s as never, qwenTokenizer()),
  (r) => ({
    ids: r.ids as number[],
    positions: { query_pos: r.query_pos as number, cand_pos: r.cand_pos as number[] },
  }),
  'logits',
);
const arbiter = perQuestion(
  (s) => arbiterReference(s as never, gemmaTokenizer()),
  (r) => ({ ids: r.ids as number[], positions: { last_pos: r.last_pos as number } }),
  'logits',
);

/** decider's layout (decider_layout.py, multi-question requests, isolated score rows), the replica's [T, 1, T]. */
const DECIDER_JOB = {
  temperature: [...SLOTS_TEMPERATURE],
  row_temperature: SLOTS_TEMPERATURE[0],
  answer_temperature: {},
};
function deciderRun(reqs: Array<TrunkRequest & { label_logits?: number[][] }>): Array<Record<string, unknown>> {
  const t = qwen35Tokenizer();
  const tok = new Tokenizer({ ...t.tokenizer, added_tokens: [] }, t.config);
  return kit.runLayoutReference<string[]>(DECIDER_REFERENCE, { ...DECIDER_JOB, requests: reqs }, (texts) =>
    kit.tokenIds(tok, texts),
  );
}
const deciderSlots: FamilyReference = {
  layout(reqs) {
    return deciderRun(reqs).map((r) => {
      if (r.refused) throw new Error(`${String(r.name)}: refused by the reference`);
      const ctx = r.ctx as number[];
      return (r.rows as Array<{ key: string; level?: number; piece: number[]; slot: number; labels: number[] }>).map(
        (row) => ({
          key: row.key,
          ...(row.level === undefined ? {} : { level: row.level }),
          ids: [...ctx, ...row.piece],
          tokens: ctx.length + row.piece.length,
          positions: { slot_pos: row.slot },
          labels: row.labels.length,
        }),
      );
    });
  },
  readout(reqs, outputs) {
    const read = deciderRun(reqs.map((r, i) => ({ ...r, label_logits: outputs[i]! })));
    return read.map((r) =>
      Object.fromEntries(
        Object.entries(r.probabilities as Record<string, number[]>).map(([k, p]) => [k, { probabilities: p }]),
      ),
    );
  },
};

export const FAMILY_REFERENCES: Record<TrunkFamily, FamilyReference> = {
  kev,
  decision,
  'decider-slots': deciderSlots,
  arbiter,
};

/** forward.py on `rows` of the replica in `dir`: each row's head outputs and the weights' digest. */
export function referenceForward(
  dir: string,
  rows: Array<{ ids: number[]; positions: Record<string, number | number[]> }>,
): { digest: string; outputs: number[][] } {
  const run = spawnSync(PYTHON, [FORWARD], {
    input: JSON.stringify({ spec: trunkConfig(dir), rows }),
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  if (run.status !== 0) throw new Error(`${FORWARD}: ${run.stderr.slice(-4000)}`);
  return JSON.parse(run.stdout) as { digest: string; outputs: number[][] };
}

/** 9 significant digits: what an fp32 graph can be held to, in a readable file. */
const rounded = (xs: number[]): number[] => xs.map((x) => Number(x.toPrecision(9)));

/** The family's goldens on every trunk kind (the tiny replicas written first where missing). */
export async function makeTrunkGoldens(family: TrunkFamily): Promise<TrunkGoldens> {
  const reqs = trunkRequests();
  const ref = FAMILY_REFERENCES[family];
  const laid = ref.layout(reqs);
  const dirs = await ensureTrunkReplicas(
    TRUNK_KINDS.map((trunk) => ({ family, trunk })),
    { log: console.error },
  );
  const digests = {} as Record<TrunkKind, string>;
  const results = {} as Record<TrunkKind, TrunkResult[]>;
  TRUNK_KINDS.forEach((trunk, t) => {
    const forward = referenceForward(dirs[t]!, laid.flat());
    if (forward.digest !== trunkConfig(dirs[t]!).digest)
      throw new Error(`${family}-${trunk}: the folder's weights differ`);
    digests[trunk] = forward.digest;
    let at = 0;
    // decider's readout reads a row's first `labels` logits: only those are kept
    const outputs = laid.map((rows) =>
      rows.map((row) => {
        const y = forward.outputs[at++]!;
        return 'labels' in row ? y.slice(0, row.labels as number) : y;
      }),
    );
    const answers = ref.readout(reqs, outputs);
    results[trunk] = reqs.map((r, i) => ({
      name: r.name,
      rows: laid[i]!.map(({ key, level, tokens, positions }) => ({
        key,
        ...(level === undefined ? {} : { level }),
        tokens,
        positions,
      })),
      outputs: outputs[i]!.map(rounded),
      answers: answers[i]!,
    }));
  });
  return {
    about: [
      `Goldens of ${family} on the real-trunk replicas (tools/trunks/), made by tools/trunks/goldens.ts: rows by the`,
      "family's reference layout, head outputs by tools/trunks/forward.py (torch, float64, each row alone and unpadded,",
      "DeltaNet token by token), answers by the layout's readout. Not made by Assay. Regenerate: npx tsx tools/trunks/goldens.ts",
    ],
    family,
    replica: { generator_version: TRUNK_REPLICA_VERSION, seed: TRUNK_REPLICA_SEED },
    digests,
    requests: reqs,
    results,
  };
}

/** Writes a goldens file: the head entries a line each, then one request or result a line. */
export function writeTrunkGoldens(g: TrunkGoldens): string {
  const file = trunkGoldensFile(g.family);
  const list = (xs: unknown[]): string => `[\n${xs.map((x) => `    ${JSON.stringify(x)}`).join(',\n')}\n  ]`;
  const lines = (['about', 'family', 'replica', 'digests'] as const).map(
    (k) => `  ${JSON.stringify(k)}: ${JSON.stringify(g[k])}`,
  );
  lines.push(`  "requests": ${list(g.requests)}`);
  const results = TRUNK_KINDS.map(
    (t) => `    ${JSON.stringify(t)}: ${list(g.results[t]).replace(/\n {4}/g, '\n      ')}`,
  );
  lines.push(`  "results": {\n${results.join(',\n')}\n  }`);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `{\n${lines.join(',\n')}\n}\n`);
  return file;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const picked = process.argv.slice(2) as TrunkFamily[];
  for (const family of picked.length ? picked : TRUNK_FAMILIES) {
    if (!TRUNK_FAMILIES.includes(family)) throw new Error(`unknown family ${family}`);
    const started = Date.now();
    const file = writeTrunkGoldens(await makeTrunkGoldens(family));
    console.log(`${file} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
  }
}
