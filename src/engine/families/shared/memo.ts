// A request's tokenizer for the families' layouts: each distinct text is encoded once per request
// (the state, read in every row of an encoder, is tokenized once for all the request's questions).

import { UntokenizableError } from '../../errors.js';

/** The longest run of non-whitespace characters in a text. */
function longestRun(text: string): number {
  let best = 0;
  for (const m of text.matchAll(/\S+/g)) best = Math.max(best, m[0].length);
  return best;
}

/**
 * `encode` with each distinct text encoded once. A tokenizer that overflows its stack on the text
 * (a RangeError) is the caller's input it cannot take: UntokenizableError (422), not a 500.
 */
export function encodeOnce(encode: (text: string) => number[]): (text: string) => number[] {
  const memo = new Map<string, number[]>();
  return (text) => {
    let ids = memo.get(text);
    if (!ids) {
      try {
        ids = encode(text);
      } catch (error) {
        if (error instanceof RangeError) throw new UntokenizableError(longestRun(text));
        throw error;
      }
      memo.set(text, ids);
    }
    return ids;
  };
}
