// Shared fixtures for engine tests: the tiny synthetic models and a few requests.
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { expect } from 'vitest';
import type { Answer, EvaluateRequest, EvaluateResult, Question } from '../../src/engine/types.js';
import { inlinePlanner } from '../../src/engine/prompting/planner/index.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import type { Plan } from '../../src/engine/prompting/plan.js';

export const tinyFp32 = () => ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
export const tinyInt8 = () => ensureSynthModel({ shape: 'tiny', dtype: 'int8' });
export const tinyNoPositionIds = () => ensureSynthModel({ shape: 'tiny', dtype: 'fp32', positionIds: false });

export const noul: Question = {
  type: 'noul',
  instructions: 'Is the text about an animal?',
  criteria: { true: 'an animal is named', false: null },
};
export const choice: Question = {
  type: 'choice',
  instructions: { ask: 'Which animal is it?', lang: 'en' },
  criteria: { fox: 'a fox', dog: null, 'fox terrier': 'a dog breed', '1': null, '12': 'a number' },
};
export const score: Question = {
  type: 'score',
  instructions: 'How fast is it?',
  criteria: ['slow', { level: 'medium' }, ['fast', 'very']],
};

export const state = { title: 'Ünïcode 日本語 🦊', body: 'The quick brown fox jumps over the lazy dog.' };

export function manyQuestions(n: number): Record<string, Question> {
  const out: Record<string, Question> = {};
  for (let i = 0; i < n; i++) {
    const kind = i % 3;
    out[`q${i}`] =
      kind === 0
        ? { type: 'noul', instructions: `Does the text mention item ${i}?` }
        : kind === 1
          ? {
              type: 'choice',
              instructions: `Pick a colour for ${i}`,
              criteria: { red: null, green: 'grass', blue: 'sky', [`c${i}`]: null },
            }
          : { type: 'score', instructions: `Rate aspect ${i}`, criteria: ['low', 'mid', 'high', 'top'] };
  }
  return out;
}

/** The plan of `r` on the model in `dir`, as the engine's planner makes it (generous budgets: nothing is refused). */
export async function planOf(dir: string, r: EvaluateRequest): Promise<Plan> {
  const codec = await TextCodec.load(dir);
  const budgets = { request: 64_000, question: 32_000, context: 32_768 };
  return inlinePlanner(codec, { endToken: codec.eosTokenId!, budgets }).plan(r);
}

export function request(questions: Record<string, Question>, s: EvaluateRequest['state'] = state): EvaluateRequest {
  return { state: s, questions };
}

/** Every probability an answer carries, in a stable order, for numeric comparison. */
export function probabilities(answer: Answer): number[] {
  if (answer.type === 'noul') return [answer.noul];
  return Object.keys(answer.probabilities)
    .sort()
    .map((k) => answer.probabilities[k]!);
}

/** The largest difference of any probability between two results' answers (of `keys`, default all). */
export function maxDiff(a: EvaluateResult, b: EvaluateResult, keys = Object.keys(a.answers)): number {
  let d = 0;
  for (const k of keys) {
    const y = probabilities(b.answers[k]!);
    probabilities(a.answers[k]!).forEach((v, i) => (d = Math.max(d, Math.abs(v - y[i]!))));
  }
  return d;
}

/** The same answer types and probabilities within `tolerance`. */
export function expectClose(a: Answer, b: Answer, tolerance = 1e-5): void {
  expect(b.type).toBe(a.type);
  const x = probabilities(a);
  const y = probabilities(b);
  expect(y.length).toBe(x.length);
  x.forEach((v, i) => expect(Math.abs(v - y[i]!)).toBeLessThan(tolerance));
}

/** Two results with equal usage and every answer close. */
export function expectSameResult(a: EvaluateResult, b: EvaluateResult, tolerance = 1e-5): void {
  expect(b.usage).toEqual(a.usage);
  for (const key of Object.keys(a.answers)) expectClose(a.answers[key]!, b.answers[key]!, tolerance);
}
