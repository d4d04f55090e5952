// Metamorphic relations of a question-evaluation API: transformations of a request that must not
// change a question's answer. Written from the public description of such benchmarks (an answer
// depends only on the state and the question), run through any way of asking: the engine directly,
// or the HTTP API over a real socket.
//
// The tolerance, TOLERANCE = 1e-5 on every probability, is float rounding. Every relation below
// runs the same token ids for the question; what differs is the pass around them (its length, the
// other rows of each matrix product, the prefix computed in another pass). With fp32 arithmetic the
// only effect is the summation order of float products: a relative error of at most about
// √n · 2⁻²⁴ per dot product of n ≤ 4,864 terms (4e-6), which moves a probability by less than that
// (|∂P/∂logit| ≤ 1/4). Quantized exports meet the same bound only when a row's quantized values
// depend on that row alone (per-token activation scales, engine/model/per-token-int8.ts); one
// activation scale per pass moved the same answers by 6e-4 to 6e-2.
//
// One exception, which quantization itself makes: a quantizer rounds its input to a step, so an
// input that the two passes' float sums put on either side of a rounding boundary (they differ by
// ~1e-7, the fp32 row above) lands one step apart. That flip is rare (on an AVX2 EPYC, one question
// of 56 packed-vs-unpacked comparisons of the q4 flavor moved, by 1.1e-3; every other one stayed
// under 2e-7) and it is local to the question whose row holds it, while a leak from the rest of the
// pass (a shared activation scale) moves every question it reaches. So a quantized flavor is asked
// the same questions of its fp32 twin too (Servings.reference), and in each comparison at most one
// question may differ past TOLERANCE, and then by less than that question's own distance from its
// fp32 answer: one flipped step of one activation moves an answer less than the rounding of all its
// activations together moves it from the fp32 answer.
import type { EvaluateRequest, Question } from '../../src/engine/types.js';
import { ensureFlavor } from '../../tools/flavors.js';
import { choice, manyQuestions, noul, score, tinyFp32, tinyInt8 } from '../engine/fixtures.js';

export const TOLERANCE = 1e-5;

/** The flavors of the tiny model the relations run on, with the default settings. */
export const FLAVORS: Array<{ name: string; dir: () => Promise<string> }> = [
  { name: 'fp32', dir: tinyFp32 },
  { name: 'int8', dir: tinyInt8 },
  { name: 'q4', dir: () => ensureFlavor({ dtype: 'q4' }) },
];

/** Each question's probabilities, in a stable order (noul: [P(yes)]; choice/score: by label). */
export type Probabilities = Record<string, number[]>;

/** One way of asking (engine or HTTP), with the scope (API key) the request comes from. */
export type Ask = (request: EvaluateRequest, scope?: 'first' | 'second') => Promise<Probabilities>;

/** The three servings the relations compare. */
export interface Servings {
  /** Prefix cache off, questions packed into one pass (the default otherwise). */
  packed: Ask;
  /** Prefix cache off, one pass per question (--no-pack-questions). */
  unpacked: Ask;
  /** Prefix cache on (the default): states are stored from their second sighting, per scope. */
  cached: Ask;
}

/** Per question, max |P − P_fp32| of a quantized flavor's answers (withReference): a flip's allowance. */
const deviation = new WeakMap<Probabilities, Record<string, number>>();

/** `ask`, with each answer's distance from the fp32 twin's answer to the same request recorded (for `difference`). */
export function withReference(ask: Ask, reference: Ask): Ask {
  return async (request, scope) => {
    const [p, ref] = await Promise.all([ask(request, scope), reference(request)]);
    const d: Record<string, number> = {};
    for (const [k, v] of Object.entries(p)) d[k] = Math.max(...v.map((x, i) => Math.abs(x - (ref[k]?.[i] ?? NaN))));
    deviation.set(p, d);
    return p;
  };
}

/** Each serving of a quantized flavor, its answers measured against the fp32 twin's (see the file's head). */
export function referenced(s: Servings, reference: Ask): Servings {
  return {
    packed: withReference(s.packed, reference),
    unpacked: withReference(s.unpacked, reference),
    cached: withReference(s.cached, reference),
  };
}

export interface Relation {
  name: string;
  /** The largest probability difference between answers that must be equal. */
  run(s: Servings): Promise<number>;
}

/** Probabilities of an answer as the engine or the wire gives it. */
export function probabilitiesOf(answer: { noul?: number; probabilities?: Record<string, number> }): number[] {
  if (typeof answer.noul === 'number') return [answer.noul];
  const p = answer.probabilities ?? {};
  return Object.keys(p)
    .sort()
    .map((k) => p[k]!);
}

/**
 * max |ΔP| between the answers of `a` and `b`; `pairs` maps a's question ids to b's (default: the
 * same ids). Answers of a quantized flavor (withReference) may have one quantizer flip: the one
 * question past TOLERANCE, if only one, counts as equal when it moved less than its distance from
 * the fp32 answer on both sides (see the file's head).
 */
