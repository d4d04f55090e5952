// How deep caller JSON may nest. V8 parses any depth, but rendering, validation and every walk over
// caller data must stay bounded: content (the state, instructions, each criteria value) may nest at
// most MAX_CONTENT_DEPTH levels, refused with a pinned 422 naming where it goes deeper. Checked
// iteratively, once, right after parsing.
import type { ValidationError } from './schemas.js';

export const MAX_CONTENT_DEPTH = 64;
/** The request's own structure (body → questions → id → criteria → option) above its content. */
const SKELETON_DEPTH = 4;

/** Where content starts: `state`, and a question's `instructions` and `criteria` values. */
function contentRoot(path: Array<string | number>): boolean {
  if (path.length === 1) return path[0] === 'state';
  if (path.length === 3 && path[0] === 'questions') return path[2] === 'instructions';
  if (path.length === 4 && path[0] === 'questions' && path[2] === 'criteria') return true;
  return false;
}

/** The 422 entry for the first container nested deeper than allowed, or none. */
export function depthErrors(body: unknown): ValidationError[] {
  // [value, path, depth of the value inside its content (0 outside content)]
  const stack: Array<[unknown, Array<string | number>, number]> = [[body, [], 0]];
  while (stack.length > 0) {
    const [value, path, depth] = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    const inContent = depth > 0 || contentRoot(path);
    const level = inContent ? depth + 1 : 0;
    if (level > MAX_CONTENT_DEPTH || path.length > MAX_CONTENT_DEPTH + SKELETON_DEPTH) {
      return [
        {
          type: 'json_too_deep',
          loc: ['body', ...path],
          msg: `JSON nesting is deeper than ${MAX_CONTENT_DEPTH} levels`,
          ctx: { max_depth: MAX_CONTENT_DEPTH },
        },
      ];
    }
    if (Array.isArray(value)) for (let i = value.length - 1; i >= 0; i--) stack.push([value[i], [...path, i], level]);
    else {
      const keys = Object.keys(value);
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i]!;
        stack.push([(value as Record<string, unknown>)[k], [...path, k], level]);
      }
    }
  }
  return [];
}
