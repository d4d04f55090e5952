// The decider layout as causal rows for the slot-head export (`decider-slots`;
// the decider's page in docs/families/, "As exported with a slot head"): each row of the decider layout
// (decider/layout.ts: one per noul or choice question, one isolated yes/no row per score level) is
// the context (the state's part, the same in every row) followed by the row's piece, read at its
// last token, the `(` slot. The causal-row runner takes the rows right-padded to a multiple of 64
// with the folder's pad id, their slot positions, and gives each row the logits of the whole label
// table; the readout (decider/readout.ts, shared with the decoder engine's decider) reads the row's first k.
import { softmax } from '../../../common/index.js';
import { BudgetError } from '../../errors.js';
import type { EvaluateRequest } from '../../types.js';
import { deciderLayout, deciderLogps, type DeciderTemperatures, type DeciderTokenizer } from '../decider/index.js';
import type { FamilyQuestion, RowOutput } from '../rows/family.js';
import { causalRow, type CausalPlan } from '../causal/plan.js';

/** A row longer than the folder allows (decision.json max_row_tokens): 422 naming the limit. */
export class SlotRowTooLong extends BudgetError {
  constructor(count: number, limit: number) {
    super(
      'context',
      count,
      limit,
      false,
      `this model reads rows of at most ${limit} tokens (the state, cut at 32,768, and one question); a row of this request has ${count}`,
    );
    this.name = 'SlotRowTooLong';
  }
}

/** A request as slot rows; throws DeciderRefusal (what the contract cannot ask) or SlotRowTooLong. */
export function slotPlan(request: EvaluateRequest, tok: DeciderTokenizer, maxRowTokens?: number): CausalPlan {
  const layout = deciderLayout(request, tok);
  const state = layout.ctx;
  const rows = layout.rows.map((r) => {
    const tokens = state.length + r.piece.length;
    return causalRow(state.concat(r.piece), state.length, { slot_pos: tokens - 1 });
  });
  const longest = Math.max(0, ...rows.map((r) => r.tokens));
  if (maxRowTokens !== undefined && longest > maxRowTokens) throw new SlotRowTooLong(longest, maxRowTokens);
  const questions = layout.questions.map((q): FamilyQuestion => {
    const out: FamilyQuestion = { key: q.key, question: q.question, rows: q.rows };
    if (q.options) out.options = q.options;
    if (layout.cut) out.truncated = ['state'];
    return out;
  });
  return { questions, rows, state };
}

/** How many labels a question's rows read: a choice's options, else no / yes. */
function width(q: FamilyQuestion): number {
  return q.question.type === 'choice' ? q.options!.length : 2;
}

/**
 * A question's probabilities from its rows' label logits (each row's first k), in the answer
 * builder's order (choice per option, score per level, noul [P(yes), P(no)]), after the folder's
 * temperatures: the decider readout, whose label log-probabilities may be the raw logits (a shift
 * per row cancels in the softmax and in l_yes − l_no).
 */
export function slotRowProbabilities(
  q: FamilyQuestion,
  outputs: readonly RowOutput[],
  t: DeciderTemperatures,
): number[] {
  const read = { key: q.key, question: q.question, rows: outputs.map((_, i) => i) };
  return softmax(
    deciderLogps(
      [read],
      outputs.map((o) => o.logits.slice(0, width(q))),
      t,
    )[0]!,
  );
}
