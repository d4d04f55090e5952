// The label-token contracts' goldens (test/families/label-tokens/<contract>.goldens.json) are what
// the independent reference writes: the generator still makes the stored requests, and the
// reference (tools/families/label-tokens/label_tokens_layout.py, written from docs/families/label-tokens.md),
// run live on a spread of them, gives the stored prefixes, rows, label ids and refusals exactly and
// the stored probabilities within 1e-5: the label logits come from an fp32 torch forward, and the
// goldens' CPU and the live run's may order its sums differently (SIMD width, BLAS blocking), so
// the two are two fp32 forwards of a 2-layer model over a few thousand tokens, held to the bound
// the evaluator tests give such a pair (label-tokens-evaluator.test.ts); the stored goldens and a
// live run on an AVX-512 VNNI EPYC differed by 1.3e-6. Plus what the files must hold whatever the engine does:
// the limits' cases, content as data (no caller text adds a control token), one label per option.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import { addedTokenStrings } from '../../tools/families/decider/goldens.js';
import { ensureDeciderReplica } from '../../tools/families/decider/replica.js';
import { labelTokenRequests } from '../../tools/families/label-tokens/cases.js';
import {
  contractFile,
  goldensFile,
  LABEL_CONTRACTS,
  labelReferenceResults,
  type LabelContract,
} from '../../tools/families/label-tokens/goldens.js';
import { readGoldens } from './golden-helpers.js';
import { PYTHON } from './replica-helpers.js';

interface Row {
  key: string;
  piece: number[];
  labels: number[];
}
interface Result {
  name: string;
  refused?: string;
  prefix?: number[];
  cut?: boolean;
  rows?: Row[];
  probabilities?: Record<string, number[]>;
}
interface LabelGoldens {
  about: string[];
  contract: string;
  temperature: number[];
  requests: Array<{ name: string; state: unknown; questions: Array<[string, { type: string; criteria?: unknown }]> }>;
  results: Result[];
}

const goldens = Object.fromEntries(
  LABEL_CONTRACTS.map((c) => [c, readGoldens<LabelGoldens>(goldensFile(c))]),
) as Record<LabelContract, LabelGoldens>;
const imports = (modules: string) =>
  existsSync(PYTHON) && spawnSync(PYTHON, ['-c', `import ${modules}`], { encoding: 'utf8' }).status === 0;
const hasTorch = imports('torch');
const hasJinja = imports('jinja2');
/** The live run needs torch (the forward), and jinja2 where the contract has a chat template. */
const live = (contract: LabelContract) =>
  hasTorch && (hasJinja || (contractFile(contract).contract as { chat?: unknown }).chat == null);
if (!hasTorch || !hasJinja)
  console.warn(
    `${PYTHON} lacks torch or jinja2: the live run of the label-tokens reference is skipped where it needs it`,
  );

let dir: string;
let added: Set<number>;
beforeAll(async () => {
  dir = await ensureDeciderReplica();
  const codec = await TextCodec.load(dir);
  added = new Set(addedTokenStrings(dir).map((s) => codec.tokenId(s)!));
}, 300_000);

/** Each answered request's limits: the refusal the contract's limits give. */
const REFUSALS: Record<LabelContract, Array<[string, string | undefined]>> = {
  generic: [
    ['choice 255 options', undefined],
    ['choice 256 options', 'options'],
    ['choice 27 options', undefined],
    ['score 10 levels', undefined],
    ['state past state_tokens (cut)', undefined],
  ],
  cua: [
    ['choice 26 options', undefined],
    ['choice 27 options', 'options'],
    ['noul, a type the contract lacks', 'type'],
    ['score, a type the contract lacks', 'type'],
    ['state past state_tokens and the context', 'context'],
  ],
  jevos: [
    ['choice, a type the contract lacks', 'type'],
    ['score, a type the contract lacks', 'type'],
    ['noul criteria object', undefined],
  ],
  winnow: [
    ['choice 64 options', undefined],
    ['choice 65 options', 'options'],
    ['state past state_tokens (cut)', undefined],
  ],
  tev: [
    ['choice 24 options', undefined],
    ['choice 25 options', 'options'],
    ['score 5 levels, the score table', undefined],
    ['score 6 levels, past the score table', 'levels'],
    ['noul, a type the contract lacks', 'type'],
  ],
};

describe.each(LABEL_CONTRACTS)('contract %s', (contract) => {
  const g = goldens[contract];
  const result = (name: string) => g.results.find((r) => r.name === name)!;

  it('holds at least 30 requests, the limits’ cases, and one result per request in order', () => {
    expect(g.contract).toBe(contract);
    expect(g.requests.length).toBeGreaterThanOrEqual(30);
    expect(g.results.map((r) => r.name)).toEqual(g.requests.map((r) => r.name));
    for (const [name, refused] of REFUSALS[contract]) expect(result(name)?.refused, name).toBe(refused);
  });

  it('one label per option, a readout per question that sums to 1, and cut only past state_tokens', () => {
    for (const [i, r] of g.results.entries()) {
      if (r.refused) continue;
      const questions = g.requests[i]!.questions;
      expect(r.rows!.map((row) => row.key)).toEqual(questions.map(([k]) => k));
      for (const [k, q] of questions) {
        const n =
          q.type === 'noul' ? 2 : Array.isArray(q.criteria) ? q.criteria.length : Object.keys(q.criteria!).length;
        expect(r.rows!.find((row) => row.key === k)!.labels).toHaveLength(n);
        expect(r.probabilities![k]!).toHaveLength(n);
        expect(r.probabilities![k]!.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
      }
      expect(r.cut, r.name).toBe(r.name.includes('(cut)'));
    }
  });

  it('content is data: an added token in every field adds no control token to a row', () => {
    const controls = (r: Result, row: Row) => [...r.prefix!, ...row.piece].filter((id) => added.has(id)).length;
    const plain = g.results.find((r) => r.rows && r.name.includes('several questions, the order sent'))!;
    const expected = controls(plain, plain.rows![0]!);
    const withTokens = g.results.filter((r) => r.name.startsWith('added token '));
    expect(withTokens).toHaveLength(addedTokenStrings(dir).length);
    for (const r of withTokens) for (const row of r.rows!) expect(controls(r, row), r.name).toBe(expected);
  });

  it.skipIf(!live(contract))(
    'the generator makes the stored requests, and the reference run live gives the stored results',
    async () => {
      expect(JSON.parse(JSON.stringify(labelTokenRequests(contract, dir)))).toEqual(g.requests);
      const picked = g.requests.filter(
        (r, i) => i % 9 === 0 || g.results[i]!.refused || /added token <\|im|numbers|\(cut\)/.test(r.name),
      );
      const fresh = await labelReferenceResults(dir, contract, picked as never);
      expect(fresh.length).toBe(picked.length);
      for (const f of fresh as Result[]) {
        const want = result(f.name);
        const { probabilities, ...rest } = f;
        const { probabilities: wantP, ...wantRest } = want;
        expect(rest, f.name).toEqual(wantRest);
        for (const [k, p] of Object.entries(wantP ?? {}))
          p.forEach((x, j) => expect(Math.abs(probabilities![k]![j]! - x), `${f.name} ${k}`).toBeLessThan(1e-5));
      }
    },
    120_000,
  );
});
