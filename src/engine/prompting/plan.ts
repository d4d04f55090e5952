// Planning a request: prompts → tokens, the shared prefix, each question's suffix, its labels,
// usage and budgets. Pure (no model passes), so it is cheap and fully testable.
import { ContentTooLarge, renderContent } from './content.js';
import { BudgetError } from '../errors.js';
import { labelSequences, startsWith, type LabelSequence } from './labels.js';
import type { OptionList, PromptSet } from './prompts.js';
import { optionEntries, questionOrder } from '../../protocol/index.js';
import type { ChatMessage, TextCodec } from './tokenizer.js';
import type { EvaluateRequest, Question, Usage, UsageParts } from '../types.js';

export interface PlannedQuestion {
  key: string;
  /** The caller's question (the answer is built on it; a rotation's prompt lists its options in another order). */
  question: Question;
  /** A choice question's option names in the order the caller sent them (the answer's order). */
  options?: string[];
  /** A rotation of a choice question's options: label i answers option `order[i]` of `options`. */
  order?: number[];
  /** Tokens after the shared prefix, up to where the answer starts. Never empty. */
  suffix: number[];
  labels: LabelSequence[];
}

export interface Plan {
  /** Tokens every question's prompt starts with: the template's opening and the state. */
  prefix: number[];
  questions: PlannedQuestion[];
  usage: Usage;
  /**
   * `usage` per part (EvaluateResult.usageParts): only where the prefix does not depend on which
   * questions are asked, so that any of them asked alone would be charged the same prefix.
   */
  usageParts?: UsageParts;
  /**
   * A prompt contract's answers (its family's descriptor), when they are not one per planned question:
   * each answer's question and the planned questions (rows) it reads. Absent: Assay's own prompt.
   */
  readout?: { family: string; questions: ReadQuestion[] };
}

/** An answer's question and the indices of the planned questions (rows) it is read from. */
export interface ReadQuestion {
  key: string;
  question: Question;
  options?: string[];
  rows: number[];
}

export interface Budgets {
  request: number;
  question: number;
  context: number;
}

export interface PlanOptions {
  /**
   * Option-order bias control: each choice question is asked this many times, its options rotated
   * cyclically by evenly spaced shifts (at most one per option), and the answers averaged per
   * option. 1 (default): asked once, in the caller's order.
   */
  rotations?: number;
}

/** A question as one prompt asks it: a choice question's options in the order listed (and labelled). */
interface Asked {
  key: string;
  question: Question;
  options?: string[];
  /** The options as the prompt lists them: name and description. */
  listed?: OptionList;
  order?: number[];
}

/**
 * The questions as asked, in the order sent (request.order): each choice question once per
 * rotation of its options (shift 0 first, in the caller's order), rotated cyclically by evenly
 * spaced shifts. Options are an explicit list: an object would list "1" before "3" whatever the order.
 */
function asked(request: EvaluateRequest, rotations: number): Asked[] {
  return questionOrder(request.questions, request.order).flatMap(({ id: key, options: sent }): Asked[] => {
    const question = request.questions[key]!;
    if (question.type !== 'choice') return [{ key, question }];
    const listed = optionEntries(question.criteria, sent);
    const options = listed.map(([name]) => name);
    const n = listed.length;
    const k = rotations <= 1 ? 1 : Math.min(rotations, n);
    return Array.from({ length: k }, (_, j) => {
      if (j === 0) return { key, question, options, listed };
      const shift = Math.floor((j * n) / k);
      const order = listed.map((_, i) => (i + shift) % n);
      return { key, question, options, listed: order.map((i) => listed[i]!), order };
    });
  });
}

