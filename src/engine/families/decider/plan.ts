// The decider layout as the decoder engine's Plan: the context is the shared prefix (its KV encoded
// once, reused by every row and, through the prefix cache, by later requests on the same state),
// each row a planned question whose suffix is the row's piece and whose labels are single label
// tokens read at the slot; `readout` says which rows each answer reads (readout.ts).
import type { Budgets, Plan } from '../../prompting/plan.js';
import type { TextCodec } from '../../prompting/tokenizer.js';
import type { EvaluateRequest } from '../../types.js';
import { budgetGuard, plannedRows } from '../shared/label-rows.js';
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

export function planDecider(
  request: EvaluateRequest,
  codec: TextCodec,
  settings: DeciderSettings,
  budgets: Budgets,
): Plan {
  const tok = deciderTokenizer(codec, settings);
  const layout = deciderLayout(request, {
    ...tok,
    encode: budgetGuard(tok.encode, budgets.request, codec.maxTokenBytes, (text) => !text.startsWith('Context:\n')),
  });
  const owner = new Map<number, (typeof layout.questions)[number]>();
  for (const q of layout.questions) for (const r of q.rows) owner.set(r, q);
  const prefix = layout.ctx;
  const { questions, usage, usageParts } = plannedRows(
    prefix,
    layout.rows.map((row, i) => ({ ...row, question: owner.get(i)!.question, strings: settings.labels.strings })),
    budgets,
  );
  return {
    prefix,
    questions,
    usage,
    usageParts,
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
