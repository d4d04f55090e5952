// Stems: the beginnings a request's questions share run once, in a pass of their own, and every
// question then runs only what follows its stem (stems.ts). A user notices two things: a request of
// many alike questions (a batch's merged lines, a rubric of 50 questions) runs fewer tokens, and the
// answers are those of each question in a pass of its own. The layout of the stem pass (positions,
// which stem a token sees) is checked by those answers: a token placed one position off, or seeing
// another question's stem, moves them far past the bound.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type Evaluator, type Question } from '../../src/engine/index.js';
import { MIN_STEM_SAVING, questionStems } from '../../src/engine/execution/stems.js';
import { packQuestions, packWithStems, packedTokens, tokensAfterStem } from '../../src/engine/execution/packing.js';
import type { Plan, PlannedQuestion } from '../../src/engine/prompting/plan.js';
import { expectSameResult, manyQuestions, planOf, request, tinyFp32 } from './fixtures.js';

const ASPECTS = ['the delivery', 'the invoice', 'the price', 'the support team', 'the refund', 'the website'];

/** A rubric of alike questions: each type asks about every aspect with the same words. */
function rubric(): Record<string, Question> {
  const out: Record<string, Question> = {};
  ASPECTS.forEach((aspect, i) => {
    out[`n${i}`] = { type: 'noul', instructions: `Does the customer report a problem with ${aspect}?` };
    out[`c${i}`] = {
      type: 'choice',
      instructions: `What does the customer say about ${aspect}?`,
      criteria: { praise: 'positive remarks', complaint: 'negative remarks', nothing: null },
    };
    out[`s${i}`] = {
      type: 'score',
      instructions: `How strongly does the customer feel about ${aspect}?`,
      criteria: ['not at all', 'a little', 'strongly'],
    };
  });
  return out;
}

const STATE = 'Order 1182 arrived two weeks late and the box was crushed; the refund form keeps failing. '.repeat(4);

const plan = async (questions: Record<string, Question>): Promise<Plan> =>
  planOf(await tinyFp32(), request(questions, STATE));

describe('choosing the stems', () => {
  it('holds each beginning two or more questions share, once, and never a question’s last token', async () => {
    const p = await plan(rubric());
    const stems = questionStems(p.questions, 512)!;
    expect(stems).toBeDefined();
    // A tree: each stem token after its parent.
    stems.pass.parents.forEach((parent, i) => expect(parent).toBeLessThan(i));
    for (const q of p.questions) {
      const stem = stems.of.get(q)!;
      expect(stem.depth).toBeGreaterThan(0);
      expect(stem.depth).toBeLessThan(q.suffix.length);
      // The stem's path spells the question's first `depth` tokens.
      const path: number[] = [];
      for (let s = stem.node; s >= 0; s = stems.pass.parents[s]!) path.unshift(stems.pass.tokens[s]!);
      expect(path).toEqual(q.suffix.slice(0, stem.depth));
    }
    // Fewer tokens in all, by more than the threshold.
    const before = p.questions.reduce((n, q) => n + packedTokens(q), 0);
    const after = stems.pass.tokens.length + p.questions.reduce((n, q) => n + tokensAfterStem(q, stems), 0);
    expect(before - after).toBeGreaterThanOrEqual(MIN_STEM_SAVING);
  });

  it('keeps within the token budget, most shared first', async () => {
    const p = await plan(rubric());
    // The beginning every question shares (the user turn's opening) is the most shared.
    const [first, ...rest] = p.questions.map((q) => q.suffix);
    let common = 0;
    while (rest.every((s) => s[common] === first![common])) common++;
    expect(common).toBeGreaterThan(2);
    const stems = questionStems(p.questions, common)!;
    expect(stems.pass.tokens).toEqual(first!.slice(0, common));
    for (const q of p.questions) expect(stems.of.get(q)!.depth).toBe(common);
    // One token more: a beginning fewer questions share, after it.
    const more = questionStems(p.questions, common + 1)!;
    expect(more.pass.tokens.length).toBe(common + 1);
    expect(more.pass.parents.at(-1)).toBe(common - 1);
  });

  it('runs them from a saving of exactly MIN_STEM_SAVING tokens, not one fewer', () => {
    // Questions sharing a beginning of `shared` tokens: it runs once instead of once per question.
    const alike = (count: number, shared: number): PlannedQuestion[] =>
      Array.from({ length: count }, (_, i) => ({
        key: `q${i}`,
        question: { type: 'noul', instructions: '' },
        suffix: [...Array.from({ length: shared }, (_, t) => 1000 + t), 5000 + i],
        labels: [{ label: 'Yes', tokens: [1] }],
      }));
    // Three questions, 16 shared tokens: 2 × 16 = 32 saved.
    const at = questionStems(alike(3, MIN_STEM_SAVING / 2), 512)!;
    expect(at.pass.tokens.length).toBe(MIN_STEM_SAVING / 2);
    // One token fewer: 2 × 15 = 30 saved.
    expect(questionStems(alike(3, MIN_STEM_SAVING / 2 - 1), 512)).toBeUndefined();
  });

  it('has none for one question, or where they would save too little', async () => {
    const p = await plan(rubric());
    expect(questionStems(p.questions.slice(0, 1), 512)).toBeUndefined();
    expect(questionStems(p.questions.slice(0, 2), 512)).toBeUndefined();
  });
});

