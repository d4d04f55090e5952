// The decider layout as the decoder engine's Plan: the context is the shared prefix (its KV encoded
// once, reused by every row and, through the prefix cache, by later requests on the same state),
// each row a planned question whose suffix is the row's piece and whose labels are single label
// tokens read at the slot; `readout` says which rows each answer reads (readout.ts).
import { BudgetError } from '../../errors.js';
import type { Budgets, Plan, PlannedQuestion } from '../../prompting/plan.js';
import type { TextCodec } from '../../prompting/tokenizer.js';
import type { EvaluateRequest } from '../../types.js';
import type { LabelTable } from './labels.js';
import { deciderLayout, type DeciderTokenizer } from './layout.js';

/** What a planner needs of a decider folder (plain data: it crosses to the planner threads). */
export interface DeciderSettings {
  labels: LabelTable;
}

/** The layout's tokenizer over the engine's codec: every segment encoded alone, as data. */
export function deciderTokenizer(codec: TextCodec, settings: DeciderSettings): DeciderTokenizer {
  return { encode: (text) => codec.encodeText(text, undefined, true), labels: settings.labels };
}

/**
 * The tokenizer, refusing a request whose question texts alone hold more characters than the
 * request budget's tokens can (the budget × the longest token, in characters): such a request is over
 * budget, and is refused before megabytes of instructions are tokenized. The context is bounded by
 * its cut (layout.ts), so its text is not counted.
 */
function guarded(tok: DeciderTokenizer, budget: number, maxTokenBytes: number): DeciderTokenizer {
  const maxChars = budget * maxTokenBytes;
  let chars = 0;
  return {
    ...tok,
    encode: (text) => {
      if (!text.startsWith('Context:\n') && (chars += text.length) > maxChars)
        throw new BudgetError('request', budget, budget, true);
      return tok.encode(text);
    },
  };
}

export function planDecider(
  request: EvaluateRequest,
  codec: TextCodec,
  settings: DeciderSettings,
  budgets: Budgets,
): Plan {
  const layout = deciderLayout(
    request,
    guarded(deciderTokenizer(codec, settings), budgets.request, codec.maxTokenBytes),
  );
  const owner = new Map<number, (typeof layout.questions)[number]>();
  for (const q of layout.questions) for (const r of q.rows) owner.set(r, q);
  const questions: PlannedQuestion[] = layout.rows.map((row, i) => ({
    key: row.key,
    question: owner.get(i)!.question,
    suffix: row.piece,
    labels: row.labels.map((id, j) => ({ label: settings.labels.strings[j]!, tokens: [id] })),
  }));
  const prefix = layout.ctx;
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
  return {
    prefix,
    questions,
    usage,
    readout: {
      family: 'decider-labels',
      questions: layout.questions.map((q) => ({
        key: q.key,
        question: q.question,
        ...(q.options ? { options: q.options } : {}),
        rows: q.rows,
      })),
    },
  };
}
