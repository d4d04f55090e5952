// The state's tokens when only `limit` of them can be read (an encoder's row holds at most its
// max_len): a state of megabytes is not tokenized whole on the engine thread, where it would hold
// up the model's other callers for seconds. The ids are exactly the first (or last) tokens of the
// whole text's tokenization, not an approximation:
// - the text is cut at a word boundary (whitespace after a non-space character): the tokenizers
//   these families use (byte-level BPE, sentencepiece's Metaspace, BERT's whitespace split) split
//   text into pieces at such boundaries before anything else, so every piece up to the cut is the
//   same piece in the whole text, and its tokens are the same;
// - `MARGIN` more tokens than needed are encoded and those at the cut are dropped anyway;
// - where no boundary is found near the cut (a long run without spaces: CJK text, one huge word),
//   or the cut text holds too few tokens, the whole text is tokenized, as before.

/** Characters per token assumed when cutting (a cut that yields too few tokens falls back to the whole text). */
const CHARS_PER_TOKEN = 32;
/** Tokens encoded beyond what is needed, dropped at the cut. */
const MARGIN = 16;
/** How far from the cut point a word boundary is looked for. */
const WINDOW = 4096;

export interface BoundedTokens {
  /** At least `limit` tokens from the kept end (all of them when the text was tokenized whole). */
  ids: number[];
  /** The text was cut: `ids` is not every token of it (the count is a lower bound). */
  partial: boolean;
}

/** A word boundary at or before `at` (keep 'start') or at or after it (keep 'end'), within WINDOW; -1 if none. */
function boundary(text: string, at: number, keep: 'start' | 'end'): number {
  const ok = (i: number) => i > 0 && i < text.length && /\s/.test(text[i]!) && !/\s/.test(text[i - 1]!);
  if (keep === 'start') {
    for (let i = at; i > at - WINDOW && i > 0; i--) if (ok(i)) return i;
  } else {
    for (let i = at; i < at + WINDOW && i < text.length; i++) if (ok(i)) return i;
  }
  return -1;
}

/** The tokens of `text` a row can hold: its first `limit` (keep 'start') or last `limit` (keep 'end'), exactly. */
export function boundedTokens(
  encode: (text: string) => number[],
  text: string,
  limit: number,
  keep: 'start' | 'end',
): BoundedTokens {
  const chars = (limit + 2 * MARGIN) * CHARS_PER_TOKEN;
  if (text.length <= chars + WINDOW) return { ids: encode(text), partial: false };
  const cut = boundary(text, keep === 'start' ? chars : text.length - chars, keep);
  if (cut < 0) return { ids: encode(text), partial: false };
  const ids = encode(keep === 'start' ? text.slice(0, cut) : text.slice(cut));
  if (ids.length < limit + MARGIN) return { ids: encode(text), partial: false };
  return { ids: keep === 'start' ? ids.slice(0, ids.length - MARGIN) : ids.slice(MARGIN), partial: true };
}
