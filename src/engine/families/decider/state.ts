// The decider's state text (docs/families/decider-labels.md): a string verbatim; any other JSON as
// Python's `json.dumps(annotate_indices(state), ensure_ascii=False)`, where annotate_indices writes
// each element's position into every array of at least ANNOTATE_MIN elements: an object element
// `e` becomes `{"_index": i, **e}` (`_index` first; e's own `_index`, if any, keeps its value) and
// any other element `{"_index": i, "value": e}`. Written while serializing, so `_index` stands
// first whatever keys the element has (a JS object would list integer-like keys before it), and
// iteratively: nesting depth costs no stack.
import type { Content } from '../../types.js';
import { pyJsonDumps } from '../shared/pyjson.js';

/** Arrays at least this long have their elements' positions written in. */
export const ANNOTATE_MIN = 8;

type Item = { text: string } | { value: unknown };

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The entries of an object, each value to be written annotated. */
function pushObject(stack: Item[], entries: Array<[string, unknown]>): void {
  stack.push({ text: '}' });
  for (let i = entries.length - 1; i >= 0; i--) {
    const [key, inner] = entries[i]!;
    stack.push({ value: inner });
    stack.push({ text: `${pyJsonDumps(key)}: ` });
    if (i > 0) stack.push({ text: ', ' });
  }
  stack.push({ text: '{' });
}

/** Python's json.dumps(annotate_indices(value), ensure_ascii=False). */
export function annotatedJson(value: unknown): string {
  const out: string[] = [];
  const stack: Item[] = [{ value }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if ('text' in item) {
      out.push(item.text);
      continue;
    }
    const v = item.value;
    if (Array.isArray(v)) {
      const annotate = v.length >= ANNOTATE_MIN;
      stack.push({ text: ']' });
      for (let i = v.length - 1; i >= 0; i--) {
        const e: unknown = v[i];
        if (!annotate) stack.push({ value: e });
        else if (isObject(e))
          pushObject(stack, [
            ['_index', Object.hasOwn(e, '_index') ? e._index : i],
            ...Object.entries(e).filter(([k]) => k !== '_index'),
          ]);
        else
          pushObject(stack, [
            ['_index', i],
            ['value', e],
          ]);
        if (i > 0) stack.push({ text: ', ' });
      }
      stack.push({ text: '[' });
    } else if (isObject(v)) pushObject(stack, Object.entries(v));
    else out.push(pyJsonDumps(v));
  }
  return out.join('');
}

/** The state as the contract writes it after `Context:\n`. */
export function stateText(state: Content): string {
  return typeof state === 'string' ? state : annotatedJson(state);
}
