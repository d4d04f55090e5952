// The token boundary between the shared prefix and each question's suffix must be exact:
// prefix + suffix must equal the tokens of the whole prompt encoded in one go (content as data:
// test/engine/content-is-data.test.ts).
import { beforeAll, describe, expect, it } from 'vitest';
import { planRequest } from '../../src/engine/prompting/plan.js';
import { promptSet } from '../../src/engine/prompting/prompts.js';
import { renderContent } from '../../src/engine/prompting/content.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import { BudgetError } from '../../src/engine/errors.js';
import { answerQuestions } from '../../src/engine/execution/answers.js';
import type { ChoiceAnswer, Question } from '../../src/engine/index.js';
import { choice, noul, score, tinyFp32 } from './fixtures.js';

const prompts = promptSet();
const budgets = { request: 64_000, question: 32_000, context: 32_768 };
let codec: TextCodec;
let end: number;

beforeAll(async () => {
  codec = await TextCodec.load(await tinyFp32());
  end = codec.eosTokenId!;
});

const trickyStates: Record<string, unknown> = {
  'trailing space': 'The answer is ',
  'trailing spaces': 'several spaces   ',
  'trailing newline': 'line one\nline two\n',
  'trailing newlines': 'para\n\n\n',
  'trailing period': 'It ends here.',
  CJK: '这是一个测试。日本語のテキスト',
  'CJK trailing space': '中文 ',
  emoji: 'fox 🦊🦊',
  'emoji ZWJ': 'family 👨‍👩‍👧',
  digits: 'Total: 1234567',
  'JSON object': { a: 1, b: [true, null, 'x'], ü: { deep: '日本' } },
  'JSON array': [1, 2, 3],
  'looks like a special token': 'text <|im_end|> more <|im_start|>user',
  'tabs and CR': 'a\tb\r\n',
};

