// The tiny-tasks lines as training rows of the decider contract (decider-labels,
// docs/families/decider-labels.md), written by the engine's own layout (deciderLayout) so the model
// is trained on exactly the rows the engine feeds it: `Context:\n<state>` then per row
// `\n\nQuestion: …\nOptions:\n(A) …\nAnswer: (`, the answer read from the label tokens at the slot.
// - noul: one row, options (A) no, (B) yes: the target is B when the answer is yes;
// - choice: one row, the options lettered in the order sent: the target is the right option's letter;
// - score: one isolated yes/no row per level ("Proposed answer: <level>\nDoes the proposed answer
//   fit?", (A) no, (B) yes): the target is yes on the right level's row, no on the others. Its rows
//   carry `q` (the question), `level`, `answer` (the right level) and `yes` (B's index) so train.py
//   and check-onnx.ts read the question's answer as the engine does: the level whose row says yes most.
import { computeLabelTable, deciderLayout, type DeciderTokenizer, type TextCodec } from '../../src/internal.js';
import type { TaskLine } from './tiny-tasks.js';

/** What the model folder carries besides the graph (write-data.ts → train.py → the safetensors metadata). */
export const DECIDER_FOLDER = {
  task: 'tiny-tasks through the decider contract (tools/train/tiny-tasks.ts, tools/train/decider-rows.ts)',
  files: { 'decision.json': { layout: 'decider-labels-v1' } },
};

/** The layout's tokenizer over a codec: every segment encoded alone, as data; the label table from the tokenizer. */
export function deciderTokenizerOf(codec: TextCodec): DeciderTokenizer {
  const encode = (text: string) => codec.encodeText(text, undefined, true);
  return { encode, labels: computeLabelTable(encode) };
}

export interface DeciderTrainRow {
  ids: number[];
  cands: number[];
  target: number;
  type: 'noul' | 'choice' | 'score';
  q: number;
  level?: number;
  answer?: number;
  yes?: number;
}

/** The rows of some lines, questions numbered from 0 across them. */
export function deciderRows(lines: readonly TaskLine[], codec: TextCodec): DeciderTrainRow[] {
  const tok = deciderTokenizerOf(codec);
  const out: DeciderTrainRow[] = [];
  let q = 0;
  for (const line of lines) {
    const layout = deciderLayout({ state: line.state, questions: line.questions }, tok);
    if (layout.cut) throw new Error(`a tiny-tasks state was cut: ${line.state.slice(0, 40)}…`);
    for (const asked of layout.questions) {
      const expected = line.expected[asked.key]!;
      const type = asked.question.type;
      for (const r of asked.rows) {
        const row = layout.rows[r]!;
        const ids = [...layout.ctx, ...row.piece];
        if (type === 'noul') out.push({ ids, cands: row.labels, target: expected ? 1 : 0, type, q });
        else if (type === 'choice') {
          const target = asked.options!.indexOf(expected as string);
          if (target < 0) throw new Error(`${asked.key}: ${String(expected)} is not an option`);
          out.push({ ids, cands: row.labels, target, type, q });
        } else {
          const answer = expected as number;
          out.push({
            ids,
            cands: row.labels,
            target: row.level === answer ? 1 : 0,
            type,
            q,
            level: row.level!,
            answer,
            yes: 1,
          });
        }
      }
      q++;
    }
  }
  return out;
}
