// The label-tokens layout as the decoder engine's Plan (shared/label-rows.ts): the prefix is shared
// (its KV encoded once per request, kept across requests by the prefix cache), each question one
// planned row; `readout` carries the answers' questions for the family's readout (readout.ts).
import type { Budgets, Plan } from '../../prompting/plan.js';
import type { TextCodec } from '../../prompting/tokenizer.js';
import type { EvaluateRequest } from '../../types.js';
import { budgetGuard, plannedRows } from '../shared/label-rows.js';
import { labelTokensLayout } from './layout.js';
import type { LabelTokensSettings } from './settings.js';

/** A caller value's ids: encoded alone, as data. */
export function dataEncoder(codec: TextCodec): (text: string) => number[] {
  return (text) => codec.encodeText(text, undefined, true);
}

export function planLabelTokens(
  request: EvaluateRequest,
  codec: TextCodec,
  settings: LabelTokensSettings,
  budgets: Budgets,
): Plan {
  const state = dataEncoder(codec);
  const layout = labelTokensLayout(request, settings, {
    data: budgetGuard(state, budgets.request, codec.maxTokenBytes),
    state,
  });
  const { questions, usage, usageParts } = plannedRows(layout.prefix, layout.rows, budgets);
  return {
    prefix: layout.prefix,
    questions,
    usage,
    usageParts,
    readout: {
      family: 'label-tokens',
      questions: layout.rows.map((r, i) => ({
        key: r.key,
        question: r.question,
        ...(r.options ? { options: r.options } : {}),
        rows: [i],
      })),
    },
  };
}