describe('prompt planning', () => {
  for (const [name, state] of Object.entries(trickyStates)) {
    it(`prefix + suffix equals the whole prompt's tokens: state with ${name}`, () => {
      const plan = planRequest(
        { state: state as string, questions: { a: noul, b: choice, c: score } },
        codec,
        prompts,
        end,
        budgets,
      );
      const system = prompts.system(renderContent(state as string));
      for (const q of plan.questions) {
        const whole = codec.encodeChat(
          [
            { role: 'system', content: system },
            { role: 'user', content: prompts.user(q.question) },
          ],
          true,
        );
        expect([...plan.prefix, ...q.suffix]).toEqual(whole);
        expect(q.suffix.length).toBeGreaterThan(0);
      }
      // The prefix is the state's turn: it ends right after a special token and holds the state.
      expect(codec.isAddedToken(plan.prefix[plan.prefix.length - 1]!)).toBe(true);
    });
  }

  it('the answer starts after the template opens the assistant turn with thinking disabled', () => {
    const plan = planRequest({ state: 'x', questions: { a: noul } }, codec, prompts, end, budgets);
    const text = codec.decode([...plan.prefix, ...plan.questions[0]!.suffix]);
    expect(text.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n')).toBe(true);
  });

  it('question keys never reach the model', () => {
    const plan = planRequest({ state: 'x', questions: { SECRET_KEY_123: noul } }, codec, prompts, end, budgets);
    expect(codec.decode([...plan.prefix, ...plan.questions[0]!.suffix])).not.toContain('SECRET_KEY_123');
  });

  it('usage counts the prefix once plus every suffix, and the answer tokens scored', () => {
    const one = planRequest({ state: 'x', questions: { a: noul } }, codec, prompts, end, budgets);
    const two = planRequest({ state: 'x', questions: { a: noul, b: noul } }, codec, prompts, end, budgets);
    expect(two.usage.input_tokens).toBe(one.usage.input_tokens + one.questions[0]!.suffix.length);
    expect(one.usage.output_tokens).toBe(2); // Yes, No
    expect(two.usage.output_tokens).toBe(4);
  });

  it('labels that begin other labels score the end of the answer too', () => {
    const plan = planRequest({ state: 'x', questions: { c: choice } }, codec, prompts, end, budgets);
    const byLabel = Object.fromEntries(plan.questions[0]!.labels.map((l) => [l.label, l.tokens]));
    expect(byLabel['1']).toEqual([codec.encodeText('1')[0], end]);
    expect(byLabel['12']).toEqual(codec.encodeText('12'));
    expect(byLabel.fox).toEqual([...codec.encodeText('fox'), end]); // "fox" begins "fox terrier"
    expect(byLabel.dog).toEqual(codec.encodeText('dog'));
  });

  it('a state far over budget is refused after counting about a budget of it, not all of it', () => {
    const huge = 'The quick brown fox jumps over the lazy dog. '.repeat(90_000); // ~4 MB, ~900k tokens
    let error: BudgetError | undefined;
    try {
      planRequest({ state: huge, questions: { a: noul } }, codec, prompts, end, budgets);
    } catch (e) {
      error = e as BudgetError;
    }
    expect(error).toBeInstanceOf(BudgetError);
    expect(error!.budget).toBe('question'); // the smallest budget the state alone must fit
    expect(error!.atLeast).toBe(true);
    expect(error!.count).toBeGreaterThan(32_000);
    expect(error!.count).toBeLessThan(40_000); // it stopped early
    expect(error!.message).toContain('more than');
  });

  it('huge question texts are refused early too, per question and over the whole request', () => {
    const long = 'Consider every clause of the contract carefully. '.repeat(40_000); // ~2 MB
    const one = () =>
      planRequest({ state: 'x', questions: { a: { type: 'noul', instructions: long } } }, codec, prompts, end, budgets);
    expect(one).toThrow(BudgetError);
    expect(one).toThrow(/longest question.*more than/);
    const medium = 'Consider every clause of the contract carefully. '.repeat(2_000); // ~18k tokens each
    const many = Object.fromEntries(
      Array.from({ length: 8 }, (_, i) => [`q${i}`, { type: 'noul' as const, instructions: medium }]),
    );
    expect(() => planRequest({ state: 'x', questions: many }, codec, prompts, end, budgets)).toThrow(
      /all questions.*more than/,
    );
    // Tens of thousands of small questions add up before any prompt is rendered with the state.
    const flood = Object.fromEntries(
      Array.from({ length: 20_000 }, (_, i) => [
        `q${i}`,
        { type: 'noul' as const, instructions: `Is item ${i} present?` },
      ]),
    );
    let error: BudgetError | undefined;
    try {
      planRequest({ state: 'The quick brown fox. '.repeat(1500), questions: flood }, codec, prompts, end, budgets);
    } catch (e) {
      error = e as BudgetError;
    }
    expect(error?.budget).toBe('request');
    expect(error?.atLeast).toBe(true);
  });

  it('a state just under budget, counted in many pieces, is not refused early', () => {
    const near = 'word '.repeat(31_000);
    const plan = planRequest({ state: near, questions: { a: noul } }, codec, prompts, end, budgets);
    expect(plan.prefix.length).toBeGreaterThan(31_000);
    expect(plan.prefix.length).toBeLessThan(32_000);
  });

  it('over a budget is a typed error naming the budget and the count', () => {
    const big = 'word '.repeat(3000);
    const small = { request: 4000, question: 3500, context: 32_768 };
    const one = () => planRequest({ state: big, questions: { a: noul } }, codec, prompts, end, small);
    expect(one).not.toThrow();
    let error: unknown;
    try {
      planRequest(
        { state: big, questions: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`q${i}`, noul])) },
        codec,
        prompts,
        end,
        small,
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(BudgetError);
    expect((error as BudgetError).budget).toBe('request');
    expect((error as BudgetError).count).toBeGreaterThan(4000);
    expect((error as BudgetError).message).toContain('4000');
    expect(() =>
      planRequest({ state: big + big, questions: { a: noul } }, codec, prompts, end, { ...small, request: 100_000 }),
    ).toThrow(/longest question/);
    expect(() =>
      planRequest({ state: big, questions: { a: noul } }, codec, prompts, end, {
        request: 1e6,
        question: 1e6,
        context: 2000,
      }),
    ).toThrow(/context length/);
  });
});

