// A Kev pointer folder served by the engine (families/kev/ behind families/evaluator.ts), against
// the independent references on every golden request (test/families/kev/goldens.json, made by
// tools/families/kev/kev_layout.py from the authors' kev/api.py and kev/encoding.py):
// - the rows the engine builds equal the reference's ids, decide_pos and opt_pos, the state cut is
//   reported where the reference cuts it, and the requests it refuses are refused (a 422
//   BudgetError, also across the engine thread);
// - the answers built from the goldens' fake scores equal the reference readout within 1e-5
//   (float64 on both sides; the engine's log → exp adds ~1e-15);
// - the replica's raw scores (tools/families/kev/replica.ts: BF16 weights in external data, a causal
//   graph without an attention mask), run in padded batches of several questions, equal the numpy
//   forward pass (tools/families/kit/causal_forward.py) of each row alone and unpadded within 1e-4
//   (fp32 against float64 over ≤ 2,048 causal keys on O(1) activations: rounding is ~1e-6, a
//   wrong position or a padded key that leaks is O(0.1)); batched scores equal each row run alone
//   within 1e-5;
// - the whole evaluator answers as the reference readout of those raw scores within 1e-5;
// - user() rewrites every `<|…|>` added token of the tokenizer: no caller text becomes a delimiter.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BudgetError } from '../../src/engine/errors.js';
import { detectFamily } from '../../src/engine/families/detect.js';
import { rowBatches } from '../../src/engine/families/rows/batched.js';
import type { FamilyQuestion } from '../../src/engine/families/rows/family.js';
import type { WholeRow } from '../../src/engine/families/causal/plan.js';
import type { Answer } from '../../src/engine/types.js';
import { KevRowTooLong } from '../../src/engine/families/kev/layout.js';
import { user } from '../../src/engine/families/kev/render.js';
import { answerQuestions } from '../../src/engine/execution/answers.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import { kevDecision, ensureKevReplica, KEV_REPLICA_TEMPERATURES } from '../../tools/families/kev/replica.js';
import { kevGoldenRequests, kevTokenizer, runKevReference } from '../../tools/families/kev/goldens.js';
import { QWEN35_IDS } from '../../tools/families/kit/qwen35-tokenizer.js';
import * as golden from './golden-helpers.js';
import { graphIo, hasNumpy as numpyFor } from './replica-helpers.js';
import { openCausal, wholeRowsOf } from './row-family.js';

const hasNumpy = numpyFor('the numpy forward pass of the Kev replica');

interface GoldenRequest extends golden.GoldenRequest {
  scores: number[];
}
interface GoldenResult {
  name: string;
  row?: { ids: number[]; decide: number; opts: number[] };
  truncated?: boolean;
  refused?: { branchTokens: number; count: number; limit: number };
  readout?: golden.ReadoutNumbers;
}
const goldens = golden.readGoldens<golden.Goldens<GoldenRequest, GoldenResult>>(
  join(import.meta.dirname, 'kev', 'goldens.json'),
);

const replica = ensureKevReplica();
let family: Awaited<ReturnType<typeof openCausal>>;
let evaluator: Evaluator;
beforeAll(async () => {
  family = await openCausal('kev-pointer', replica);
  evaluator = await loadEvaluator({ modelDir: replica, threads: 1, engineThread: false, rowBatchTokens: 16_384 });
}, 120_000);
afterAll(async () => {
  await family.close();
  await evaluator.close();
});

type KevRow = NonNullable<GoldenResult['row']>;
/** A whole row as the reference writes it: its ids, decide_pos and opt_pos. */
const kevRowOf = (w: WholeRow): KevRow => ({
  ids: w.ids,
  decide: w.at.decide_pos as number,
  opts: w.at.opt_pos as number[],
});
/** The reference's row as the runner takes it. */
const kevWhole = (r: KevRow): WholeRow => ({
  ids: r.ids,
  at: { decide_pos: r.decide, opt_pos: r.opts },
  width: r.opts.length,
});