export function planRequest(
  request: EvaluateRequest,
  codec: TextCodec,
  prompts: PromptSet,
  endToken: number,
  budgets: Budgets,
  options: PlanOptions = {},
): Plan {
  // A text longer than budget × the longest token (in bytes) cannot fit the budget: refused by its
  // length, before it is rendered in full or tokenized.
  const maxChars = budgets.request * codec.maxTokenBytes;
  const entries = asked(request, options.rotations ?? 1);
  let stateText: string;
  let userTexts: string[];
  try {
    stateText = renderContent(request.state, maxChars);
    let total = stateText.length;
    userTexts = entries.map((e) => {
      const text = prompts.user(e.question, maxChars, e.listed);
      total += text.length;
      if (total > maxChars) throw new ContentTooLarge(maxChars);
      return text;
    });
  } catch (error) {
    if (error instanceof ContentTooLarge) throw new BudgetError('request', budgets.request, budgets.request, true);
    throw error;
  }
  rejectOversized(stateText, userTexts, codec, budgets);
  const system = prompts.system(stateText);
  const memo = new Map<string, number[]>(); // the state's tokens, encoded once for all prompts

  let prompts_: number[][];
  let prefix: number[];
  // Whether the prefix is the system turn, the same whichever questions are asked (usageParts).
  let fixedPrefix = false;
  // Content is data: the only control tokens in a prompt are the template's own (encodeChat).
  if (codec.acceptsSystemRole) {
    // State in the system turn, question in the user turn: the cut right after the system turn's
    // closing control token is exact (the text between control tokens is encoded whole).
    prompts_ = userTexts.map((user) => codec.encodeChat(chat(system, user), true, memo));
    prefix = untilLastAddedToken(codec.encodeChat([{ role: 'system', content: system }], false, memo), codec);
    fixedPrefix = prompts_.every((p) => startsWith(p, prefix) && p.length > prefix.length);
    if (!fixedPrefix) prefix = commonPrefix(prompts_);
  } else {
    // A template without a system role: one user turn, the state first; share the longest common prefix.
    prompts_ = userTexts.map((user) =>
      codec.encodeChat([{ role: 'user', content: `${system}\n\n${user}` }], true, memo),
    );
    prefix = commonPrefix(prompts_);
  }

  const questions: PlannedQuestion[] = entries.map((e, i) => ({
    key: e.key,
    question: e.question,
    ...(e.options ? { options: e.options } : {}),
    ...(e.order ? { order: e.order } : {}),
    suffix: prompts_[i]!.slice(prefix.length),
    labels: labelSequences(prompts.labels(e.question, e.listed), (text) => codec.encodeText(text), endToken),
  }));

  const suffixTotal = questions.reduce((n, q) => n + q.suffix.length, 0);
  const usage = {
    input_tokens: prefix.length + suffixTotal,
    output_tokens: questions.reduce((n, q) => n + q.labels.reduce((m, l) => m + l.tokens.length, 0), 0),
  };
  const longestQuestion = prefix.length + Math.max(...questions.map((q) => q.suffix.length));
  const longestAnswer =
    prefix.length +
    Math.max(...questions.map((q) => q.suffix.length + Math.max(...q.labels.map((l) => l.tokens.length))));
  if (usage.input_tokens > budgets.request) throw new BudgetError('request', usage.input_tokens, budgets.request);
  if (longestQuestion > budgets.question) throw new BudgetError('question', longestQuestion, budgets.question);
  if (longestAnswer > budgets.context) throw new BudgetError('context', longestAnswer, budgets.context);
  // A common prefix (no system role, or a system turn some prompt does not start with) depends on
  // the questions asked: the prompts of a subset may share more of it (a choice question's
  // rotations share their instructions), so no per-question split adds up to a subset's usage.
  return fixedPrefix
    ? { prefix, questions, usage, usageParts: usagePartsOf(prefix, questions) }
    : { prefix, questions, usage };
}

/**
 * A plan's usage per part: the prefix (the state, encoded once) shared, and per question id its
 * prompts' suffixes and their labels' tokens (a choice question's rotations, a score question's
 * rows: all of its planned questions). Sums to the plan's usage; exact per question only when the
 * prefix does not depend on the questions asked.
 */
