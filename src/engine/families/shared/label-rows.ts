// A label-token contract's rows as the decoder engine's plan (the prompt-contract families): the
// state's segment is the shared prefix (its KV encoded once, reused by every row and, through the
// prefix cache, by later requests on the same state), each row a planned question whose suffix is
// the row's piece and whose labels are single label tokens read at the slot (the row's last token).
import { BudgetError } from '../../errors.js';
import { usagePartsOf, type Budgets, type PlannedQuestion } from '../../prompting/plan.js';
import type { Question, Usage, UsageParts } from '../../types.js';

/** One row of a contract: its question, its tokens after the prefix, its label ids and their strings. */
export interface LabelRow {
  key: string;
  question: Question;
  piece: number[];
  labels: number[];
  strings: readonly string[];
}

/**
 * `encode`, refusing a request whose question texts alone hold more characters than the request
 * budget's tokens can (the budget × the longest token, in characters): such a request is over
 * budget, and is refused before megabytes of instructions are tokenized. Texts `counted` rejects
 * (the state, bounded by its cut) are not counted.
 */
export function budgetGuard(
  encode: (text: string) => number[],
  budget: number,
  maxTokenBytes: number,
  counted: (text: string) => boolean = () => true,
): (text: string) => number[] {
  const maxChars = budget * maxTokenBytes;
  let chars = 0;
  return (text) => {
    if (counted(text) && (chars += text.length) > maxChars) throw new BudgetError('request', budget, budget, true);
    return encode(text);
  };
}

/**
 * The rows as planned questions, with the usage and its parts (the prefix, the state's segment, is
 * the same whichever questions are asked: each question's part is its rows); throws BudgetError
 * past a budget or the model's context.
 */
export function plannedRows(
  prefix: readonly number[],
  rows: readonly LabelRow[],
  budgets: Budgets,
): { questions: PlannedQuestion[]; usage: Usage; usageParts: UsageParts } {
  const questions: PlannedQuestion[] = rows.map((row) => ({
    key: row.key,
    question: row.question,
    suffix: row.piece,
    labels: row.labels.map((id, j) => ({ label: row.strings[j]!, tokens: [id] })),
  }));
  const suffixTotal = questions.reduce((n, q) => n + q.suffix.length, 0);
  const usage = {
    input_tokens: prefix.length + suffixTotal,
    output_tokens: questions.reduce((n, q) => n + q.labels.length, 0),
  };
  // The answer is one token after the slot: a row must fit the model's context with it.
  const longestRow = prefix.length + Math.max(...questions.map((q) => q.suffix.length));
  if (usage.input_tokens > budgets.request) throw new BudgetError('request', usage.input_tokens, budgets.request);
  if (longestRow > budgets.question) throw new BudgetError('question', longestRow, budgets.question);
  if (longestRow + 1 > budgets.context) throw new BudgetError('context', longestRow + 1, budgets.context);
  return { questions, usage, usageParts: usagePartsOf(prefix, questions) };
}
