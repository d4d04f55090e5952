// Multi-token labels are scored exactly: compare with a brute force that runs every label's full
// token sequence through the model after the whole prompt, in one pass each, from scratch.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type Evaluator, type Question } from '../../src/engine/index.js';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { ModelRunner } from '../../src/engine/model/runner.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import { planRequest } from '../../src/engine/prompting/plan.js';
import { promptSet } from '../../src/engine/prompting/prompts.js';
import { logSoftmaxAt } from '../../src/engine/model/runner.js';
import { softmax } from '../../src/common/index.js';
import { tinyFp32 } from './fixtures.js';

const labelsQuestion: Question = {
  type: 'choice',
  instructions: 'Pick one',
  // "1" begins "12" and "123"; "fox" begins "fox terrier"; "dog" is one token; "12" begins "123".
  criteria: { '1': null, '12': null, '123': null, fox: null, 'fox terrier': null, dog: null, 'Überraschung 🦊': null },
};

describe('multi-token labels', () => {
  let evaluator: Evaluator;
  let runner: ModelRunner;
  let codec: TextCodec;

  beforeAll(async () => {
    const dir = await tinyFp32();
    evaluator = await loadEvaluator({ modelDir: dir, threads: 1, prefixCacheBytes: 0 });
    const folder = await openModelFolder(dir);
    runner = await ModelRunner.create(folder, { modelDir: dir, threads: 1 });
    codec = await TextCodec.load(dir);
  });
  afterAll(async () => {
    await evaluator.close();
    await runner.close();
  });

  it('match a brute-force sequence probability over the whole prompt, and sum to 1', async () => {
    const state = 'Numbers: 1, 12, 123. Animals: fox, dog.';
    const { answers } = await evaluator.evaluate({ state, questions: { q: labelsQuestion, other: { type: 'noul' } } });
    const answer = answers.q!;
    if (answer.type !== 'choice') throw new Error('type');

    const plan = planRequest({ state, questions: { q: labelsQuestion } }, codec, promptSet(), codec.eosTokenId!, {
      request: 1e9,
      question: 1e9,
      context: 1e9,
    });
    const prompt = [...plan.prefix, ...plan.questions[0]!.suffix];
    const brute: number[] = [];
    for (const { tokens } of plan.questions[0]!.labels) {
      // One pass over prompt + label: the logits at position (prompt end − 1 + j) predict token j.
      const logits = await runner.logits([...prompt, ...tokens.slice(0, -1)]);
      const rows = logits.slice(prompt.length - 1);
      brute.push(tokens.reduce((sum, token, j) => sum + logSoftmaxAt(rows[j]!, 1)(token), 0));
    }
    const expected = softmax(brute);
    const labels = plan.questions[0]!.labels.map((l) => l.label);
    labels.forEach((label, i) => expect(Math.abs(answer.probabilities[label]! - expected[i]!)).toBeLessThan(1e-5));
    const total = Object.values(answer.probabilities).reduce((a, b) => a + b, 0);
    expect(Math.abs(total - 1)).toBeLessThan(1e-6);
    // The prefix labels really were scored with their end: "1" ≠ P(first token "1").
    expect(plan.questions[0]!.labels.find((l) => l.label === '1')!.tokens).toHaveLength(2);
  });

  it('score levels up to 10 (single digits) and 255 choice options work', async () => {
    const levels: Question = {
      type: 'score',
      instructions: 'rate',
      criteria: Array.from({ length: 10 }, (_, i) => `level ${i}`),
    };
    const options: Question = {
      type: 'choice',
      instructions: 'pick',
      criteria: Object.fromEntries(Array.from({ length: 255 }, (_, i) => [`option ${i}`, null])),
    };
    const { answers } = await evaluator.evaluate({ state: 'text', questions: { levels, options } });
    if (answers.levels?.type !== 'score' || answers.options?.type !== 'choice') throw new Error('type');
    expect(Object.keys(answers.levels.probabilities)).toHaveLength(10);
    expect(Object.keys(answers.options.probabilities)).toHaveLength(255);
    for (const a of [answers.levels, answers.options]) {
      expect(Math.abs(Object.values(a.probabilities).reduce((x, y) => x + y, 0) - 1)).toBeLessThan(1e-6);
    }
    expect(answers.levels.score >= 0 && answers.levels.score <= 9).toBe(true);
  });
});
