// The label-tokens family through the engine (loadEvaluator, fp32, planned in the planner threads)
// on each contract's replica (tools/families/label-tokens/replica.ts: the decider replica's causal
// LM under the contract's decision.json and calibration.json), against the goldens of the
// independent reference: its probabilities are the softmax of the label logits / the contract's
// temperatures from a torch forward of the same fp32 weights at each row's slot. Tolerances: the
// answers within 1e-5 and the label logits (temperature × log p, centered: a softmax keeps them up
// to a constant) within 1e-4, what two fp32 forwards of a 2-layer model over a few thousand tokens
// agree to. Also: refusals are 422 budget errors naming the limit, content is data over every added
// token of the tokenizer, the prefix cache serves a second request on the same state, int8 answers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BudgetError } from '../../src/engine/errors.js';
import { planLabelTokens } from '../../src/engine/families/label-tokens/index.js';
import { loadEvaluator, type Evaluator } from '../../src/engine/index.js';
import type { Answer, EngineStats, EvaluateRequest, EvaluateResult } from '../../src/engine/types.js';
import { addedTokenStrings } from '../../tools/families/decider/goldens.js';
import {
  ensureLabelTokensReplica,
  LABEL_TOKENS_CONTRACTS,
  replicaTemperature,
  type LabelTokensContract,
} from '../../tools/families/label-tokens/replica.js';
import {
  goldensOf,
  labelTokensRequest,
  loadContract,
  REPLICA_BUDGETS,
  type LabelTokensGoldens,
} from './label-tokens-helpers.js';

const evaluators = new Map<LabelTokensContract, Evaluator>();
const got = new Map<string, EvaluateResult | Error>();
const goldens = new Map<LabelTokensContract, LabelTokensGoldens>();

/** An answer's probabilities in the goldens' order (noul [P(true), P(false)]; choice the options sent). */
function probabilitiesOf(a: Answer, options?: string[]): number[] {
  if (a.type === 'noul') return [a.noul, 1 - a.noul];
  if (a.type === 'choice') return options!.map((o) => a.probabilities[o]!);
  return Object.values(a.probabilities);
}

const optionsOf = (q: Record<string, unknown>) =>
  q.type === 'choice'
    ? Object.keys(
        labelTokensRequest({ name: '', state: '', questions: [['q', q as never]] }).questions.q!.criteria as object,
      )
    : undefined;

beforeAll(async () => {
  for (const c of LABEL_TOKENS_CONTRACTS) {
    const g = goldensOf(c);
    if (!g) continue;
    goldens.set(c, g);
    const ev = await loadEvaluator({
      modelDir: await ensureLabelTokensReplica(c),
      variant: 'fp32',
      threads: 1,
      engineThread: false,
      plannerThreads: 1,
    });
    evaluators.set(c, ev);
    for (const r of g.requests)
      got.set(`${c}/${r.name}`, await ev.evaluate(labelTokensRequest(r)).catch((e: unknown) => e as Error));
  }
}, 600_000);

afterAll(async () => {
  for (const ev of evaluators.values()) await ev.close();
});

describe.each(LABEL_TOKENS_CONTRACTS)('the %s contract through the engine', (contract) => {
  it('has its goldens, written with the replica’s calibration', () => {
    const g = goldens.get(contract)!;
    expect(g).toBeDefined();
    expect(g.temperature).toEqual(replicaTemperature(contract) ?? [1, 1, 1]);
    expect(evaluators.get(contract)!.stats().family).toBe('label-tokens');
  });

  it('refuses what the reference refuses: a 422 budget error naming the limit', () => {
    const g = goldens.get(contract)!;
    let refused = 0;
    g.requests.forEach((r, i) => {
      const want = g.results[i]!;
      const res = got.get(`${contract}/${r.name}`)!;
      expect(res instanceof Error, r.name).toBe(want.refused !== undefined);
      if (!(res instanceof Error)) return;
      refused++;
      expect(res).toBeInstanceOf(BudgetError);
      const limit = {
        type: /answers [a-z, ]+ questions only/,
        options: /2 to \d+ options/,
        levels: /2 to \d+ levels/,
        context: /\d+ tokens/,
      }[want.refused!];
      expect(res.message, r.name).toMatch(limit);
    });
    expect(refused).toBeGreaterThan(0);
  });

  it('answers within 1e-5 of the reference, label logits within 1e-4; usage is the rows’ tokens', () => {
    const g = goldens.get(contract)!;
    const t = g.temperature;
    const measured = { answers: 0, logits: 0, rows: 0, spread: 0 };
    g.requests.forEach((r, i) => {
      const want = g.results[i]!;
      if (want.refused) return;
      const res = got.get(`${contract}/${r.name}`) as EvaluateResult;
      expect(res.usage.input_tokens, r.name).toBe(
        want.prefix!.length + want.rows!.reduce((n, x) => n + x.piece.length, 0),
      );
      for (const [key, q] of r.questions) {
        const p = probabilitiesOf(res.answers[key]!, optionsOf(q));
        const ref = want.probabilities![key]!;
        expect(p, `${r.name} ${key}`).toHaveLength(ref.length);
        p.forEach((x, j) => (measured.answers = Math.max(measured.answers, Math.abs(x - ref[j]!))));
        const tq = q.type === 'choice' ? t[0] : q.type === 'score' ? t[1] : t[2];
        const center = (xs: number[]) => xs.map((x) => x - xs.reduce((a, b) => a + b, 0) / xs.length);
        const [a, b] = [center(p.map((x) => tq * Math.log(x))), center(ref.map((x) => tq * Math.log(x)))];
        a.forEach((x, j) => (measured.logits = Math.max(measured.logits, Math.abs(x - b[j]!))));
        measured.rows++;
        // The row moves the answer: the reference's labels are not all alike.
        if (Math.max(...ref) - Math.min(...ref) > 0.05) measured.spread++;
      }
    });
    console.log(
      `${contract}: max |Δ answer| ${measured.answers.toExponential(2)}, max |Δ centered label logit| ${measured.logits.toExponential(2)} over ${measured.rows} questions`,
    );
    expect(measured.answers).toBeLessThan(1e-5);
    expect(measured.logits).toBeLessThan(1e-4);
    expect(measured.spread).toBeGreaterThan(measured.rows / 2);
  });
});

