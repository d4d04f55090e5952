// A Decision endpoint folder served by the engine (families/decision/ behind families/evaluator.ts),
// against the independent references on every golden request (test/families/decision/goldens.json,
// made by tools/families/decision/decision_layout.py from the published prompt contract):
// - the rows, query_pos and cand_pos the engine builds equal the reference's; the refusals are the
//   same (a BudgetError: 422, naming the limit);
// - the answers built from the goldens' fake logits (softmax(logits / T) with the folder's
//   temperature, the engine's one answer builder) equal the reference readout within 1e-5
//   (float64 on both sides: only rounding differs);
// - the replica's graph (BF16 weights cast to fp32, causal, no attention mask) gives the numpy
//   forward's logits (tools/families/kit/endpoint_forward.py, float64, every row at its own length,
//   unpadded) within 1e-4: fp32 accumulation over 2 layers of width 32 and a head of width 16 stays
//   near 1e-5 on logits of a few units; the answers of the whole evaluator equal the reference
//   readout of the graph's own raw logits within 1e-5 (the bound on answers), and the
//   readout of the numpy logits within 1e-4 / T;
// - content is data: no row holds an added-token id (special or not) that the template did not put
//   there, over every added token of the tokenizer in every field;
// - rows batched (right-padded to the longest, a multiple of 64) give the logits of rows run alone.
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BudgetError } from '../../src/engine/errors.js';
import { answerQuestions } from '../../src/engine/execution/answers.js';
import { detectFamily } from '../../src/engine/families/detect.js';
import type { WholeRow } from '../../src/engine/families/causal/plan.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import {
  addedTokenIds,
  addedTokens,
  DECISION_REFERENCE,
  GOLDEN_CONFIG,
  goldenRequests,
  qwenTokenizer,
  runReference,
} from '../../tools/families/decision/goldens.js';
import * as kit from '../../tools/families/kit/goldens-kit.js';
import { DECISION_TEMPERATURE, ensureDecisionReplica } from '../../tools/families/decision/replica.js';
import * as golden from './golden-helpers.js';
import { graphIo, hasNumpy as numpyFor } from './replica-helpers.js';
import { openCausal, wholeRowsOf } from './row-family.js';

const hasNumpy = numpyFor('the numpy forward pass of the Decision replica');

interface GoldenRequest extends golden.GoldenRequest {
  logits?: number[];
}
interface GoldenResult {
  name: string;
  ids?: number[];
  cand_pos?: number[];
  query_pos?: number;
  refused?: { count: number; limit: number };
  readout?: golden.ReadoutNumbers;
}
const goldens = golden.readGoldens<golden.Goldens<GoldenRequest, GoldenResult>>(
  join(import.meta.dirname, 'decision', 'goldens.json'),
);
/** Rows the numpy forward runs (its float64 attention is quadratic): the accepted rows up to this many tokens. */
const FORWARD_TOKENS = 600;

let dir: string;
let family: Awaited<ReturnType<typeof openCausal>>;
let evaluator: Evaluator;
beforeAll(async () => {
  dir = ensureDecisionReplica();
  family = await openCausal('decision-endpoint', dir);
  evaluator = await loadEvaluator({ modelDir: dir, threads: 1, engineThread: false });
}, 600_000);

/** The accepted golden requests with short rows, the row the engine plans, and the reference's. */
function shortCases(): Array<{ g: GoldenRequest; ref: GoldenResult; row: WholeRow }> {
  const out = [];
  for (const [g, ref, request] of golden.engineCases(goldens))
    if (!ref.refused && ref.ids!.length <= FORWARD_TOKENS)
      out.push({ g, ref, row: wholeRowsOf(family.plan(request))[0]! });
  return out;
}

function numpyForward(rows: GoldenResult[]): number[][] {
  const input = JSON.stringify({
    rows: rows.map((r) => ({ ids: r.ids, query_pos: r.query_pos, cand_pos: r.cand_pos })),
  });
  const out = golden.python([golden.reference('endpoint_forward.py'), dir], input);
  return (JSON.parse(out) as { outputs: number[][] }).outputs;
}

/** How many times a string stands in a request's texts (its state and question, as sent). */
function occurrences(g: golden.GoldenRequest, text: string): number {
  return JSON.stringify([g.state, g.question]).split(text).length - 1;
}

