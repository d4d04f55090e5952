// Rendering caller content (state, instructions, criteria) to text the model reads.
import type { Content } from '../types.js';

/** Content rendered past this many characters is refused (the caller maps it to a token budget). */
export class ContentTooLarge extends Error {
  constructor(readonly chars: number) {
    super(`rendered content is longer than ${chars} characters`);
    this.name = 'ContentTooLarge';
  }
}

/**
 * A string as is; an object or array as indented JSON, keys in the caller's order, non-ASCII kept:
 * exactly `JSON.stringify(value, null, 2)`, but iterative (no recursion on caller data, so any
 * depth renders or is refused cleanly) and stopped once longer than `maxChars` (indentation grows
 * with the depth: a few KB of deeply nested arrays would otherwise render to megabytes).
 * Deterministic: the same value always renders to the same text (so its tokens, and cache keys, match).
 */
export function renderContent(value: Content | null | undefined, maxChars = Number.POSITIVE_INFINITY): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  return stringify(value, maxChars);
}

interface Frame {
  /** Entries still to write: [key or undefined for array items, value]. */
  entries: Array<[string | undefined, unknown]>;
  next: number;
  close: string;
  indent: string;
}

function scalar(v: unknown): string | undefined {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
    case 'boolean':
    case 'number':
      return JSON.stringify(v);
    case 'object':
      return undefined;
    default:
      return 'null'; // undefined, functions: never in parsed JSON; null as JSON.stringify does in arrays
  }
}

function stringify(root: object, maxChars: number): string {
  const parts: string[] = [];
  let length = 0;
  const write = (s: string): void => {
    parts.push(s);
    length += s.length;
    if (length > maxChars) throw new ContentTooLarge(maxChars);
  };
  const stack: Frame[] = [];
  const open = (v: object, indent: string): void => {
    const isArray = Array.isArray(v);
    const entries: Array<[string | undefined, unknown]> = isArray
      ? (v as unknown[]).map((x) => [undefined, x])
      : Object.keys(v)
          .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
          .map((k) => [k, (v as Record<string, unknown>)[k]]);
    if (entries.length === 0) return write(isArray ? '[]' : '{}');
    write(isArray ? '[' : '{');
    stack.push({ entries, next: 0, close: isArray ? ']' : '}', indent });
  };
  open(root, '');
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.next === frame.entries.length) {
      stack.pop();
      write(`\n${frame.indent}${frame.close}`);
      continue;
    }
    const [key, v] = frame.entries[frame.next]!;
    const inner = `${frame.indent}  `;
    write(`${frame.next > 0 ? ',' : ''}\n${inner}${key === undefined ? '' : `${JSON.stringify(key)}: `}`);
    frame.next++;
    const s = scalar(v);
    if (s !== undefined) write(s);
    else open(v as object, inner);
  }
  return parts.join('');
}
