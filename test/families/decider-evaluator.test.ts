// The decider-labels family through the engine, on the replica (tools/families/decider/replica.ts:
// the tiny decoder with trained weights, decision.json, calibration.json [1.03, 1, 1.03]), against
// the independent references: the rows are the goldens' (decider-layout.test.ts holds the layout to
// them), the label logits at each slot come from tools/train/train.py's torch forward in fp32
// (tools/families/decider/decider_forward.py), and the answers from tools/families/decider/decider_layout.py's
// readout with `assay calibrate`'s temperatures on top. Tolerances: the answers within 1e-5 and
// the label logits (centered: a softmax keeps them up to a constant) within 1e-4, what two fp32
// forwards of a 2-layer model over a few thousand tokens agree to (measured max below both by far).
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BudgetError } from '../../src/engine/errors.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import type { Answer, EvaluateResult } from '../../src/engine/types.js';
import { DECIDER_REFERENCE, GOLDEN_ANSWER_TEMPERATURE } from '../../tools/families/decider/goldens.js';
import { DECIDER_TEMPERATURE, DECIDER_WEIGHTS, ensureDeciderReplica } from '../../tools/families/decider/replica.js';
import { deciderRequest, goldens, type DeciderResult } from './decider-helpers.js';
import { python, reference as referenceFile } from './golden-helpers.js';
import { PYTHON } from './replica-helpers.js';

/** Rows longer than this are left to the layout test (a 32k-token context is minutes of reference forward on 2 cores). */
const LONGEST = 3000;
const hasTorch = existsSync(PYTHON) && python(['-c', 'import torch; print(1)'], '').trim() === '1';

const picked = goldens.requests
  .map((g, i) => ({ g, want: goldens.results[i]! }))
  .filter(({ want }) => want.refused || want.rows!.every((r) => r.slot < LONGEST));

let evaluator: Evaluator;
let unpacked: Evaluator;
let int8: Evaluator;
const got = new Map<string, EvaluateResult | Error>();
let reference: { logits: number[][]; probabilities: Array<Record<string, number[]>> };

/** An answer's probabilities in the reference's order (noul [yes, no]; choice the options sent). */
function probabilitiesOf(a: Answer, options?: string[]): number[] {
  if (a.type === 'noul') return [a.noul, 1 - a.noul];
  if (a.type === 'choice') return options!.map((o) => a.probabilities[o]!);
  return Object.values(a.probabilities);
}

