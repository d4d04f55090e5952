// Python's `json.dumps(value, ensure_ascii=False)` (separators ", " and ": ", the default without
// indent) for parsed JSON values: how the Laya reference code writes a non-string state,
// instructions and structured criteria before tokenizing them, and how the NLI pairs family writes
// them too (each family's page in docs/families/).

/** json.dumps's options the families' references use (defaults: Python's). */
export interface PyJsonOptions {
  /** `sort_keys=True`: keys in code-point order, as Python compares strings. */
  sortKeys?: boolean;
  /** `separators=(",", ":")`: no spaces. */
  compact?: boolean;
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

/**
 * The text Python's json.dumps writes for a value that came from JSON text. Differences from
 * JSON.stringify: ", " and ": " separators; numbers as Python writes the number it parsed
 * (below); non-ASCII, U+2028/9 and lone surrogates written as they are. Iterative: nesting depth
 * costs no stack.
 *
 * Numbers: a JSON number keeps no spelling once parsed, so the text is what Python writes for the
 * number as JSON.stringify spells it: an integral value below 1e21 is an integer literal (Python
 * reads an int and writes its digits), anything else is a float in Python's repr (shortest
 * round-trip digits, exponent form below 1e-4 and from 1e16 on: `1e-05`, `1e+21`). So `1.0` in a
 * request is written `1` (Python: `1.0`): a documented difference of the parsed request.
 */
export function pyJsonDumps(value: unknown, options: PyJsonOptions = {}): string {
  const comma = options.compact ? ',' : ', ';
  const colon = options.compact ? ':' : ': ';
  const out: string[] = [];
  // Work items: a value to write, or literal text (separators, closing brackets).
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
        if (i > 0) stack.push({ text: comma });
      }
    } else if (typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>);
      if (options.sortKeys) entries.sort(([a], [b]) => byCodePoint(a, b));
      out.push('{');
      stack.push({ text: '}' });
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, inner] = entries[i]!;
        stack.push({ value: inner });
        stack.push({ text: `${pyString(key)}${colon}` });
        if (i > 0) stack.push({ text: comma });
      }
    } else out.push('null'); // functions, symbols, bigints: never in parsed JSON
  }
  return out.join('');
}

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

/** The number as Python writes what it parses from JSON.stringify's spelling of it (see pyJsonDumps). */
export function pyNumber(x: number): string {
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : x < 0 ? '-Infinity' : 'NaN'; // never from JSON
  if (Number.isInteger(x) && Math.abs(x) < 1e21) return BigInt(x).toString();
  return pyFloatRepr(x);
}

/** Python's repr of a float: shortest round-trip digits; exponent form when exp10 < -4 or >= 16. */
export function pyFloatRepr(x: number): string {
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const [mantissa, exp] = x.toExponential().split('e') as [string, string];
  const e = Number(exp);
  const sign = mantissa.startsWith('-') ? '-' : '';
  const digits = mantissa.replace('-', '').replace('.', '');
  if (e < -4 || e >= 16) {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    return `${sign}${m}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  if (e < 0) return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
  const whole = digits.slice(0, e + 1).padEnd(e + 1, '0');
  const frac = digits.slice(e + 1);
  return `${sign}${whole}.${frac === '' ? '0' : frac}`;
}
