// The decider layout as causal rows for the slot-head export (`decider-slots`;
// docs/families/decider-labels.md, "As exported with a slot head"): each row of the decider layout
// (decider/layout.ts: one per noul or choice question, one isolated yes/no row per score level) is
// the context followed by the row's piece, read at its last token, the `(` slot. The graph takes
// the rows right-padded to a multiple of 64 with the folder's pad id, their slot positions, and
// gives each row the logits of the whole label table; the readout (decider/readout.ts, shared with
// decider-labels) reads the row's first k.
import { softmax } from '../../../common/index.js';
import { BudgetError } from '../../errors.js';
import type { EvaluateRequest } from '../../types.js';
import { deciderLayout, deciderLogps, type DeciderTemperatures, type DeciderTokenizer } from '../decider/index.js';
import type { FamilyPlan, FamilyQuestion, RowOutput } from '../family.js';
import { causalInputIds, rowPositions } from '../shared/causal-rows.js';

/** One row as the graph reads it: the context and the piece, and its slot. */
export interface SlotRowInput {
  tokens: number;
  ids: number[];
  /** Index of the row's `(` slot: its last token. */
  slot: number;
}

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
export function slotPlan(
  request: EvaluateRequest,
  tok: DeciderTokenizer,
  maxRowTokens?: number,
): FamilyPlan<SlotRowInput> {
  const layout = deciderLayout(request, tok);
  const rows = layout.rows.map((r): SlotRowInput => {
    const ids = layout.ctx.concat(r.piece);
    return { tokens: ids.length, ids, slot: ids.length - 1 };
  });
  const longest = Math.max(0, ...rows.map((r) => r.tokens));
  if (maxRowTokens !== undefined && longest > maxRowTokens) throw new SlotRowTooLong(longest, maxRowTokens);
  const questions = layout.questions.map((q): FamilyQuestion => {
    const out: FamilyQuestion = { key: q.key, question: q.question, rows: q.rows };
    if (q.options) out.options = q.options;
    if (layout.cut) out.truncated = ['state'];
    return out;
  });
  return { questions, rows, usage: { input_tokens: rows.reduce((n, r) => n + r.tokens, 0), output_tokens: 0 } };
}

/** The graph's inputs for a batch of rows: input_ids i64[rows, seq] (padded to 64), slot_pos i64[rows]. */
export function slotFeeds(batch: readonly SlotRowInput[], padId: number) {
  return {
    input_ids: causalInputIds(
      batch.map((r) => r.ids),
      padId,
    ),
    slot_pos: rowPositions(batch.map((r) => r.slot)),
  };
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
