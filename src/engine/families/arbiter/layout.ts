// A question as the Arbiter family's row (docs/families/arbiter-fixed.md), from the reference
// layout as the peer documents it (ollaya-dev/ollaya:docs/families/arbiter.md, ArbiterLayout.encode):
//
//   "State: " + render(state) + "\n\nQuestion: " + render(instructions) + "\n\nOptions:\n" + block + "\n\nAnswer:"
//
// tokenized whole as ordinary text (content is data: a special-token string in caller text, such as
// `<start_of_turn>` or `<bos>`, is its ordinary tokens, never the control token; upstream's tokenizer
// matches added tokens there), no special tokens added; the fixed 24-slot head is read at the row's last token
// (last_pos). The options block and the slots by type:
//   noul    "T. Yes / True\nF. No / False"            slots 0 (true), 1 (false)
//   choice  "A. <option>\nB. <option>…" (1..16)       slots 2..17 (A..P)
//   score   "0\n1\n2\n3\n4\n5" (exactly 6 levels)      slots 18..23
// What the slots cannot hold is refused (422 naming the limit), as is a row past the folder's length.
import { BudgetError } from '../../errors.js';
import type { FamilyQuestion } from '../shared/question.js';
import { render } from './render.js';

/** The head's slots: noul T/F, choice A..P, score 0..5. */
export const SLOTS = { noul: 0, choice: 2, score: 18, total: 24, maxOptions: 16, levels: 6 } as const;

export interface ArbiterRow {
  ids: number[];
  lastPos: number;
  /** The head's slots the question reads, in answer order (noul: true, false). */
  slots: number[];
}

/** The family refuses a question: 422, naming the limit. */
export class ArbiterRefused extends BudgetError {
  constructor(count: number, limit: number, message: string, atLeast = false) {
    super('context', count, limit, atLeast, message);
    this.name = 'ArbiterRefused';
  }
}

const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

/** A choice option's line text: its name, or "name: description" when it has one (not null, not ""). */
export function optionText(name: string, description: unknown): string {
  const d = render(description);
  return d === '' ? name : `${name}: ${d}`;
}

/** The options block and the slots read; refuses what the 24 slots cannot hold. */
export function optionsBlock(q: FamilyQuestion): { block: string; slots: number[] } {
  if (q.type === 'noul') return { block: 'T. Yes / True\nF. No / False', slots: [SLOTS.noul, SLOTS.noul + 1] };
  if (q.type === 'choice') {
    const n = q.options.length;
    if (n < 1 || n > SLOTS.maxOptions)
      throw new ArbiterRefused(
        n,
        SLOTS.maxOptions,
        `this model's head has ${SLOTS.maxOptions} choice slots (A to P): a choice of 1 to ${SLOTS.maxOptions} options; this question has ${n}`,
      );
    const lines = q.options.map(([name, d], i) => `${String.fromCharCode(65 + i)}. ${optionText(name, d)}`);
    return { block: lines.join('\n'), slots: range(SLOTS.choice, n) };
  }
  const n = q.criteria.length;
  if (n !== SLOTS.levels)
    throw new ArbiterRefused(
      n,
      SLOTS.levels,
      `this model's head has ${SLOTS.levels} score slots (levels 0 to 5): a score of exactly ${SLOTS.levels} levels; this question has ${n}`,
    );
  return { block: range(0, n).join('\n'), slots: range(SLOTS.score, n) };
}

/** The text every question's row begins with: the state, up to the question. */
export function stateSegment(state: unknown): string {
  return `State: ${render(state)}\n\nQuestion:`;
}

/** The row's text. */
export function arbiterText(q: FamilyQuestion, state: unknown): { text: string; slots: number[] } {
  const { block, slots } = optionsBlock(q);
  const text = `${stateSegment(state)} ${render(q.instructions)}\n\nOptions:\n${block}\n\nAnswer:`;
  return { text, slots };
}

/** The row of a question (`encode`: ordinary text, no special tokens added); a row over `maxLen` tokens is refused. */
export function arbiterRow(
  q: FamilyQuestion,
  state: unknown,
  encode: (text: string) => number[],
  maxLen: number,
): ArbiterRow {
  const { text, slots } = arbiterText(q, state);
  const ids = encode(text);
  if (ids.length > maxLen) throw tooLong(ids.length, maxLen, false);
  return { ids, lastPos: ids.length - 1, slots };
}

/** The refusal of a row past the model's length. */
export function tooLong(count: number, limit: number, atLeast: boolean): ArbiterRefused {
  return new ArbiterRefused(
    count,
    limit,
    `this model reads at most ${limit} tokens a question (the state, the question and its options; ` +
      `nothing is cut); this question needs ${atLeast ? 'more than ' : ''}${count}`,
    atLeast,
  );
}
