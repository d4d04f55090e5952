// The decider's label table (docs/families/decider-labels.md): the tokens its answer is read from.
// Narrow rows (up to 10 options) label them A..J in the text; wide rows (more) insert the label
// tokens of a table of 255: A..Z, then the two-letter uppercase strings AA, AB, … that the
// tokenizer writes as one token, in that order, the first 229 of them. A folder's decision.json may
// carry the table (`labels: {strings, ids}`, checked by its schema: config.ts); else it is computed
// from the tokenizer.
import { ModelLoadError } from '../../errors.js';

/** Labels of a narrow row (≤ NARROW options): written in the row's text. */
export const NARROW = 10;
/** The wide table's size: the most options a choice question may have. */
export const WIDE = 255;

export interface LabelTable {
  /** The label strings, A..J first. */
  strings: string[];
  /** Their single token ids, in the same order. */
  ids: number[];
}

/** The candidate label strings in table order: A..Z, then AA..ZZ. */
function candidates(): string[] {
  const az = Array.from({ length: 26 }, (_, i) => String.fromCharCode(65 + i));
  return [...az, ...az.flatMap((a) => az.map((b) => a + b))];
}

/** The table computed from the tokenizer (`encode`: a text's ids as data): single-token labels only. */
export function computeLabelTable(encode: (text: string) => number[]): LabelTable {
  const strings: string[] = [];
  const ids: number[] = [];
  for (const s of candidates()) {
    if (strings.length === WIDE) break;
    const t = encode(s);
    if (t.length !== 1) {
      if (s.length === 1)
        throw new ModelLoadError(`the tokenizer writes the label ${s} as ${t.length} tokens, not one`);
      continue;
    }
    strings.push(s);
    ids.push(t[0]!);
  }
  return { strings, ids };
}
