// A request as a causal-row family's rows, each an explicit pair of token segments: the state's part,
// the tokens every row of the request begins with (identical across its rows, held once in the
// plan), then the question's own part. The layout says where the state ends; the head's positions
// index the whole row. Whole rows are the state's part then the question's (wholeRow); an execution
// that reads the state once and continues each question's row from there (prefix reuse) reads the
// same parts.
import type { FamilyPlan, FamilyQuestion, FamilyRow } from '../rows/family.js';
import type { askedInOrder } from '../shared/question.js';

/** One question's causal row: its own part after the plan's state part, and where the head reads it. */
export interface CausalRow extends FamilyRow {
  /** Tokens of the whole row: the state's part and the question's. */
  readonly tokens: number;
  /** The question's part: the row's tokens after the state's. */
  question: number[];
  /** The head's positions in the whole row, by graph input: one index (a row's last token), or one per option. */
  at: Record<string, number | number[]>;
  /** Columns of the head's output the row reads (its options); absent: every column. */
  width?: number;
}

export interface CausalPlan extends FamilyPlan<CausalRow> {
  /** The state's part: the tokens every row of the request begins with. */
  state: number[];
}

/** A whole row, as one pass over whole rows takes it. */
export interface WholeRow {
  ids: number[];
  at: Record<string, number | number[]>;
  width?: number;
}

/** A row of the plan, whole: the state's part, then the question's. */
export function wholeRow(plan: CausalPlan, row: CausalRow): WholeRow {
  const out: WholeRow = { ids: plan.state.concat(row.question), at: row.at };
  if (row.width !== undefined) out.width = row.width;
  return out;
}

/** Every row of the plan, whole. */
export function wholeRows(plan: CausalPlan): WholeRow[] {
  return plan.rows.map((r) => wholeRow(plan, r));
}

/**
 * How many tokens of `state` every row begins with: the state's part of a layout that tokenizes
 * the state and its question as one text (a merge across their boundary would make the state's
 * own tokens differ from the row's at the end).
 */
export function sharedLength(state: readonly number[], rows: ReadonlyArray<readonly number[]>): number {
  let n = state.length;
  for (const ids of rows) {
    let i = 0;
    while (i < n && i < ids.length && ids[i] === state[i]) i++;
    n = i;
  }
  return n;
}

/** A causal row from its whole ids, the length of the state's part, and the head's positions. */
export function causalRow(
  ids: readonly number[],
  stateLength: number,
  at: Record<string, number | number[]>,
  width?: number,
): CausalRow {
  const row: CausalRow = { tokens: ids.length, question: ids.slice(stateLength), at };
  if (width !== undefined) row.width = width;
  return row;
}

/** A question's whole row as a layout that tokenizes it as one text builds it. */
export interface TextRow {
  ids: number[];
  at: Record<string, number | number[]>;
  width?: number;
}

/**
 * A plan of one row per question, each row one text tokenized whole (the state's text, then the
 * question's): the state's part is as far as every row begins with the tokens of `stateText` (the
 * text before the question's own, tokenized alone).
 */
export function rowPerQuestion(
  asked: ReturnType<typeof askedInOrder>,
  encode: (text: string) => number[],
  stateText: string,
  rowOf: (layout: ReturnType<typeof askedInOrder>[number]['layout']) => TextRow,
): CausalPlan {
  const made = asked.map((a) => rowOf(a.layout));
  const ids = made.map((r) => r.ids);
  const stateLength = ids.length ? sharedLength(encode(stateText), ids) : 0;
  const questions = asked.map(({ key, question, options }, i): FamilyQuestion => {
    const q: FamilyQuestion = { key, question, rows: [i] };
    if (options) q.options = options;
    return q;
  });
  const rows = made.map((r) => causalRow(r.ids, stateLength, r.at, r.width));
  return { questions, rows, state: ids[0]?.slice(0, stateLength) ?? [] };
}