describe.skipIf(!hasTorch)('decider-labels through the engine vs the references', () => {
  beforeAll(async () => {
    const dir = await ensureDeciderReplica();
    evaluator = await loadEvaluator({
      modelDir: dir,
      variant: 'fp32',
      threads: 1,
      engineThread: false,
      answerTemperatures: GOLDEN_ANSWER_TEMPERATURE,
    });
    unpacked = await loadEvaluator({
      modelDir: dir,
      variant: 'fp32',
      threads: 1,
      engineThread: false,
      plannerThreads: 0,
      packQuestions: false,
      answerTemperatures: GOLDEN_ANSWER_TEMPERATURE,
    });
    int8 = await loadEvaluator({ modelDir: dir, variant: 'int8', threads: 1, engineThread: false });
    for (const { g } of picked)
      got.set(g.name, await evaluator.evaluate(deciderRequest(g)).catch((e: unknown) => e as Error));
    const ok = picked.filter(({ want }) => !want.refused);
    const rows = ok.flatMap(({ want }) =>
      want.rows!.map((r) => ({ ids: [...want.ctx!, ...r.piece], slot: r.slot, labels: r.labels })),
    );
    const { logits } = JSON.parse(
      python([referenceFile('decider_forward.py')], JSON.stringify({ weights: DECIDER_WEIGHTS, rows })),
    ) as { logits: number[][] };
    let at = 0;
    const requests = ok.map(({ g, want }) => ({
      name: g.name,
      questions: g.questions,
      label_logits: want.rows!.map(() => logits[at++]!),
    }));
    const { results } = JSON.parse(
      python(
        [DECIDER_REFERENCE, 'readout'],
        JSON.stringify({ requests, temperature: DECIDER_TEMPERATURE, answer_temperature: GOLDEN_ANSWER_TEMPERATURE }),
      ),
    ) as { results: Array<{ name: string; probabilities: Record<string, number[]> }> };
    reference = { logits, probabilities: results.map((r) => r.probabilities) };
  }, 600_000);

  afterAll(async () => {
    await evaluator?.close();
    await unpacked?.close();
    await int8?.close();
  });

  it('runs a fair share of the goldens, refusals included', () => {
    expect(picked.length).toBeGreaterThanOrEqual(100);
    expect(picked.filter(({ want }) => want.refused).length).toBeGreaterThanOrEqual(5);
  });

  it('refuses what the reference refuses, with a 422 budget error naming the limit', () => {
    for (const { g, want } of picked) {
      const r = got.get(g.name)!;
      expect(r instanceof Error, g.name).toBe(want.refused !== undefined);
      if (r instanceof Error) {
        expect(r).toBeInstanceOf(BudgetError);
        expect(r.message).toMatch(/2 to 255 options|instructions/);
      }
    }
  });

  it('reads the context and every row once: usage is the goldens’ tokens', () => {
    for (const { g, want } of picked) {
      if (want.refused) continue;
      const r = got.get(g.name) as EvaluateResult;
      expect(r.usage.input_tokens, g.name).toBe(want.ctx!.length + want.rows!.reduce((n, x) => n + x.piece.length, 0));
    }
  });

  const measured = { answers: 0, logits: 0 };

  it('answers after calibration within 1e-5 of the reference readout of the reference forward', () => {
    let k = 0;
    for (const { g, want } of picked) {
      if (want.refused) continue;
      const r = got.get(g.name) as EvaluateResult;
      const ref = reference.probabilities[k++]!;
      for (const [key, q] of g.questions) {
        const options = q.type === 'choice' ? (q.criteria as Array<[string, unknown]>).map(([n]) => n) : undefined;
        const p = probabilitiesOf(r.answers[key]!, options);
        expect(p).toHaveLength(ref[key]!.length);
        p.forEach((x, j) => (measured.answers = Math.max(measured.answers, Math.abs(x - ref[key]![j]!))));
      }
    }
    console.log(`max |Δ answer probability| ${measured.answers.toExponential(2)}`);
    expect(measured.answers).toBeLessThan(1e-5);
  });

  it('label logits at the slot (centered) within 1e-4 of the reference forward, choice and noul rows', () => {
    let at = 0;
    const [tc, , tn] = DECIDER_TEMPERATURE;
    for (const { g, want } of picked) {
      if (want.refused) continue;
      const r = got.get(g.name) as EvaluateResult;
      const rowsOf = (key: string) => want.rows!.map((row, i) => [row, i] as const).filter(([row]) => row.key === key);
      const base = at;
      for (const [key, q] of g.questions) {
        if (q.type === 'score') continue;
        const [[, i]] = rowsOf(key) as [[DeciderResult['rows'] extends (infer X)[] | undefined ? X : never, number]];
        const ref = reference.logits[base + i]!;
        const t = q.type === 'choice' ? tc * GOLDEN_ANSWER_TEMPERATURE.choice : tn * GOLDEN_ANSWER_TEMPERATURE.noul;
        const options = q.type === 'choice' ? (q.criteria as Array<[string, unknown]>).map(([n]) => n) : undefined;
        let p = probabilitiesOf(r.answers[key]!, options);
        if (q.type === 'noul') p = [p[1]!, p[0]!]; // the row lists no, yes
        const engine = p.map((x) => t * Math.log(x));
        const center = (xs: number[]) => xs.map((x) => x - xs.reduce((a, b) => a + b, 0) / xs.length);
        const [a, b] = [center(engine), center(ref)];
        a.forEach((x, j) => (measured.logits = Math.max(measured.logits, Math.abs(x - b[j]!))));
      }
      at += want.rows!.length;
    }
    console.log(`max |Δ centered label logit| ${measured.logits.toExponential(2)}`);
    // The logits carry the row: labels spread by more than a unit at a slot (not all-zero embeddings).
    const spread = reference.logits.map((l) => Math.max(...l) - Math.min(...l));
    expect(spread.filter((s) => s > 1).length).toBeGreaterThan(reference.logits.length / 2);
    expect(measured.logits).toBeLessThan(1e-4);
  });

  it('packed and one pass per question give the same answers (inline planner too)', async () => {
    for (const { g, want } of picked.filter((_, i) => i % 7 === 0)) {
      if (want.refused) continue;
      const a = got.get(g.name) as EvaluateResult;
      const b = await unpacked.evaluate(deciderRequest(g));
      for (const [key] of g.questions) {
        const pa = JSON.stringify(a.answers[key]);
        expect(pa.length).toBeGreaterThan(0);
        const x = a.answers[key]!;
        const y = b.answers[key]!;
        expect(y.type).toBe(x.type);
        if (x.type === 'noul' && y.type === 'noul') expect(Math.abs(x.noul - y.noul)).toBeLessThan(1e-5);
        else if (x.type !== 'noul' && y.type !== 'noul')
          for (const [o, p] of Object.entries(x.probabilities))
            expect(Math.abs(p - (y.probabilities as Record<string, number>)[o]!)).toBeLessThan(1e-5);
      }
    }
  }, 120_000);

  it('says its family, and a second request on the same state takes the context’s KV from the prefix cache', async () => {
    expect(evaluator.stats().family).toBe('decider-labels');
    const request = deciderRequest(picked.find(({ g }) => g.name === 'several questions, the order sent')!.g);
    const before = evaluator.stats().prefixCacheHits;
    const first = await evaluator.evaluate(request);
    const second = await evaluator.evaluate(request);
    expect(evaluator.stats().prefixCacheHits).toBeGreaterThan(before);
    expect(second.answers).toEqual(first.answers);
  }, 60_000);

  it('the int8 graph (per-token int8) answers near the fp32 reference', async () => {
    // The folder's default variant is int8 (activations quantized per token by the engine's rewrite):
    // its answers are finite and pick the fp32 reference's option on most questions (temperatures
    // do not move an argmax, so the calibrated fp32 answers serve as the reference's).
    let worst = 0;
    let agree = 0;
    let n = 0;
    for (const { g, want } of picked.filter(({ want }, i) => !want.refused && i % 3 === 0)) {
      const a = got.get(g.name) as EvaluateResult;
      const b = await int8.evaluate(deciderRequest(g));
      for (const [key, q] of g.questions) {
        const options = q.type === 'choice' ? (q.criteria as Array<[string, unknown]>).map(([o]) => o) : undefined;
        const pa = probabilitiesOf(a.answers[key]!, options);
        const pb = probabilitiesOf(b.answers[key]!, options);
        n++;
        if (pa.indexOf(Math.max(...pa)) === pb.indexOf(Math.max(...pb))) agree++;
        if (!pb.every(Number.isFinite)) worst++;
      }
      expect(want.rows!.length).toBeGreaterThan(0);
    }
    console.log(`int8 vs fp32: argmax agrees on ${agree} of ${n} questions`);
    expect(worst).toBe(0);
    expect(agree / n).toBeGreaterThan(0.8);
  }, 300_000);
});