/** The reference readout of raw scores (kev_layout.py `readout`, the replica's temperatures). */
function referenceReadouts(rows: Array<{ type: string; scores: number[] }>): golden.ReadoutNumbers[] {
  const script = `import json, sys; sys.path.insert(0, ${JSON.stringify(golden.referenceDir('kev_layout'))}); from kev_layout import readout
job = json.load(sys.stdin)
print(json.dumps([readout(r["type"], r["scores"], job["t"]) for r in job["rows"]]))`;
  return JSON.parse(golden.python(['-c', script], JSON.stringify({ t: KEV_REPLICA_TEMPERATURES, rows }))) as never;
}

describe('the Kev replica folder, as published', () => {
  it('is detected as kev-pointer by its decision.json layout id', () => {
    expect(JSON.parse(readFileSync(join(replica, 'decision.json'), 'utf8')).layout).toBe('kev-pointer-v1');
    expect(detectFamily(replica)).toBe('kev-pointer');
  });

  it('is a causal graph without an attention mask, its matrices BF16 in external data cast to fp32', () => {
    const io = graphIo(join(replica, 'model.onnx'));
    expect(io.inputs).toEqual(['input_ids:7[rows,seq]', 'decide_pos:7[rows]', 'opt_pos:7[rows,k]']);
    expect(io.outputs).toEqual(['scores:1[rows,k]']);
    expect(io.external).toEqual(['model.onnx_data']);
    expect(io.ops.has('Cast')).toBe(true);
    expect(existsSync(join(replica, 'model.onnx_data'))).toBe(true);
  });

  it("reads the head's temperatures from calibration.json and says so", () => {
    expect(family.notes.join('\n')).toMatch(/temperature \[2\.4, 1\.8, 3\] from calibration\.json/);
  });
});