describe('when stems pay', () => {
  it('not when every question fits one pass: its trie already shares their beginnings', async () => {
    const p = await plan(rubric());
    expect(questionStems(p.questions, 4096)).toBeDefined();
    const one = packWithStems(p.questions, 4096);
    expect(one.groups).toHaveLength(1);
    expect(one.stems).toBeUndefined();
  });

  it('across passes, when the passes then run MIN_STEM_SAVING tokens fewer, stems included', async () => {
    const p = await plan(rubric());
    const tokens = (groups: Array<{ pass: { tokens: number[] } }>) =>
      groups.reduce((n, g) => n + g.pass.tokens.length, 0);
    const { stems, groups } = packWithStems(p.questions, 128);
    const plain = packQuestions(p.questions, 128);
    expect(plain.length).toBeGreaterThan(1);
    expect(tokens(plain) - stems!.pass.tokens.length - tokens(groups)).toBeGreaterThanOrEqual(MIN_STEM_SAVING);
  });
});

describe('a request with stems (tiny fp32)', () => {
  let withStems: Evaluator;
  let perQuestion: Evaluator;
  beforeAll(async () => {
    const modelDir = await tinyFp32();
    withStems = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, packTokens: 128 });
    perQuestion = await loadEvaluator({ modelDir, threads: 1, prefixCacheBytes: 0, packQuestions: false });
  });
  afterAll(async () => {
    await withStems?.close();
    await perQuestion?.close();
  });

  for (const [name, questions] of [
    ['a rubric of alike questions', rubric()],
    ['the engine tests’ many questions', manyQuestions(40)],
  ] as const)
    it(`${name}: runs the stems once, and answers as one pass per question does`, async () => {
      const p = await plan(questions);
      const { stems, groups } = packWithStems(p.questions, 128);
      expect(stems).toBeDefined();
      const before = withStems.stats().tokensEvaluated;
      const result = await withStems.evaluate(request(questions, STATE));
      const ran = withStems.stats().tokensEvaluated - before;
      expect(ran).toBe(
        p.prefix.length + stems!.pass.tokens.length + groups.reduce((n, g) => n + g.pass.tokens.length, 0),
      );
      const withoutStems = packQuestions(p.questions, 128).reduce((n, g) => n + g.pass.tokens.length, 0);
      expect(ran).toBeLessThan(p.prefix.length + withoutStems);
      // fp32 sums in another order (other passes, other columns): the packed tests' bound.
      expectSameResult(result, await perQuestion.evaluate(request(questions, STATE)), 1e-4);
    });
});
