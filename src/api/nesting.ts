// How deep a body's raw JSON nests, read before it is parsed (a leaf: the body plugin, the body
// worker and the MCP body reader all ask it).
import { MAX_CONTENT_DEPTH } from '../protocol/index.js';

/** Raw nesting that no valid body reaches: body (1) + content (64) → a container at 66 may be too deep. */
const RAW_LIMIT = MAX_CONTENT_DEPTH + 1;

/**
 * Whether `text` has a container nested deeper than `limit`, not counting brackets inside strings.
 * Strings are skipped with indexOf (a body is mostly string content), brackets counted one by one.
 */
export function nestsDeeperThan(text: string, limit = RAW_LIMIT): boolean {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // To the closing quote: the next one not escaped (preceded by an even number of backslashes).
      for (;;) {
        i = text.indexOf('"', i + 1);
        if (i < 0) return false;
        let backslashes = 0;
        while (text.charCodeAt(i - 1 - backslashes) === 0x5c) backslashes++;
        if (backslashes % 2 === 0) break;
      }
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > limit) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}
