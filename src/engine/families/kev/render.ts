// Kev's text of a request's values (docs/families/kev-pointer.md, "Text"), as the authors' render()
// and user() write it (jaredpalmer/kev, kev/api.py and kev/encoding.py, read to learn):
// - render: a string as is, a number or boolean as Python's str() writes it, null as "", a list as
//   one "- item" line per item, an object as one "key: value" line per key (a nested object or list
//   under "key:" on its own line, two spaces deeper);
// - user: every `<|name|>` in caller text becomes `<¦name¦>` before tokenizing, so no caller text
//   becomes one of the tokenizer's `<|…|>` tokens, the delimiters among them (content is data).
import { pyNumber } from '../shared/pyjson.js';

/** Python's str.isspace characters: what str.lstrip() removes (\x1c–\x1f among them). */
// eslint-disable-next-line no-control-regex
const PY_SPACE = /^[\t\n\v\f\r\x1c-\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+/;

/** Python's `s.lstrip()`. */
export function pyLstrip(s: string): string {
  return s.replace(PY_SPACE, '');
}

/** A scalar as Python's str() writes it (a JSON number as Python parses it: see pyNumber). */
function scalar(v: unknown): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return pyNumber(v);
  return '';
}

const isNested = (v: unknown): boolean => v !== null && typeof v === 'object';

/**
 * render(v, indent): the text the model sees for a value; each list item's text is left-stripped
 * as a whole, as the reference strips the rendered item. Recursive: caller content nests at most
 * MAX_CONTENT_DEPTH (64) levels (the protocol refuses deeper).
 */
export function render(value: unknown, indent = 0): string {
  if (!isNested(value)) return scalar(value);
  const pad = '  '.repeat(indent);
  if (Array.isArray(value)) return value.map((x) => `${pad}- ${pyLstrip(render(x, indent + 1))}`).join('\n');
  return Object.entries(value as Record<string, unknown>)
    .map(([k, x]) => (isNested(x) ? `${pad}${k}:\n${render(x, indent + 1)}` : `${pad}${k}: ${scalar(x)}`))
    .join('\n');
}

const SPECIAL = /<\|([A-Za-z0-9_]+)\|>/g;

/** user(text): `<|name|>` → `<¦name¦>` (name: ASCII letters, digits, underscore), left to right. */
export function user(text: string): string {
  return text.replace(SPECIAL, '<¦$1¦>');
}

/** An option's text: `name`, or `name: render(description)` when the description is given (not null, not ""). */
export function optionText(name: string, description: unknown): string {
  return description === null || description === undefined || description === ''
    ? name
    : `${name}: ${render(description)}`;
}
