// The Kev pointer layout (`kev-pointer`): one causal row per question, as the authors' to_record()
// and encode() build it (jaredpalmer/kev, kev/api.py and kev/encoding.py; docs/families/kev-pointer.md):
//
//   row = <state> user(render(state))[:max_state − 1]  <question> user(render(instructions))
//         Σ_j ( <option_open> user(option_j) <option_close> )  <decide>
//
// each segment tokenized on its own (no special tokens added); decide_pos = the last token,
// opt_pos[j] = option j's <option_close>. A row over max_row tokens is refused (422). Pure: the
// tokenizer and the folder's settings are passed in.
import { BudgetError } from '../../errors.js';
import { boundedTokens } from '../shared/bounded.js';
import type { FamilyQuestion } from '../shared/question.js';
import { optionText, render, user } from './render.js';

/** The delimiter and pad ids (decision.json's special_tokens). */
export interface KevSpecials {
  state: number;
  question: number;
  optionOpen: number;
  optionClose: number;
  decide: number;
  pad: number;
}

export interface KevLayoutConfig {
  specials: KevSpecials;
  /** State tokens a row holds, its <state> token included (the reference's max_state: 8,192). */
  maxState: number;
  /** Tokens a row may have (state and one question's branch: 8,192). */
  maxRow: number;
}

export interface KevRow {
  ids: number[];
  /** Index of the <decide> token (the last). */
  decide: number;
  /** Index of each option's <option_close>, in option order. */
  opts: number[];
}

/** A question's row does not fit the model's row length: a 422 naming the limit. */
export class KevRowTooLong extends BudgetError {
  constructor(
    /** The question's branch: <question>, instructions, options, <decide>. */
    readonly branchTokens: number,
    count: number,
    limit: number,
  ) {
    super(
      'context',
      count,
      limit,
      false,
      `this model reads at most ${limit} tokens a row (the state and one question's instructions and options); ` +
        `this question's instructions and options take ${branchTokens} tokens, its row ${count}; ` +
        'shorten the options, the instructions or the state',
    );
    this.name = 'KevRowTooLong';
  }
}

/**
 * The options of a question, in the head's order, as text:
 * - noul: `no[: render(criteria.false)]`, `yes[: render(criteria.true)]` (the head's [false, true]);
 * - choice: `name[: render(description)]` in the order sent;
 * - score: render(level) for each level.
 */
export function kevOptions(q: FamilyQuestion): string[] {
  switch (q.type) {
    case 'noul':
      return [optionText('no', q.criteria?.false), optionText('yes', q.criteria?.true)];
    case 'choice':
      return q.options.map(([name, d]) => optionText(name, d));
    case 'score':
      return q.criteria.map((level) => render(level));
  }
}

/** The state's tokens as a row holds them: user(render(state)), its first max_state − 1 tokens. */
export function kevState(
  state: unknown,
  encode: (text: string) => number[],
  config: KevLayoutConfig,
): { ids: number[]; truncated: boolean } {
  const room = config.maxState - 1;
  // At most `room` tokens are read: a huge state is not tokenized whole (the first tokens are exact).
  const { ids, partial } = boundedTokens(encode, user(render(state)), room, 'start');
  return { ids: ids.slice(0, room), truncated: partial || ids.length > room };
}

/** A question's row over the state's tokens (kevState). Throws KevRowTooLong past max_row. */
export function kevRow(
  q: FamilyQuestion,
  stateIds: readonly number[],
  encode: (text: string) => number[],
  config: KevLayoutConfig,
): KevRow {
  const s = config.specials;
  const branch: number[] = [s.question, ...encode(user(render(q.instructions ?? null)))];
  const ends: number[] = [];
  for (const option of kevOptions(q)) {
    // Appended one by one: an option of tens of thousands of tokens would overflow the call's arguments.
    branch.push(s.optionOpen);
    for (const id of encode(user(option))) branch.push(id);
    branch.push(s.optionClose);
    ends.push(branch.length - 1);
  }
  branch.push(s.decide);
  const head = 1 + stateIds.length;
  const count = head + branch.length;
  if (count > config.maxRow) throw new KevRowTooLong(branch.length, count, config.maxRow);
  return {
    ids: [s.state, ...stateIds, ...branch],
    decide: count - 1,
    opts: ends.map((e) => head + e),
  };
}