export function usagePartsOf(prefix: readonly number[], questions: readonly PlannedQuestion[]): UsageParts {
  // Own keys: a question id may be named like an Object.prototype member.
  const parts = Object.create(null) as Record<string, Usage>;
  for (const q of questions) {
    const part = (parts[q.key] ??= { input_tokens: 0, output_tokens: 0 });
    part.input_tokens += q.suffix.length;
    for (const l of q.labels) part.output_tokens += l.tokens.length;
  }
  return { shared: { input_tokens: prefix.length, output_tokens: 0 }, questions: parts };
}

/** Tokens counted piece by piece may differ from one-go tokens by a few at each cut. */
const PIECE_CHARS = 16_384;
const SLACK_PER_PIECE = 8;

/**
 * A request far over budget is refused after tokenizing about a budget's worth of it, not all of
 * it: an 8 MiB body (a huge state, huge instructions, or tens of thousands of small questions each
 * rendered with the state) would otherwise hold the event loop for seconds. Counting stops once
 * over; the exact check on the whole prompts follows.
 */
function rejectOversized(stateText: string, questionTexts: string[], codec: TextCodec, budgets: Budgets): void {
  const [smallest, smallestLimit] = (Object.entries(budgets) as Array<[keyof Budgets, number]>).reduce((a, b) =>
    b[1] < a[1] ? b : a,
  );
  // Byte-level BPE never makes more tokens than bytes: texts that fit the smallest budget in bytes
  // cannot break any budget, and need no counting here (the usual request).
  let bytes = Buffer.byteLength(stateText);
  for (const text of questionTexts) bytes += Buffer.byteLength(text);
  if (bytes <= smallestLimit) return;
  const state = lowerBound(stateText, smallestLimit, codec);
  if (state.over) throw new BudgetError(smallest, state.count, smallestLimit, true);
  let total = state.count;
  for (const text of questionTexts) {
    const q = lowerBound(text, budgets.question - state.count, codec);
    if (q.over) throw new BudgetError('question', state.count + q.count, budgets.question, true);
    total += q.count;
    if (total > budgets.request) throw new BudgetError('request', total, budgets.request, true);
  }
}

/**
 * At least how many tokens `text` has (counted alone; the slack covers tokens that merge across a
 * cut): short texts are simply encoded (many small questions add up too), long ones in pieces up
 * to `cap`; a text with fewer bytes than `cap` can never exceed it alone.
 */
function lowerBound(text: string, cap: number, codec: TextCodec): { count: number; over: boolean } {
  if (text.length <= 2048) return { count: Math.max(0, codec.encodeText(text).length - 2), over: false };
  if (Buffer.byteLength(text) <= cap) return { count: 0, over: false };
  let count = 0;
  let pieces = 0;
  for (let start = 0; start < text.length; pieces++) {
    let end = Math.min(text.length, start + PIECE_CHARS);
    if (end < text.length && /[\uDC00-\uDFFF]/.test(text[end]!)) end++; // keep surrogate pairs whole
    count += codec.encodeText(text.slice(start, end)).length;
    start = end;
    const slack = SLACK_PER_PIECE * (pieces + 1);
    if (count > cap + slack) return { count: count - slack, over: true };
  }
  return { count: Math.max(0, count - SLACK_PER_PIECE * pieces), over: false };
}

function chat(system: string, user: string): ChatMessage[] {
  return [
    { role: 'system', content: system },
    { role: 'user', content: user },
  ];
}

/** Drops trailing ordinary tokens so the prefix ends right after a control token (content has none). */
function untilLastAddedToken(tokens: number[], codec: TextCodec): number[] {
  let end = tokens.length;
  while (end > 0 && !codec.isAddedToken(tokens[end - 1]!)) end--;
  return tokens.slice(0, end);
}

/** Longest common prefix of all prompts, leaving each at least one token of its own. */
function commonPrefix(prompts: number[][]): number[] {
  const shortest = Math.min(...prompts.map((p) => p.length));
  const first = prompts[0] ?? [];
  let n = 0;
  while (n < shortest - 1 && prompts.every((p) => p[n] === first[n])) n++;
  return first.slice(0, n);
}