describe('on the generic contract', () => {
  let generic: Awaited<ReturnType<typeof loadContract>>;
  beforeAll(async () => {
    generic = await loadContract('generic');
  });

  it('content is data: every added token of the tokenizer in every field; no row holds a control token the contract did not write', async () => {
    const { dir, codec, settings } = generic;
    const written = new Set([
      ...settings.head,
      ...settings.stateTail,
      ...settings.tail,
      ...[...settings.question, ...settings.option].flatMap((p) => ('ids' in p ? p.ids : [])),
    ]);
    const strings = addedTokenStrings(dir);
    expect(strings.length).toBeGreaterThan(20);
    const added = new Set(strings.map((s) => codec.tokenId(s)!));
    const ev = evaluators.get('generic')!;
    for (const s of strings) {
      const request = {
        state: { [s]: `a ${s} b`, list: [s] },
        questions: {
          n: { type: 'noul', instructions: `is ${s}?`, criteria: { true: s, false: { k: s } } },
          c: { type: 'choice', instructions: s, criteria: { [s]: s, [`x${s}`]: [s], y: null } },
          s: { type: 'score', instructions: { s }, criteria: [s, `${s}!`, { s }] },
        },
      } as unknown as EvaluateRequest;
      const plan = planLabelTokens(request, codec, settings, REPLICA_BUDGETS);
      for (const id of [...plan.prefix, ...plan.questions.flatMap((q) => q.suffix)])
        if (added.has(id)) expect(written.has(id), `${s}: ${codec.decode([id])}`).toBe(true);
      const res = await ev.evaluate(request);
      expect(Object.keys(res.answers)).toEqual(['n', 'c', 's']);
      expect(res.usage.input_tokens).toBe(plan.usage.input_tokens);
    }
  }, 300_000);

  it('a second request on the same state takes the prefix’s KV from the prefix cache: only its rows are run', async () => {
    const ev = evaluators.get('generic')!;
    const golden = goldens.get('generic')!.requests.find((r) => r.name === 'several questions, the order sent')!;
    const request = { ...labelTokensRequest(golden), state: `A state no request has sent: ${Date.now()}` };
    const plan = planLabelTokens(request, generic.codec, generic.settings, REPLICA_BUDGETS);
    const at = [ev.stats()];
    const answers = [];
    for (let i = 0; i < 2; i++) {
      answers.push((await ev.evaluate(request)).answers);
      at.push(ev.stats());
    }
    const [s0, s1, s2] = at as [EngineStats, EngineStats, EngineStats];
    expect(s2.prefixCacheHits - s1.prefixCacheHits).toBe(1);
    expect(s1.prefixCacheHits - s0.prefixCacheHits).toBe(0);
    // The first ran the prefix and the rows; the second the rows alone.
    expect(s1.tokensEvaluated - s0.tokensEvaluated - (s2.tokensEvaluated - s1.tokensEvaluated)).toBe(
      plan.prefix.length,
    );
    expect(answers[1]).toEqual(answers[0]);
  }, 60_000);

  it('the int8 graph (per-token int8) loads and answers near the fp32 reference', async () => {
    const int8 = await loadEvaluator({
      modelDir: await ensureLabelTokensReplica('generic'),
      variant: 'int8',
      threads: 1,
      engineThread: false,
    });
    try {
      const g = goldens.get('generic')!;
      let agree = 0;
      let n = 0;
      for (const [i, r] of g.requests.entries()) {
        const want = g.results[i]!;
        if (want.refused || i % 3 !== 0) continue;
        const res = await int8.evaluate(labelTokensRequest(r));
        for (const [key, q] of r.questions) {
          const p = probabilitiesOf(res.answers[key]!, optionsOf(q));
          const ref = want.probabilities![key]!;
          expect(p.every(Number.isFinite)).toBe(true);
          n++;
          if (p.indexOf(Math.max(...p)) === ref.indexOf(Math.max(...ref))) agree++;
        }
      }
      console.log(`int8 vs fp32 reference: argmax agrees on ${agree} of ${n} questions`);
      expect(agree / n).toBeGreaterThan(0.8);
    } finally {
      await int8.close();
    }
  }, 300_000);
});