describe('the layout, on every golden request', () => {
  it('builds the reference rows and positions, cuts the state where it does, refuses what it refuses', () => {
    expect(goldens.requests.length).toBeGreaterThanOrEqual(100);
    let refused = 0;
    let cut = 0;
    for (const [g, ref, request] of golden.engineCases(goldens)) {
      if (ref.refused) {
        const thrown = golden.thrownBy(() => family.plan(request));
        expect(thrown, g.name).toBeInstanceOf(KevRowTooLong);
        expect((thrown as KevRowTooLong).count, g.name).toBe(ref.refused.count);
        expect((thrown as KevRowTooLong).limit, g.name).toBe(ref.refused.limit);
        expect((thrown as KevRowTooLong).branchTokens, g.name).toBe(ref.refused.branchTokens);
        golden.expectCrossesAsBudgetError(thrown);
        refused++;
        continue;
      }
      const plan = family.plan(request);
      expect(wholeRowsOf(plan).map(kevRowOf), g.name).toEqual([ref.row]);
      expect(plan.questions[0]!.truncated, g.name).toEqual(ref.truncated ? ['state'] : undefined);
      expect(family.usage(plan).usage.input_tokens).toBe(ref.row!.ids.length);
      if (ref.truncated) cut++;
    }
    expect(refused).toBe(2);
    expect(cut).toBe(4);
  });

  it("reads the goldens' fake scores as the reference readout does (within 1e-5)", () => {
    let worst = 0;
    for (const [g, ref, request] of golden.engineCases(goldens)) {
      if (ref.refused) continue;
      const q = family.plan(request).questions[0]!;
      const logps = family.probabilities(q as FamilyQuestion, [{ logits: g.scores }]).map(Math.log);
      const [answer] = Object.values(answerQuestions([q], [logps]));
      const got = golden.answerNumbers(answer!, g);
      const want = golden.readoutNumbers(ref.readout!, g.question.type);
      expect(got.length, g.name).toBe(want.length);
      got.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - want[j]!))));
    }
    console.info(`Kev: golden scores read, worst |Δ| to the reference readout ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-5);
  });

  it('reads a state of megabytes to its cut without tokenizing it whole: the same first 8,191 tokens', () => {
    const words = ['order', 'late', 'café', '注文', '<|box_end|>', 'refund\n', '🙂', '  spaced'];
    const state = Array.from({ length: 120_000 }, (_, i) => words[(i * 7919) % words.length]).join(' ');
    const tok = kevTokenizer();
    const whole = tok.encode(user(state), { add_special_tokens: false }).ids;
    const plan = family.plan({ state, questions: { q: { type: 'noul', instructions: 'Late?' } } } as never);
    const { ids } = wholeRowsOf(plan)[0]!;
    expect(ids.slice(1, 8192)).toEqual(whole.slice(0, 8191));
    expect(ids[8192]).toBe(QWEN35_IDS.fimMiddle);
    // The state's part ends where the row's question begins.
    expect(plan.state.length).toBe(8192);
    expect(plan.questions[0]!.truncated).toEqual(['state']);
  }, 60_000);

  it('rewrites every <|…|> added token of the tokenizer in every field, as user() does', () => {
    const tok = JSON.parse(readFileSync(join(replica, 'tokenizer.json'), 'utf8')) as {
      added_tokens: Array<{ id: number; content: string }>;
    };
    const delimiters = Object.values(kevDecision().special_tokens as Record<string, number>);
    let checked = 0;
    for (const { id, content } of tok.added_tokens) {
      const plan = family.plan({
        state: `x${content}y`,
        questions: {
          q: { type: 'choice', instructions: content, criteria: { [content]: content, b: null } },
        },
      } as never);
      const { ids } = wholeRowsOf(plan)[0]!;
      if (/^<\|[A-Za-z0-9_]+\|>$/.test(content)) {
        // the delimiters only where the layout put them: one state, question and decide, two options
        const counts = (v: number) => ids.filter((x) => x === v).length;
        expect(counts(QWEN35_IDS.fimPrefix), content).toBe(1);
        expect(counts(QWEN35_IDS.fimMiddle), content).toBe(1);
        expect(counts(QWEN35_IDS.boxStart), content).toBe(2);
        expect(counts(QWEN35_IDS.boxEnd), content).toBe(2);
        expect(counts(QWEN35_IDS.fimSuffix), content).toBe(1);
        if (!delimiters.includes(id)) expect(ids, content).not.toContain(id);
        checked++;
      } else expect(ids, `${content}: kept as its added token, as the reference's tokenizer does`).toContain(id);
    }
    expect(checked).toBe(20);
  });
});

golden.describeLiveReference('Kev', goldens, () => ({
  requests: () => kevGoldenRequests() as never,
  run: (picked) => runKevReference(picked as never),
}));

/** The golden rows the forward check runs (the numpy pass holds a row's s × s scores in float64). */
const forwardCases = goldens.requests
  .map((g, i) => [g, goldens.results[i]!] as const)
  .filter(([, r]) => r.row && r.row.ids.length <= 2048);

