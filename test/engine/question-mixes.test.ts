// Generated question mixes: whatever questions a request holds (repeats, shared beginnings, all
// three types, 1 to 40 of them), on a state of 0 to 3,000 tokens, in either lane's pass budget, with
// the prefix cache cold or warm, every answer is that of the same question asked alone. The engine
// packs, stems and splits such requests in ways no hand-written case covers: 16 mixed questions
// with repeats once failed an int8 pass with onnxruntime's "Shape mismatch attempting to re-use
// buffer" (a pass whose reads outnumbered its tokens), a 500 for every such request.
//
// Bounds: an int8 question answers the same to the bit in every composition (per-token rows,
// float64 masked attention: docs/engine.md "Exactness across passes (int8)"), so 1e-6 there; fp32
// passes of other shapes sum in other orders, the packed bound 1e-5 (as test/engine/stems.test.ts).
// ASSAY_MIX_SEEDS sets how many mixes run per model (default 8).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type Evaluator, type Lane, type Question } from '../../src/engine/index.js';
import { seededRandom } from '../../src/common/index.js';
import { maxDiff, request, tinyFp32, tinyInt8 } from './fixtures.js';

const SEEDS = Number(process.env.ASSAY_MIX_SEEDS ?? 8);
const ASPECTS = ['the delivery', 'the invoice', 'the price', 'the refund', 'the website', 'the staff', 'the app'];
const WORDS = ['river', 'ledger', 'quarterly', 'Zürich', '東京', 'invoice', 'refund', 'pump', 'shipment', '42', 'late'];

/** A question of the pool: alike beginnings across aspects, some with criteria, some unlike. */
function poolQuestion(rand: () => number): Question {
  const aspect = ASPECTS[Math.floor(rand() * ASPECTS.length)]!;
  const kind = Math.floor(rand() * 4);
  if (kind === 0)
    return rand() < 0.5
      ? { type: 'noul', instructions: `Does the customer report a problem with ${aspect}?` }
      : {
          type: 'noul',
          instructions: `Is a deadline mentioned for ${aspect}?`,
          criteria: { true: 'clearly stated', false: 'absent or unclear' },
        };
  if (kind === 1)
    return {
      type: 'choice',
      instructions: `What does the customer say about ${aspect}?`,
      criteria: { praise: 'positive remarks', complaint: 'negative remarks', nothing: null },
    };
  if (kind === 2)
    return {
      type: 'score',
      instructions: `How strongly does the customer feel about ${aspect}?`,
      criteria: ['not at all', 'a little', 'strongly', 'furious'],
    };
  return {
    type: 'choice',
    instructions: 'Which department should handle this?',
    criteria: { sales: null, support: 'technical help', finance: 'money matters', '1': null, '12': 'a number' },
  };
}

interface Mix {
  seed: number;
  questions: Record<string, Question>;
  state: string;
  lane: Lane;
  warm: boolean;
}

/** Mix `seed`: 1 to 40 questions drawn with repeats from a pool of 1 to 12, a state of 0 to ~3,000 tokens. */
function mix(seed: number): Mix {
  const rand = seededRandom(seed * 7919 + 1);
  const pool = Array.from({ length: 1 + Math.floor(rand() * 12) }, () => poolQuestion(rand));
  const n = 1 + Math.floor(rand() * 40);
  const questions: Record<string, Question> = {};
  for (let i = 0; i < n; i++) questions[`q${i}`] = pool[Math.floor(rand() * pool.length)]!;
  const words = Math.floor(rand() ** 2 * 2400);
  const state = Array.from({ length: words }, (_, i) => WORDS[(i * 7 + (i >> 3) + seed) % WORDS.length]).join(' ');
  return { seed, questions, state, lane: rand() < 0.5 ? 'batch' : 'interactive', warm: rand() < 0.5 };
}

const MIXES = Array.from({ length: SEEDS }, (_, i) => mix(i + 1));

for (const [name, model, bound] of [
  ['int8', tinyInt8, 1e-6],
  ['fp32', tinyFp32, 1e-5],
] as const) {
  describe(`question mixes on the tiny ${name} model answer each question as alone`, () => {
    let cold: Evaluator;
    let warm: Evaluator;
    beforeAll(async () => {
      const modelDir = await model();
      cold = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0 });
      warm = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 1e9 });
    }, 120_000);
    afterAll(async () => {
      await cold?.close();
      await warm?.close();
    });

    it.each(MIXES.map((m) => [m.seed, m] as const))(
      'mix %i',
      async (_, m) => {
        const r = request(m.questions, m.state);
        const evaluator = m.warm ? warm : cold;
        if (m.warm) {
          // Two sightings store the prefix; the third request is answered from the cache.
          await warm.evaluate(r, { lane: m.lane });
          await warm.evaluate(r, { lane: m.lane });
        }
        const hits = evaluator.stats().prefixCacheHits;
        const all = await evaluator.evaluate(r, { lane: m.lane });
        if (m.warm) expect(evaluator.stats().prefixCacheHits).toBe(hits + 1);
        const alone = new Map<string, Awaited<ReturnType<Evaluator['evaluate']>>>();
        for (const [k, q] of Object.entries(m.questions)) {
          const key = JSON.stringify(q);
          if (!alone.has(key)) alone.set(key, await cold.evaluate(request({ [k]: q }, m.state)));
          const one = alone.get(key)!;
          const single = { ...one, answers: { [k]: Object.values(one.answers)[0]! } };
          expect(maxDiff(all, single, [k]), `${k} of mix ${m.seed}`).toBeLessThanOrEqual(bound);
        }
      },
      300_000,
    );
  });
}
