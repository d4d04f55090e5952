// A question as the Decision family's row (docs/families/decision-endpoint.md, "Request → row"),
// from the authors' question_row and segments/encode as the peer documents them
// (ollaya-dev/ollaya:docs/families/decision.md):
//
//   prefix  "Context:\n" + payload(state) + "\n\nTask type: " + type + "\nQuestion:\n" + payload(instructions) + "\nOptions:"
//   option  "\n<option>\n" + canonical({"key", "description"}) + "\n</option>"    (one per candidate)
//   suffix  the closing instruction + "\nDecision:"
//
// Each segment is tokenized on its own (no merge crosses a boundary, no special tokens added);
// cand_pos[j] is the last token of option j's segment, query_pos the row's last token. Nothing is
// cut: a row past the model's length, or a question the head cannot read, is refused (422).
// Content is data: every segment is tokenized as ordinary text, so a special-token string in caller
// text (`<|im_start|>`, `<|endoftext|>`) is its ordinary tokens, never the control token (upstream's
// tokenizer matches added tokens there; docs/families/decision-endpoint.md, "Content is data").
import { BudgetError } from '../../errors.js';
import type { FamilyQuestion } from '../shared/question.js';
import { canonicalJson, payload } from './canonical.js';

/** The closing instruction before "\nDecision:". */
export const DECISION_SUFFIX =
  '\n\nSelect the single option best supported by the context and instructions.\nDecision:';

/** What the layout reads of the folder (decision.json). */
export interface DecisionLayoutConfig {
  /** The longest row, in tokens (the state included). */
  maxLen: number;
  /** Choice options: at least 2, at most this. */
  maxOptions: number;
  /** Score levels: at least 2, at most this. */
  maxLevels: number;
  /** A choice option without a description: null as sent ('null'), or its key ('key'). */
  choiceNullDescription: 'null' | 'key';
}

export interface DecisionRow {
  ids: number[];
  /** The last token of each option segment, in option order (noul: false, true). */
  candPos: number[];
  /** The row's last token. */
  queryPos: number;
}

/** The family refuses a question (its options, levels or criteria, or the row's length): 422, naming the limit. */
export class DecisionRefused extends BudgetError {
  constructor(count: number, limit: number, message: string, atLeast = false) {
    super('context', count, limit, atLeast, message);
    this.name = 'DecisionRefused';
  }
}

/** The noul candidates' defaults, where criteria lack the key. */
export const NOUL_DEFAULTS = {
  false: 'The answer to the question is no.',
  true: 'The answer to the question is yes.',
} as const;

/** The question's candidates {key, description}, in the head's order; refuses what the head cannot read. */
export function candidates(q: FamilyQuestion, config: DecisionLayoutConfig): Array<[string, unknown]> {
  if (q.type === 'choice') {
    const n = q.options.length;
    if (n < 2 || n > config.maxOptions)
      throw new DecisionRefused(
        n,
        config.maxOptions,
        `this model reads a choice of 2 to ${config.maxOptions} options; this question has ${n}`,
      );
    return q.options.map(([name, d]) => [name, d ?? (config.choiceNullDescription === 'key' ? name : null)]);
  }
  if (q.type === 'score') {
    const n = q.criteria.length;
    if (n < 2 || n > config.maxLevels)
      throw new DecisionRefused(
        n,
        config.maxLevels,
        `this model reads a score of 2 to ${config.maxLevels} levels; this question has ${n}`,
      );
    return q.criteria.map((level, i) => [String(i), level]);
  }
  const criteria = (q.criteria ?? {}) as Record<string, unknown>;
  const other = Object.keys(criteria).filter((k) => k !== 'true' && k !== 'false');
  if (other.length > 0)
    throw new DecisionRefused(
      other.length,
      0,
      `this model reads noul criteria with the keys "true" and "false" only; got ${other.map((k) => JSON.stringify(k)).join(', ')}`,
    );
  const pick = (k: 'true' | 'false'): unknown => (k in criteria ? criteria[k] : NOUL_DEFAULTS[k]);
  return [
    ['false', pick('false')],
    ['true', pick('true')],
  ];
}

/** The text every question's prefix segment begins with: the context, up to the question's type. */
export function stateSegment(state: unknown): string {
  return `Context:\n${payload(state ?? null)}\n\nTask type:`;
}

/** The row's text segments: the prefix, one per candidate, the suffix. */
export function segments(q: FamilyQuestion, state: unknown, config: DecisionLayoutConfig): string[] {
  const cands = candidates(q, config);
  const prefix = `${stateSegment(state)} ${q.type}\nQuestion:\n${payload(q.instructions ?? null)}\nOptions:`;
  const options = cands.map(([key, description]) => `\n<option>\n${canonicalJson({ key, description })}\n</option>`);
  return [prefix, ...options, DECISION_SUFFIX];
}

/**
 * The row of a question: its segments tokenized one by one (`encode`: ordinary text, no special
 * tokens added).
 * `stateTokens` (optional) is a lower bound of the state's tokens, to refuse a huge state before
 * the prefix is tokenized.
 */
export function decisionRow(
  q: FamilyQuestion,
  state: unknown,
  encode: (text: string) => number[],
  config: DecisionLayoutConfig,
): DecisionRow {
  const parts = segments(q, state, config);
  const ids: number[] = [];
  const candPos: number[] = [];
  parts.forEach((text, i) => {
    // One by one: a segment of tens of thousands of tokens would overflow the call's arguments.
    for (const id of encode(text)) ids.push(id);
    if (i > 0 && i < parts.length - 1) candPos.push(ids.length - 1);
  });
  if (ids.length > config.maxLen) throw tooLong(ids.length, config.maxLen, false);
  return { ids, candPos, queryPos: ids.length - 1 };
}

/** The refusal of a row past the model's length. */
export function tooLong(count: number, limit: number, atLeast: boolean): DecisionRefused {
  return new DecisionRefused(
    count,
    limit,
    `this model reads at most ${limit} tokens a question (the state, the question and its options; ` +
      `nothing is cut); this question needs ${atLeast ? 'more than ' : ''}${count}`,
    atLeast,
  );
}