describe('a Decision endpoint folder through the engine, on every golden request', () => {
  it('is detected as decision-endpoint from decision.json (layout decision-endpoint-v1)', () => {
    expect(detectFamily(dir)).toBe('decision-endpoint');
  });

  it('builds the reference rows and positions, and refuses what the reference refuses, naming the limit', () => {
    expect(goldens.requests.length).toBeGreaterThanOrEqual(100);
    let refused = 0;
    for (const [g, ref, request] of golden.engineCases(goldens)) {
      if (ref.refused) {
        const thrown = golden.thrownBy(() => family.plan(request));
        expect(thrown, g.name).toBeInstanceOf(BudgetError);
        const e = thrown as BudgetError;
        expect(e.limit, g.name).toBe(ref.refused.limit);
        // a state far past the row is refused before it is tokenized whole: a lower bound
        if (e.atLeast) expect(e.count, g.name).toBeLessThanOrEqual(ref.refused.count);
        else expect(e.count, g.name).toBe(ref.refused.count);
        // the message names the limit (noul: the two keys the head reads)
        expect(e.message, g.name).toMatch(
          ref.refused.limit > 0 ? new RegExp(`\\b${ref.refused.limit}\\b`) : /"true" and "false"/,
        );
        golden.expectCrossesAsBudgetError(thrown);
        refused++;
        continue;
      }
      const plan = family.plan(request);
      expect(plan.rows, g.name).toHaveLength(1);
      const row = wholeRowsOf(plan)[0]!;
      expect({ ids: row.ids, cand_pos: row.at.cand_pos, query_pos: row.at.query_pos }, g.name).toEqual({
        ids: ref.ids,
        cand_pos: ref.cand_pos,
        query_pos: ref.query_pos,
      });
      expect(family.usage(plan).usage.input_tokens).toBe(ref.ids!.length);
    }
    expect(refused).toBeGreaterThanOrEqual(10);
  });

  it('keeps every added token of the tokenizer, in every field, as data: no row holds an added-token id the template did not put there', () => {
    const tokenizer = qwenTokenizer();
    const added = new Set(addedTokenIds(tokenizer));
    const addedIn = (ids: number[]): number[] => ids.filter((x) => added.has(x));
    // the template's own added tokens: those of a plain request's row (the contract has none)
    const plain = goldens.requests.findIndex((r) => r.name === 'noul plain');
    const template = addedIn(wholeRowsOf(family.plan(golden.engineRequest(goldens.requests[plain]!)))[0]!.ids);
    expect(template).toEqual([]);
    expect(added.size).toBeGreaterThanOrEqual(20);
    for (const { content, special } of addedTokens(tokenizer)) {
      const i = goldens.requests.findIndex(
        (r) => r.name === `${special ? 'special' : 'added'} token ${content} in every field`,
      );
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
    const g = goldens.requests.find((r) => r.name === 'special token <|im_start|> in every field')!;
    const upstream = (segments: string[]) => kit.tokenIds(qwenTokenizer(), segments);
    const job = { config: GOLDEN_CONFIG, requests: [g], special_ids: addedTokenIds(qwenTokenizer()) };
    expect(() => kit.runLayoutReference(DECISION_REFERENCE, job, upstream)).toThrow(/not tokenized as data/);
  });

  it("answers the goldens' logits as the reference readout (T from calibration.json) within 1e-5", () => {
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
    console.log(`decision readout: ${n} answers, max |Δ| ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-5);
  });

  it('refuses a state of megabytes from its first tokens (a lower bound), before tokenizing it whole', () => {
    const state = 'a '.repeat(700_000);
    const thrown = golden.thrownBy(() =>
      family.plan({ state, questions: { q: { type: 'noul', instructions: 'late?' } } } as never),
    );
    expect(thrown).toBeInstanceOf(BudgetError);
    // atLeast: the count is a lower bound, from the state's first tokens (boundedTokens)
    expect((thrown as BudgetError).atLeast).toBe(true);
    expect((thrown as BudgetError).limit).toBe(16_384);
  });

  it('loads the graph as published: input_ids and positions only (no attention mask), BF16 weights cast to fp32, external data', () => {
    const io = graphIo(join(dir, 'model.onnx'));
    expect(io.inputs).toEqual(['input_ids:7[rows,seq]', 'query_pos:7[rows]', 'cand_pos:7[rows,k]']);
    expect(io.outputs).toEqual(['logits:1[rows,k]']);
    expect(io.external).toEqual(['model.onnx_data']);
    expect(io.ops.has('Cast')).toBe(true);
  });

  it("reads choice_null_description 'key' from decision.json: a null description becomes the option's name", async () => {
    const copy = mkdtempSync(join(tmpdir(), 'assay-decision-key-'));
    try {
      for (const f of readdirSync(dir)) if (f !== 'decision.json') symlinkSync(join(dir, f), join(copy, f));
      const decision = JSON.parse(readFileSync(join(dir, 'decision.json'), 'utf8')) as Record<string, unknown>;
      writeFileSync(join(copy, 'decision.json'), JSON.stringify({ ...decision, choice_null_description: 'key' }));
      const nox = await openCausal('decision-endpoint', copy);
      const ask = (criteria: Record<string, string | null>) =>
        ({ state: 's', questions: { q: { type: 'choice', instructions: 'which?', criteria } } }) as never;
      const keyed = wholeRowsOf(nox.plan(ask({ card: null, cash: 'notes' })))[0]!.ids;
      expect(keyed).toEqual(wholeRowsOf(family.plan(ask({ card: 'card', cash: 'notes' })))[0]!.ids);
      expect(keyed).not.toEqual(wholeRowsOf(family.plan(ask({ card: null, cash: 'notes' })))[0]!.ids);
      await nox.close();
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it('a choice past 255 options is a 422 through the evaluator, naming the limit', async () => {
    const criteria = Object.fromEntries(Array.from({ length: 256 }, (_, i) => [`o${i}`, null]));
    const run = evaluator.evaluate({ state: 's', questions: { q: { type: 'choice', criteria } } } as never);
    await expect(run).rejects.toBeInstanceOf(BudgetError);
    await expect(run).rejects.toThrow(/255/);
  });
});

describe.skipIf(!hasNumpy)('the replica against the numpy forward (fp32 graph, float64 reference)', () => {
  it('gives the numpy logits within 1e-4 on every short golden row, batched as alone', async () => {
    const cases = shortCases();
    expect(cases.length).toBeGreaterThanOrEqual(80);
    const want = numpyForward(cases.map((c) => c.ref));
    const batched = await family.run(cases.map((c) => c.row));
    let worst = 0;
    let worstAlone = 0;
    for (const [j, c] of cases.entries()) {
      const got = batched[j]!.logits;
      expect(got, c.g.name).toHaveLength(want[j]!.length);
      got.forEach((x, k) => (worst = Math.max(worst, Math.abs(x - want[j]![k]!))));
      if (j % 4 === 0) {
        const [alone] = await family.run([c.row]);
        alone!.logits.forEach((x, k) => (worstAlone = Math.max(worstAlone, Math.abs(x - got[k]!))));
      }
    }
    console.log(
      `decision replica: ${cases.length} rows, max |Δ logit| vs numpy ${worst.toExponential(2)}, batched vs alone ${worstAlone.toExponential(2)}`,
    );
    expect(worst).toBeLessThan(1e-4);
    expect(worstAlone).toBeLessThan(1e-5);
  }, 300_000);

  it("answers through the evaluator as the reference readout of the graph's raw logits (1e-5), and of the numpy logits (1e-4 / T)", async () => {
    const cases = shortCases().filter((_, i) => i % 3 === 0);
    const want = numpyForward(cases.map((c) => c.ref));
    // the graph's own raw logits, each row run alone as the evaluator runs a one-question request
    const raw: number[][] = [];
    for (const c of cases) raw.push((await family.run([c.row]))[0]!.logits);
    const readAll = (logits: number[][]): golden.ReadoutNumbers[] =>
      JSON.parse(
        golden.python(
          [
            '-c',
            `import json,sys; sys.path.insert(0, ${JSON.stringify(golden.referenceDir('decision_layout'))}); from decision_layout import readout; j=json.load(sys.stdin); print(json.dumps([readout(t, l, j["t"]) for t, l in j["rows"]]))`,
          ],
          JSON.stringify({ t: DECISION_TEMPERATURE, rows: cases.map((c, j) => [c.g.question.type, logits[j]]) }),
        ),
      ) as golden.ReadoutNumbers[];
    const ofRaw = readAll(raw);
    const ofNumpy = readAll(want);
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
      expect(result.usage.input_tokens).toBe(c.ref.ids!.length);
    }
    console.log(
      `decision evaluator: ${cases.length} requests, max |Δ answer| vs the readout of the raw logits ${worstRaw.toExponential(2)}, of the numpy logits ${worstNumpy.toExponential(2)}`,
    );
    // the bound on answers: only float64 rounding separates the engine's readout from the reference's
    expect(worstRaw).toBeLessThan(1e-5);
    // through the fp32 graph: logits within 1e-4 move a softmax of logits / T by at most 1e-4 / T
    expect(worstNumpy).toBeLessThan(1e-4 / DECISION_TEMPERATURE);
  }, 300_000);
});

golden.describeLiveReference('Decision endpoint', goldens, () => {
  const tokenizer = qwenTokenizer();
  return { requests: () => goldenRequests(tokenizer), run: (picked) => runReference(picked as never, tokenizer) };
});

describe('closing', () => {
  it('releases the sessions', async () => {
    await family.close();
    await evaluator.close();
  });
});
