// Each question's part of a request's usage (EvaluateResult.usageParts), what lets a batch runner
// merge lines that share a state into one request and still report each line's usage as if it was
// sent alone: for requests of 1..N questions on one state, the parts add up to the usage, and for
// any question (and any subset of them) shared + its parts is exactly the usage of that request
// sent alone. The merged request's answers equal each question's alone within 1e-4, the tolerance
// of the engine's packing-across-requests tests (test/engine/batching.test.ts). Covered: the tiny
// decoder through the engine thread (with option rotations: a choice question asked several
// times), a decider-labels folder (label-token rows on a shared state segment) and a row family
// replica (Decision: every row one question's, nothing shared). A template without a system role
// shares the prompts' longest common prefix, which depends on the questions asked: no parts there.
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planRequest } from '../../src/engine/prompting/plan.js';
import { promptSet } from '../../src/engine/prompting/prompts.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import { loadEvaluator, type EngineConfig, type Evaluator } from '../../src/engine/index.js';
import type { EvaluateRequest, EvaluateResult, Question, Usage } from '../../src/engine/types.js';
import { ensureDecisionReplica } from '../../tools/families/decision/replica.js';
import { ensureDeciderReplica } from '../../tools/families/decider/replica.js';
import { choice, expectClose, noul, score, tinyFp32 } from './fixtures.js';

const STATE = { ticket: 4411, body: 'The parcel arrived two days late and the lamp inside was broken.' };

/** Six questions of every type; one id named like an Object.prototype member (an own key all the way). */
const QUESTIONS = JSON.parse(
  JSON.stringify({
    late: noul,
    topic: choice,
    severity: score,
    refund: { type: 'noul', instructions: 'Does the customer ask for a refund?' },
    channel: { type: 'choice', instructions: 'Which channel?', criteria: { mail: null, phone: 'a call', chat: null } },
    '1': { type: 'score', instructions: 'How angry?', criteria: ['calm', 'annoyed', 'furious'] },
  }).replace('"refund"', '"__proto__"'),
) as Record<string, Question>;

const add = (a: Usage, b: Usage): Usage => ({
  input_tokens: a.input_tokens + b.input_tokens,
  output_tokens: a.output_tokens + b.output_tokens,
});

function pick(questions: Record<string, Question>, ids: readonly string[]): Record<string, Question> {
  const out: Record<string, Question> = {};
  for (const id of ids) Object.defineProperty(out, id, { value: questions[id], enumerable: true, writable: true });
  return out;
}

/** shared + the parts of `ids` (every id an own key of the parts). */
function partsOf(result: EvaluateResult, ids: readonly string[]): Usage {
  const parts = result.usageParts!;
  let sum = parts.shared;
  for (const id of ids) {
    expect(Object.hasOwn(parts.questions, id), id).toBe(true);
    sum = add(sum, parts.questions[id]!);
  }
  return sum;
}

/**
 * For requests of 1..N of `questions` on one state: the parts name exactly the request's ids and
 * add up to its usage. Then each question alone, and two subsets, cost shared + their parts of the
 * whole request, and the whole request's answers equal each question's alone.
 */
async function expectExactParts(e: Evaluator, questions: Record<string, Question>, shared?: 'none'): Promise<void> {
  const ids = Object.keys(questions);
  const ask = (sub: readonly string[]) =>
    e.evaluate({ state: STATE, questions: pick(questions, sub) } satisfies EvaluateRequest);
  let whole!: EvaluateResult;
  for (let n = 1; n <= ids.length; n++) {
    const r = await ask(ids.slice(0, n));
    expect(r.usageParts, `${n} questions`).toBeDefined();
    expect(Object.keys(r.usageParts!.questions).sort()).toEqual(ids.slice(0, n).sort());
    expect(partsOf(r, ids.slice(0, n))).toEqual(r.usage);
    if (shared === 'none') expect(r.usageParts!.shared).toEqual({ input_tokens: 0, output_tokens: 0 });
    else expect(r.usageParts!.shared.input_tokens).toBeGreaterThan(0);
    whole = r;
  }
  for (const id of ids) {
    const alone = await ask([id]);
    expect(partsOf(whole, [id]), id).toEqual(alone.usage);
    expect(alone.usageParts!.questions[id]).toEqual(whole.usageParts!.questions[id]);
    expectClose(alone.answers[id]!, whole.answers[id]!, 1e-4);
  }
  for (const sub of [ids.slice(1, 3), [ids[0]!, ids[ids.length - 1]!]]) {
    expect(partsOf(whole, sub), sub.join('+')).toEqual((await ask(sub)).usage);
  }
}

