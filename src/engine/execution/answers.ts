// Turning label log-probabilities into the typed answers of the contract (docs/api.md).
import { softmax } from '../../common/index.js';
import type { Answer, Question } from '../types.js';

/**
 * How the `confidence` of choice and score answers is computed from their probabilities (the
 * contract does not fix it): 'entropy' (default) or 'hosted', the hosted service's current formulas.
 */
export type ConfidenceKind = 'entropy' | 'hosted';
export const CONFIDENCE_KINDS = ['entropy', 'hosted'] as const satisfies readonly ConfidenceKind[];

/**
 * Entropy confidence = 1 − H(p) / ln(N), H the Shannon entropy in nats, N the number of outcomes:
 * 1 when all mass is on one outcome (or N = 1), 0 when the distribution is uniform. Every
 * outcome's probability counts, for choice and score alike.
 */
export function confidence(p: number[]): number {
  if (p.length <= 1) return 1;
  let h = 0;
  for (const x of p) if (x > 0) h -= x * Math.log(x);
  return clamp01(1 - h / Math.log(p.length));
}

function clamp01(x: number): number {
  return Math.min(1, Math.max(0, x));
}

/** Probabilities scaled to sum to 1 (uniform when they sum to 0), as the hosted formulas take them. */
function normalized(p: number[]): number[] {
  const total = p.reduce((a, b) => a + b, 0);
  return total > 0 ? p.map((x) => x / total) : p.map(() => 1 / p.length);
}

/** The hosted service's choice confidence: (p_max − 1/k) / (1 − 1/k); 1 for one option. */
export function hostedChoiceConfidence(probs: number[]): number {
  const k = probs.length;
  if (k <= 1) return 1;
  const p = normalized(probs);
  return clamp01((Math.max(...p) - 1 / k) / (1 - 1 / k));
}

/**
 * The hosted service's score confidence: max(0, 1 − Σ pᵢ·|i − mode| / MAD), mode the most probable
 * level (the first on ties), MAD = Σᵢ |i − (n−1)/2| / n the mean absolute deviation of the uniform
 * distribution over the levels from its centre; 1 for one level.
 */
export function hostedScoreConfidence(probs: number[]): number {
  const n = probs.length;
  if (n <= 1) return 1;
  const p = normalized(probs);
  let mode = 0;
  p.forEach((x, i) => {
    if (x > p[mode]!) mode = i;
  });
  const spread = p.reduce((d, x, i) => d + x * Math.abs(i - mode), 0);
  const mad = p.reduce((m, _, i) => m + Math.abs(i - (n - 1) / 2), 0) / n;
  return clamp01(1 - spread / mad);
}

/** The confidence of a choice or score answer with these probabilities, by the model's formula. */
export function answerConfidence(type: 'choice' | 'score', probs: number[], kind: ConfidenceKind = 'entropy'): number {
  if (kind === 'entropy') return confidence(probs);
  return type === 'choice' ? hostedChoiceConfidence(probs) : hostedScoreConfidence(probs);
}

/**
 * `p` is one probability per label, in the order prompts.labels() gave them; a choice's are in the
 * order of `options` (the order sent: the plan's; default the criteria's own key order).
 */
export function buildAnswer(
  question: Question,
  probs: number[],
  kind: ConfidenceKind = 'entropy',
  options?: readonly string[],
): Answer {
  const p = (i: number): number => probs[i] ?? 0;
  if (question.type === 'noul') return { type: 'noul', noul: p(0) };
  if (question.type === 'choice') {
    options ??= Object.keys(question.criteria);
    // Option names are caller strings ("__proto__" included): no prototype to collide with.
    const probabilities = Object.create(null) as Record<string, number>;
    let best = 0;
    options.forEach((option, i) => {
      probabilities[option] = p(i);
      if (p(i) > p(best)) best = i;
    });
    return {
      type: 'choice',
      choice: options[best]!,
      probabilities,
      confidence: answerConfidence('choice', probs, kind),
    };
  }
  const probabilities = Object.create(null) as Record<string, number>;
  const legend = Object.create(null) as Record<string, (typeof question.criteria)[number]>;
  let score = 0;
  question.criteria.forEach((description, level) => {
    probabilities[String(level)] = p(level);
    legend[String(level)] = description;
    score += level * p(level);
  });
  return { type: 'score', score, legend, probabilities, confidence: answerConfidence('score', probs, kind) };
}

/** Per question type, the temperature its label log-probabilities are divided by (calibration; 1 = as read). */
export type AnswerTemperatures = Partial<Record<Question['type'], number>>;

/**
 * The answers of a request, keyed by the caller's question ids in the request's order. `asked` are
 * the planned questions (a choice question once per rotation of its options) and `logps` their
 * labels' log-probabilities, in the same order. Each is divided by its type's temperature and
 * normalized; a question's rotations are put back in the caller's option order and averaged.
 */
export function answerQuestions(
  asked: ReadonlyArray<{ key: string; question: Question; options?: readonly string[]; order?: number[] }>,
  logps: ReadonlyArray<number[]>,
  temperatures: AnswerTemperatures = {},
  kind: ConfidenceKind = 'entropy',
): Record<string, Answer> {
  const sums = new Map<string, { question: Question; options?: readonly string[]; probs: number[]; count: number }>();
  asked.forEach((q, i) => {
    const t = temperatures[q.question.type] ?? 1;
    const probs = softmax(logps[i]!, t);
    let sum = sums.get(q.key);
    if (!sum)
      sums.set(q.key, (sum = { question: q.question, options: q.options, probs: probs.map(() => 0), count: 0 }));
    probs.forEach((p, label) => {
      const option = q.order?.[label] ?? label;
      sum.probs[option] = sum.probs[option]! + p;
    });
    sum.count++;
  });
  // Keyed by caller strings (question ids may be "__proto__"): no prototype to collide with.
  const out = Object.create(null) as Record<string, Answer>;
  for (const [key, { question, options, probs, count }] of sums)
    out[key] = buildAnswer(
      question,
      probs.map((p) => p / count),
      kind,
      options,
    );
  return out;
}
