// An Arbiter folder served by the engine (families/arbiter/ behind families/evaluator.ts), against
// the independent references on every golden request (test/families/arbiter/goldens.json, made by
// tools/families/arbiter/arbiter_layout.py from the published layout):
// - the rows and last_pos the engine builds equal the reference's; the refusals are the same (a
//   BudgetError: 422, naming the limit: 16 choice slots, exactly 6 score levels, the row's length);
// - the answers built from the goldens' fake 24-slot scores (the question's slots, softmax / T,
//   the engine's one answer builder) equal the reference readout within 1e-5 (float64 both sides);
// - the replica's graph (fp32, causal, no attention mask) gives the numpy forward's 24 scores
//   (tools/families/kit/endpoint_forward.py, float64, each row unpadded) within 1e-4; the whole
//   evaluator's answers equal the reference readout of the graph's own raw scores within 1e-5 (the
//   issue's bound on answers), and the reference readout of the numpy scores within 1e-4;
// - content is data: no row holds an added-token id (special or not) that the template did not put
//   there, over every added token of the tokenizer in every field;
// - rows batched (right-padded with <pad> to a multiple of 64) give the scores of rows run alone.
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BudgetError } from '../../src/engine/errors.js';
import { answerQuestions } from '../../src/engine/execution/answers.js';
import { optionsBlock } from '../../src/engine/families/arbiter/layout.js';
import type { WholeRow } from '../../src/engine/families/causal/plan.js';
import { askedInOrder } from '../../src/engine/families/shared/question.js';
import { detectFamily } from '../../src/engine/families/detect.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import {
  addedTokenIds,
  addedTokens,
  ARBITER_REFERENCE,
  gemmaTokenizer,
  GOLDEN_CONFIG,
  goldenRequests,
  runReference,
} from '../../tools/families/arbiter/goldens.js';
import * as kit from '../../tools/families/kit/goldens-kit.js';
import { ensureArbiterReplica } from '../../tools/families/arbiter/replica.js';
import * as golden from './golden-helpers.js';
import { openCausal, wholeRowsOf } from './row-family.js';
import { graphIo, hasNumpy as numpyFor } from './replica-helpers.js';

const hasNumpy = numpyFor('the numpy forward pass of the Arbiter replica');

interface GoldenRequest extends golden.GoldenRequest {
  logits?: number[];
}
interface GoldenResult {
  name: string;
  ids?: number[];
  last_pos?: number;
  slots?: number[];
  refused?: { count: number; limit: number };
  readout?: golden.ReadoutNumbers;
}
const goldens = golden.readGoldens<golden.Goldens<GoldenRequest, GoldenResult>>(
  join(import.meta.dirname, 'arbiter', 'goldens.json'),
);
/** Rows the numpy forward runs: the accepted rows up to this many tokens (special-token strings, as text, are several tokens each). */
const FORWARD_TOKENS = 800;

let dir: string;
let family: Awaited<ReturnType<typeof openCausal>>;
let evaluator: Evaluator;
beforeAll(async () => {
  dir = ensureArbiterReplica();
  family = await openCausal('arbiter-fixed', dir);
  evaluator = await loadEvaluator({ modelDir: dir, threads: 1, engineThread: false });
}, 300_000);

function shortCases(): Array<{ g: GoldenRequest; ref: GoldenResult; row: WholeRow }> {
  const out = [];
  for (const [g, ref, request] of golden.engineCases(goldens))
    if (!ref.refused && ref.ids!.length <= FORWARD_TOKENS)
      out.push({ g, ref, row: wholeRowsOf(family.plan(request))[0]! });
  return out;
}

function numpyForward(rows: GoldenResult[]): number[][] {
  const input = JSON.stringify({ rows: rows.map((r) => ({ ids: r.ids, last_pos: r.last_pos })) });
  return (JSON.parse(golden.python([golden.reference('endpoint_forward.py'), dir], input)) as { outputs: number[][] })
    .outputs;
}

/** The reference readout of each row's 24 scores: [type, scores, slots] per row, T = 1. */
function referenceReadouts(rows: Array<[string, number[], number[]]>): golden.ReadoutNumbers[] {
  const script = `import json,sys; sys.path.insert(0, ${JSON.stringify(golden.referenceDir('arbiter_layout'))}); from arbiter_layout import readout; j=json.load(sys.stdin); print(json.dumps([readout(t, s, k, 1.0) for t, s, k in j]))`;
  return JSON.parse(golden.python(['-c', script], JSON.stringify(rows))) as golden.ReadoutNumbers[];
}

/** How many times a string stands in a request's texts (its state and question, as sent). */
function occurrences(g: golden.GoldenRequest, text: string): number {
  return JSON.stringify([g.state, g.question]).split(text).length - 1;
}