export function difference(
  a: Probabilities,
  b: Probabilities,
  pairs: Array<[string, string]> = Object.keys(a).map((k) => [k, k]),
): number {
  const moved: Array<{ d: number; allowance: number }> = [];
  let within = 0;
  for (const [ka, kb] of pairs) {
    const x = a[ka];
    const y = b[kb];
    if (!x || !y || x.length !== y.length) return Infinity;
    const q = Math.max(0, ...x.map((v, i) => Math.abs(v - y[i]!)));
    const allowance = Math.min(deviation.get(a)?.[ka] ?? 0, deviation.get(b)?.[kb] ?? 0);
    if (q < TOLERANCE) within = Math.max(within, q);
    else moved.push({ d: q, allowance });
  }
  const flip = moved.length === 1 && moved[0]!.d < moved[0]!.allowance;
  return flip ? within : Math.max(within, ...moved.map((m) => m.d));
}

const words = 'the customer wrote that the parcel arrived late and the invoice was paid twice by card'.split(' ');
/** A state of about 80 words, distinct per `seed` (the relations must not share cached prefixes). */
export function stateFor(seed: number): string {
  return (
    Array.from({ length: 80 }, (_, i) => words[(i * 7 + seed * 13) % words.length]).join(' ') + ` (ticket ${seed})`
  );
}

const three: Record<string, Question> = { a: noul, b: choice, c: score };
const ask = (questions: Record<string, Question>, seed: number): EvaluateRequest => ({
  state: stateFor(seed),
  questions,
});

export const RELATIONS: Relation[] = [
  {
    name: 'question order',
    run: async (s) =>
      difference(await s.packed(ask(three, 1)), await s.packed(ask({ c: score, a: noul, b: choice }, 1))),
  },
  {
    name: 'question-id renaming',
    run: async (s) =>
      difference(await s.packed(ask(three, 2)), await s.packed(ask({ 'renamed-1': noul, zz: choice, Q_3: score }, 2)), [
        ['a', 'renamed-1'],
        ['b', 'zz'],
        ['c', 'Q_3'],
      ]),
  },
  {
    name: 'companion sets',
    run: async (s) => {
      const alone = await s.packed(ask({ t: choice }, 3));
      const few = await s.packed(ask({ ...manyQuestions(3), t: choice }, 3));
      const others = manyQuestions(8);
      delete others.q0;
      const many = await s.packed(ask({ t: choice, ...others, n: noul }, 3));
      return Math.max(difference(alone, few, [['t', 't']]), difference(alone, many, [['t', 't']]));
    },
  },
  {
    name: 'a repeated question',
    run: async (s) => {
      const alone = await s.packed(ask({ t: score }, 4));
      const twice = await s.packed(ask({ t: score, again: score, n: noul }, 4));
      return Math.max(difference(alone, twice, [['t', 't']]), difference(alone, twice, [['t', 'again']]));
    },
  },
  {
    name: 'packing on vs off',
    run: async (s) => {
      const questions = { ...three, ...manyQuestions(4) };
      return difference(await s.packed(ask(questions, 5)), await s.unpacked(ask(questions, 5)));
    },
  },
  {
    name: 'a cache hit vs a miss',
    run: async (s) => {
      const cold = await s.packed(ask(three, 6));
      const seen = [];
      // First sighting: not stored; second: stored; third: served from the cache.
      for (let i = 0; i < 3; i++) seen.push(await s.cached(ask(three, 6)));
      return Math.max(...seen.map((r) => difference(cold, r)));
    },
  },
  {
    name: 'first vs later sightings of a one-question request',
    run: async (s) => {
      const seen = [];
      for (let i = 0; i < 3; i++) seen.push(await s.cached(ask({ t: choice }, 7)));
      return Math.max(difference(seen[0]!, seen[1]!), difference(seen[0]!, seen[2]!));
    },
  },
  {
    name: 'the same state sent by two keys',
    run: async (s) => {
      const first = [];
      for (let i = 0; i < 3; i++) first.push(await s.cached(ask(three, 8), 'first'));
      // The second key's cache scope has never seen the state: a miss where the first key hits.
      const second = await s.cached(ask(three, 8), 'second');
      return Math.max(difference(first[2]!, second), difference(first[0]!, second));
    },
  },
];

/** A choice with five options and the same options reordered: cyclically, and arbitrarily. */
export const OPTIONS: Question = {
  type: 'choice',
  instructions: 'Which department should handle the ticket?',
  criteria: {
    billing: 'payments and invoices',
    shipping: 'parcels',
    returns: null,
    support: 'anything else',
    sales: null,
  },
};
function reordered(order: string[]): Question {
  const c = OPTIONS.criteria as Record<string, string | null>;
  return { ...OPTIONS, criteria: Object.fromEntries(order.map((k) => [k, c[k]!])) } as Question;
}
export const CYCLIC = reordered(['shipping', 'returns', 'support', 'sales', 'billing']);
export const SHUFFLED = reordered(['sales', 'billing', 'support', 'shipping', 'returns']);
