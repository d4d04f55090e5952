// The Arbiter family's text of a JSON value (docs/families/arbiter-fixed.md, "render"), as the
// peer documents the reference's render() (ollaya-dev/ollaya:docs/families/arbiter.md): null is
// "", a string as it is, a number or boolean as Python's str() writes it, a list one "- item" line
// per item, an object one "key: value" line per key (a nested object or list under "key:" on the
// lines below it, two spaces deeper). Recursive on the value's nesting, bounded by the protocol's
// depth limit on a request.
import { pyNumber } from '../shared/pyjson.js';

/** Python's str.lstrip(): the characters str.isspace() holds (not U+FEFF, which JavaScript's trimStart strips). */
// eslint-disable-next-line no-control-regex
const PY_LEADING_SPACE = /^[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/;

/** A value as Arbiter's prompt writes it, at `indent` levels of two spaces. */
export function render(value: unknown, indent = 0): string {
  const pad = '  '.repeat(indent);
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'True' : 'False';
  if (typeof value === 'number') return pyNumber(value);
  if (Array.isArray(value))
    return value.map((x) => `${pad}- ${render(x, indent + 1).replace(PY_LEADING_SPACE, '')}`).join('\n');
  if (typeof value === 'object')
    return Object.entries(value as Record<string, unknown>)
      .map(([k, x]) =>
        x !== null && typeof x === 'object' ? `${pad}${k}:\n${render(x, indent + 1)}` : `${pad}${k}: ${render(x)}`,
      )
      .join('\n');
  return '';
}
