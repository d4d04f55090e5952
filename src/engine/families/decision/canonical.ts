// The Decision family's text of a JSON value (docs/families/decision-endpoint.md): `payload` writes
// a string as it is and anything else canonically, as the authors' code does with Python's
// `json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":"))`: keys sorted by code
// point, no spaces, numbers as Python writes them (pyNumber), non-ASCII as it is.
import { pyNumber } from '../shared/pyjson.js';

const ESCAPES: Record<string, string> = {
  '"': '\\"',
  '\\': '\\\\',
  '\n': '\\n',
  '\r': '\\r',
  '\t': '\\t',
  '\b': '\\b',
  '\f': '\\f',
};

/** A JSON string as Python writes it with ensure_ascii=False: only `"`, `\` and C0 controls escaped. */
function pyString(s: string): string {
  // eslint-disable-next-line no-control-regex
  return `"${s.replace(/["\\\u0000-\u001f]/g, (c) => ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}"`;
}

/** Python's string order: by code point (JavaScript's default sort compares UTF-16 units). */
function byCodePoint(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

/** The canonical JSON text of a parsed JSON value (iterative: nesting depth costs no stack). */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  const stack: Array<{ text: string } | { value: unknown }> = [{ value }];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if ('text' in item) {
      out.push(item.text);
      continue;
    }
    const v = item.value;
    if (v === null || v === undefined) out.push('null');
    else if (typeof v === 'string') out.push(pyString(v));
    else if (typeof v === 'boolean') out.push(v ? 'true' : 'false');
    else if (typeof v === 'number') out.push(pyNumber(v));
    else if (Array.isArray(v)) {
      out.push('[');
      stack.push({ text: ']' });
      for (let i = v.length - 1; i >= 0; i--) {
        stack.push({ value: v[i] });
        if (i > 0) stack.push({ text: ',' });
      }
    } else if (typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) => byCodePoint(a, b));
      out.push('{');
      stack.push({ text: '}' });
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, inner] = entries[i]!;
        stack.push({ value: inner });
        stack.push({ text: `${pyString(key)}:` });
        if (i > 0) stack.push({ text: ',' });
      }
    } else out.push('null');
  }
  return out.join('');
}

/** A value as the row holds it: a string as it is, anything else (null included) as canonical JSON. */
export function payload(value: unknown): string {
  return typeof value === 'string' ? value : canonicalJson(value);
}