describe('usageParts', () => {
  const open: Evaluator[] = [];
  const load = async (config: EngineConfig) => {
    const e = await loadEvaluator(config);
    open.push(e);
    return e;
  };
  afterAll(async () => {
    await Promise.all(open.map((e) => e.close()));
  });

  it('tiny decoder, through the engine thread, a choice question asked in 3 rotations: exact per question and per subset', async () => {
    const e = await load({ modelDir: await tinyFp32(), threads: 1, optionRotations: 3 });
    await expectExactParts(e, QUESTIONS);
  });

  it('tiny decoder, one pass per question and the prefix cache off: the same parts (usage does not depend on the strategy)', async () => {
    const modelDir = await tinyFp32();
    const packed = await load({ modelDir, threads: 1, engineThread: false });
    const plain = await load({
      modelDir,
      threads: 1,
      engineThread: false,
      packQuestions: false,
      prefixCacheBytes: 0,
    });
    const r = { state: STATE, questions: QUESTIONS };
    const [a, b] = [await packed.evaluate(r), await plain.evaluate(r)];
    expect(b.usageParts).toEqual(a.usageParts);
    expect(b.usage).toEqual(a.usage);
  });

  it('decider-labels (label-token rows on the state segment): exact per question and per subset', async () => {
    const e = await load({ modelDir: await ensureDeciderReplica(), variant: 'fp32', threads: 1, engineThread: false });
    await expectExactParts(e, QUESTIONS);
  });

  it('a row family (the Decision replica): nothing shared, each question its row, exact', async () => {
    const e = await load({ modelDir: ensureDecisionReplica(), threads: 1, engineThread: false });
    await expectExactParts(e, QUESTIONS, 'none');
  });

  it('a template without a system role shares a common prefix that depends on the questions: no parts', async () => {
    const template =
      "{% for m in messages %}{% if m['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}" +
      "<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}";
    const source = await tinyFp32();
    const dir = mkdtempSync(join(tmpdir(), 'assay-no-system-'));
    cpSync(join(source, 'tokenizer.json'), join(dir, 'tokenizer.json'));
    const config = JSON.parse(readFileSync(join(source, 'tokenizer_config.json'), 'utf8')) as object;
    writeFileSync(join(dir, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: template }));
    const gemmaLike = await TextCodec.load(dir);
    const withSystem = await TextCodec.load(source);
    const budgets = { request: 64_000, question: 32_000, context: 32_768 };
    const plan = (codec: TextCodec, questions: Record<string, Question>, rotations = 1) =>
      planRequest({ state: STATE, questions }, codec, promptSet(), codec.eosTokenId!, budgets, { rotations });
    // A choice question alone, in 3 rotations: its prompts share their instructions too, so the
    // prefix alone is longer than beside another question, and no split adds up for both.
    const alone = plan(gemmaLike, { c: choice }, 3);
    const both = plan(gemmaLike, { c: choice, n: noul }, 3);
    expect(alone.prefix.length).toBeGreaterThan(both.prefix.length);
    expect(alone.usageParts).toBeUndefined();
    expect(both.usageParts).toBeUndefined();
    // With a system role the prefix is the system turn whichever questions are asked.
    expect(plan(withSystem, { c: choice }, 3).prefix).toEqual(plan(withSystem, { c: choice, n: noul }, 3).prefix);
    expect(plan(withSystem, { c: choice, n: noul }, 3).usageParts).toBeDefined();
  });
});