describe('an Arbiter folder through the engine, on every golden request', () => {
  it('is detected as arbiter-fixed from decision.json (layout arbiter-fixed-v1)', () => {
    expect(detectFamily(dir)).toBe('arbiter-fixed');
  });

  it('builds the reference rows and last_pos, and refuses what the reference refuses, naming the limit', () => {
    expect(goldens.requests.length).toBeGreaterThanOrEqual(100);
    let refused = 0;
    for (const [g, ref, request] of golden.engineCases(goldens)) {
      if (ref.refused) {
        const thrown = golden.thrownBy(() => family.plan(request));
        expect(thrown, g.name).toBeInstanceOf(BudgetError);
        const e = thrown as BudgetError;
        expect(e.limit, g.name).toBe(ref.refused.limit);
        if (e.atLeast) expect(e.count, g.name).toBeLessThanOrEqual(ref.refused.count);
        else expect(e.count, g.name).toBe(ref.refused.count);
        expect(e.message, g.name).toMatch(new RegExp(`\\b${ref.refused.limit}\\b`));
        golden.expectCrossesAsBudgetError(thrown);
        refused++;
        continue;
      }
      const plan = family.plan(request);
      expect(plan.rows, g.name).toHaveLength(1);
      const row = wholeRowsOf(plan)[0]!;
      // The head's slots the readout reads: the layout's, by the question.
      const { slots } = optionsBlock(askedInOrder(request)[0]!.layout);
      expect({ ids: row.ids, last_pos: row.at.last_pos, slots }, g.name).toEqual({
        ids: ref.ids,
        last_pos: ref.last_pos,
        slots: ref.slots,
      });
    }
    expect(refused).toBeGreaterThanOrEqual(10);
  });

  it('keeps every added token of the tokenizer, in every field, as data: no row holds an added-token id the template did not put there', () => {
    const tokenizer = gemmaTokenizer();
    const added = new Set(addedTokenIds(tokenizer));
    const addedIn = (ids: number[]): number[] => ids.filter((x) => added.has(x));
    // the template's own added tokens: those of a plain request's row (the contract has none)
    const plain = goldens.requests.findIndex((r) => r.name === 'noul plain');
    const template = addedIn(wholeRowsOf(family.plan(golden.engineRequest(goldens.requests[plain]!)))[0]!.ids);
    expect(template).toEqual([]);
    expect(added.size).toBeGreaterThanOrEqual(10);
    for (const { content, special } of addedTokens(tokenizer)) {
      const name = `${special ? 'special' : 'added'} token ${content} in every field`;
      const i = goldens.requests.findIndex((r) => r.name === name);
      expect(i, content).toBeGreaterThanOrEqual(0);
      const ids = wholeRowsOf(family.plan(golden.engineRequest(goldens.requests[i]!)))[0]!.ids;
      expect(addedIn(ids), content).toEqual(template);
      // the string is still there, in every field, as ordinary tokens
      expect(tokenizer.decode(ids, { skip_special_tokens: false }).split(content).length - 1, content).toBe(
        occurrences(goldens.requests[i]!, content),
      );
    }
    for (const [g, ref, request] of golden.engineCases(goldens))
      if (!ref.refused) expect(addedIn(wholeRowsOf(family.plan(request))[0]!.ids), g.name).toEqual(template);
  });

  it("the reference refuses upstream's tokenization (added tokens matched in caller text): it would forge control tokens", () => {
    const g = goldens.requests.find((r) => r.name === 'special token <start_of_turn> in every field')!;
    const upstream = (segments: string[]) => kit.tokenIds(gemmaTokenizer(), segments);
    const job = { config: GOLDEN_CONFIG, requests: [g], special_ids: addedTokenIds(gemmaTokenizer()) };
    expect(() => kit.runLayoutReference(ARBITER_REFERENCE, job, upstream)).toThrow(/not tokenized as data/);
  });

  it("answers the goldens' 24-slot scores as the reference readout within 1e-5", () => {
    let worst = 0;
    let n = 0;
    for (const [g, ref, request] of golden.engineCases(goldens)) {
      if (ref.refused) continue;
      const plan = family.plan(request);
      const q = plan.questions[0]!;
      const probs = family.probabilities(q, [{ logits: g.logits! }]);
      const answer = answerQuestions(plan.questions, [probs.map(Math.log)])[q.key]!;
      const got = golden.answerNumbers(answer, g);
      const want = golden.readoutNumbers(ref.readout!, g.question.type);
      expect(got, g.name).toHaveLength(want.length);
      got.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - want[j]!))));
      n++;
    }
    console.log(`arbiter readout: ${n} answers, max |Δ| ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-5);
  });

  it('loads the graph as published: input_ids and last_pos only (no attention mask) → scores[rows, 24], external data', () => {
    const io = graphIo(join(dir, 'model.onnx'));
    expect(io.inputs).toEqual(['input_ids:7[rows,seq]', 'last_pos:7[rows]']);
    expect(io.outputs).toEqual(['scores:1[rows,24]']);
    expect(io.external).toEqual(['model.onnx_data']);
  });

  it('17 options and 5 levels are 422s through the evaluator, naming the limit', async () => {
    const criteria = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`o${i}`, null]));
    const choice = evaluator.evaluate({ state: 's', questions: { q: { type: 'choice', criteria } } } as never);
    await expect(choice).rejects.toBeInstanceOf(BudgetError);
    await expect(choice).rejects.toThrow(/16 choice slots/);
    const levels = { type: 'score', criteria: ['a', 'b', 'c', 'd', 'e'] };
    const score = evaluator.evaluate({ state: 's', questions: { q: levels } } as never);
    await expect(score).rejects.toThrow(/exactly 6 levels/);
  });
});

describe.skipIf(!hasNumpy)('the replica against the numpy forward (fp32 graph, float64 reference)', () => {
  it('gives the numpy scores within 1e-4 on every short golden row, batched as alone', async () => {
    const cases = shortCases();
    expect(cases.length).toBeGreaterThanOrEqual(70);
    const want = numpyForward(cases.map((c) => c.ref));
    const batched = await family.run(cases.map((c) => c.row));
    let worst = 0;
    let worstAlone = 0;
    for (const [j, c] of cases.entries()) {
      const got = batched[j]!.logits;
      expect(got, c.g.name).toHaveLength(24);
      got.forEach((x, k) => (worst = Math.max(worst, Math.abs(x - want[j]![k]!))));
      if (j % 4 === 0) {
        const [alone] = await family.run([c.row]);
        alone!.logits.forEach((x, k) => (worstAlone = Math.max(worstAlone, Math.abs(x - got[k]!))));
      }
    }
    console.log(
      `arbiter replica: ${cases.length} rows, max |Δ score| vs numpy ${worst.toExponential(2)}, batched vs alone ${worstAlone.toExponential(2)}`,
    );
    expect(worst).toBeLessThan(1e-4);
    expect(worstAlone).toBeLessThan(1e-5);
  }, 300_000);

  it("answers through the evaluator as the reference readout of the graph's raw scores (1e-5), and of the numpy scores (1e-4)", async () => {
    const cases = shortCases().filter((_, i) => i % 3 === 0);
    const want = numpyForward(cases.map((c) => c.ref));
    // the graph's own raw scores, each row run alone as the evaluator runs a one-question request
    const raw: number[][] = [];
    for (const c of cases) raw.push((await family.run([c.row]))[0]!.logits);
    const ofRaw = referenceReadouts(cases.map((c, j) => [c.g.question.type, raw[j]!, c.ref.slots!]));
    const ofNumpy = referenceReadouts(cases.map((c, j) => [c.g.question.type, want[j]!, c.ref.slots!]));
    let worstRaw = 0;
    let worstNumpy = 0;
    for (const [j, c] of cases.entries()) {
      const result = await evaluator.evaluate(golden.engineRequest(c.g));
      const got = golden.answerNumbers(result.answers.q!, c.g);
      const r = golden.readoutNumbers(ofRaw[j]!, c.g.question.type);
      const n = golden.readoutNumbers(ofNumpy[j]!, c.g.question.type);
      expect(got, c.g.name).toHaveLength(r.length);
      got.forEach((x, k) => {
        worstRaw = Math.max(worstRaw, Math.abs(x - r[k]!));
        worstNumpy = Math.max(worstNumpy, Math.abs(x - n[k]!));
      });
    }
    console.log(
      `arbiter evaluator: ${cases.length} requests, max |Δ answer| vs the readout of the raw scores ${worstRaw.toExponential(2)}, of the numpy scores ${worstNumpy.toExponential(2)}`,
    );
    // the bound on answers: only float64 rounding separates the engine's readout from the reference's
    expect(worstRaw).toBeLessThan(1e-5);
    // through the fp32 graph: scores within 1e-4 (T = 1) move a softmax by at most 1e-4
    expect(worstNumpy).toBeLessThan(1e-4);
  }, 300_000);
});

golden.describeLiveReference('Arbiter', goldens, () => {
  const tokenizer = gemmaTokenizer();
  return { requests: () => goldenRequests(tokenizer), run: (picked) => runReference(picked as never, tokenizer) };
});

describe('closing', () => {
  it('releases the sessions', async () => {
    await family.close();
    await evaluator.close();
  });
});