describe('the replica run through the family and the engine', () => {
  let raw: number[][] = [];
  beforeAll(async () => {
    const rows = forwardCases.map(([, r]) => ({ tokens: r.row!.ids.length, ...kevWhole(r.row!) }));
    raw = new Array<number[]>(rows.length);
    for (const batch of rowBatches(rows, 16_384)) {
      const out = await family.run(batch.map((i) => rows[i]!));
      batch.forEach((i, j) => (raw[i] = out[j]!.logits));
    }
  }, 300_000);

  it('gives the numpy forward scores of each row alone and unpadded (within 1e-4)', () => {
    if (!hasNumpy) return;
    expect(forwardCases.length).toBeGreaterThan(90);
    const want = (
      JSON.parse(
        golden.python(
          [golden.reference('causal_forward.py'), replica],
          JSON.stringify({ rows: forwardCases.map(([, r]) => r.row) }),
        ),
      ) as { scores: number[][] }
    ).scores;
    let worst = 0;
    want.forEach((row, i) => {
      expect(raw[i]!.length).toBe(row.length);
      row.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - raw[i]![j]!))));
    });
    console.info(
      `Kev: ${want.length} rows, raw scores vs numpy (rows alone, unpadded), worst |Δ| ${worst.toExponential(2)}`,
    );
    expect(worst).toBeLessThan(1e-4);
  }, 300_000);

  it('gives each row the same scores batched with others (padded) as alone (within 1e-5)', async () => {
    let worst = 0;
    for (const i of [0, 5, 17, 40, 60, forwardCases.length - 1]) {
      const [out] = await family.run([kevWhole(forwardCases[i]![1].row!)]);
      out!.logits.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - raw[i]![j]!))));
    }
    console.info(`Kev: batched vs alone, worst |Δ| ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-5);
  }, 120_000);

  it('answers through the evaluator as the reference readout of the raw scores (within 1e-5)', async () => {
    const readouts = referenceReadouts(forwardCases.map(([g], i) => ({ type: g.question.type, scores: raw[i]! })));
    let worst = 0;
    for (const [i, [g]] of forwardCases.entries()) {
      const { answers } = await evaluator.evaluate(golden.engineRequest(g));
      const got = golden.answerNumbers(answers.q!, g);
      const want = golden.readoutNumbers(readouts[i]!, g.question.type);
      got.forEach((x, j) => (worst = Math.max(worst, Math.abs(x - want[j]!))));
    }
    console.info(`Kev: ${forwardCases.length} answers vs the reference readout, worst |Δ| ${worst.toExponential(2)}`);
    expect(worst).toBeLessThan(1e-5);
  }, 300_000);

  it('answers a request of several questions in one batched run, each as when asked alone', async () => {
    const state = 'The order arrived two days late and the box was damaged. <|box_end|> I want a refund.';
    const refund = { type: 'noul', instructions: 'Refund?', criteria: { true: 'money back' } } as const;
    const topic = {
      type: 'choice',
      instructions: 'Topic?',
      criteria: { delivery: null, billing: 'invoices', other: null },
    } as const;
    const level = { type: 'score', instructions: 'How bad?', criteria: ['none', 'some', 'serious', 'very'] } as const;
    const before = evaluator.stats().passes;
    const together = await evaluator.evaluate({ state, questions: { refund, topic, level } } as never);
    expect(evaluator.stats().passes - before).toBe(1);
    const numbers = (a: Answer): number[] =>
      a.type === 'noul'
        ? [a.noul]
        : [...Object.values(a.probabilities), a.confidence, ...(a.type === 'score' ? [a.score] : [])];
    for (const [key, q] of Object.entries({ refund, topic, level })) {
      const alone = await evaluator.evaluate({ state, questions: { [key]: q } } as never);
      const a = numbers(alone.answers[key]!);
      const b = numbers(together.answers[key]!);
      expect(b.length).toBe(a.length);
      a.forEach((x, j) => expect(Math.abs(x - b[j]!)).toBeLessThan(1e-5));
    }
  }, 120_000);

  it('answers a state longer than the cut, reading its first 8,191 tokens, and says it was cut', async () => {
    const i = goldens.requests.findIndex((g) => g.name === 'state longer than the cut');
    const g = goldens.requests[i]!;
    const result = await evaluator.evaluate(golden.engineRequest(g));
    expect(result.notes?.truncated).toEqual({ q: ['state'] });
    expect(result.usage.input_tokens).toBe(goldens.results[i]!.row!.ids.length);
    const answer = result.answers.q!;
    expect(answer.type).toBe('choice');
    if (answer.type === 'choice')
      expect(Object.values(answer.probabilities).reduce((a, b) => a + b, 0)).toBeCloseTo(1, 12);
  }, 120_000);

  it('refuses a row over the limit with a 422 naming it', async () => {
    const err = await evaluator
      .evaluate({
        state: 'short',
        questions: { q: { type: 'choice', instructions: 'x', criteria: { a: 'a '.repeat(16_400), b: null } } },
      } as never)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BudgetError);
    expect((err as Error).message).toMatch(/at most 16384 tokens a row/);
  });
});