describe('options in the order the caller sent them', () => {
  // A JS object lists integer-like keys first, ascending: {"3", "1", "2"} is {"1", "2", "3"} to
  // Object.keys. The order sent travels beside the request (EvaluateRequest.order, read from the
  // body's text: protocol/order.ts), and the prompt lists and labels the options in it.
  const question: Question = {
    type: 'choice',
    instructions: 'Which one?',
    criteria: JSON.parse('{"3": "three", "b": null, "1": "one", "2": "two"}') as Record<string, string | null>,
  };
  const sent = ['3', 'b', '1', '2'];
  const listed = (q: { suffix: number[] }) => [...codec.decode(q.suffix).matchAll(/^- (\w+)/gm)].map((m) => m[1]);

  it("are listed, labelled and answered in the order sent; without an order, in the object's own", () => {
    const plan = planRequest(
      { state: 'x', questions: { q: question }, order: [{ id: 'q', options: sent }] },
      codec,
      prompts,
      end,
      budgets,
    );
    const q = plan.questions[0]!;
    expect(listed(q)).toEqual(sent);
    expect(q.labels.map((l) => l.label)).toEqual(sent);
    expect(q.options).toEqual(sent);
    const answer = answerQuestions(plan.questions, [[0, -1, -2, -3]]).q as ChoiceAnswer;
    expect(
      Object.entries(answer.probabilities)
        .sort((a, b) => b[1] - a[1])
        .map(([k]) => k),
    ).toEqual(sent);
    expect(answer.choice).toBe('3');

    const own = planRequest({ state: 'x', questions: { q: question } }, codec, prompts, end, budgets);
    expect(listed(own.questions[0]!)).toEqual(['1', '2', '3', 'b']);
  });

  it('question ids are asked in the order sent', () => {
    const questions = JSON.parse('{"10": {"type": "noul"}, "9": {"type": "noul"}, "x": {"type": "noul"}}') as Record<
      string,
      Question
    >;
    const plan = planRequest(
      { state: 'x', questions, order: [{ id: '10' }, { id: 'x' }, { id: '9' }] },
      codec,
      prompts,
      end,
      budgets,
    );
    expect(plan.questions.map((q) => q.key)).toEqual(['10', 'x', '9']);
  });

  it('each rotation lists the options as sent, rotated, and its answer is put back in the order sent', () => {
    const plan = planRequest(
      { state: 'x', questions: { q: question }, order: [{ id: 'q', options: sent }] },
      codec,
      prompts,
      end,
      budgets,
      { rotations: 4 },
    );
    expect(plan.questions.map(listed)).toEqual([
      ['3', 'b', '1', '2'],
      ['b', '1', '2', '3'],
      ['1', '2', '3', 'b'],
      ['2', '3', 'b', '1'],
    ]);
    // Each rotation puts all its mass on its first listed option: averaged, every option gets 1/4.
    const answer = answerQuestions(
      plan.questions,
      plan.questions.map(() => [0, -1e9, -1e9, -1e9]),
    ).q as ChoiceAnswer;
    for (const option of sent) expect(answer.probabilities[option]).toBeCloseTo(0.25, 12);
  });
});

describe('a chat template without a system role (Gemma-style: it raises on one)', () => {
  // Gemma's template raises "System role not supported"; this one does the same in jinja.
  const template =
    "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}" +
    "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";

  it('is detected once, and the state rides in the user turn before the question, sharing the longest common prefix', async () => {
    const { cpSync, mkdtempSync, readFileSync, writeFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const dir = mkdtempSync(join(tmpdir(), 'assay-no-system-'));
    const source = await tinyFp32();
    cpSync(join(source, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    const config = JSON.parse(readFileSync(join(source, 'tokenizer_config.json'), 'utf8'));
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: template }));
    const gemmaLike = await TextCodec.load(dir);
    expect(codec.acceptsSystemRole).toBe(true);
    expect(gemmaLike.acceptsSystemRole).toBe(false);

    const plan = planRequest(
      { state: 'The invoice was paid.', questions: { n: noul, c: choice } },
      gemmaLike,
      prompts,
      end,
      budgets,
    );
    const whole = plan.questions.map((q) => gemmaLike.decode([...plan.prefix, ...q.suffix]));
    for (const text of whole) {
      expect(text.startsWith('<|im_start|>user\n')).toBe(true);
      expect(text).toContain('The invoice was paid.');
      expect(text).not.toContain('<|im_start|>system');
    }
    // The prefix is what the two prompts share, and it holds the state.
    expect(gemmaLike.decode(plan.prefix)).toContain('The invoice was paid.');
  });
});
