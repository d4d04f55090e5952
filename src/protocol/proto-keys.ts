// Any string is a valid question id or option name, `__proto__` included, as for the hosted
// (Python) service. zod strips `__proto__` keys from what it parses (assigning one to a plain object
// would re-parent it) and so never validates what is under them: such keys are renamed to a
// placeholder in a shadow copy for validation, and named back in the 422 entries. Requests and the
// engine's responses are both checked this way (ownKeysParse), so each check sees every own key.
import type { z } from 'zod';

export const PROTO = '__proto__';
export const PLACEHOLDER = '\u0000__proto__\u0000';

/** A copy with every `__proto__` key renamed (objects without one are shared, not copied). Iterative. */
export function shadow(value: unknown, rename: [string, string]): unknown {
  const [from, to] = rename;
  const root = { v: value };
  const stack: Array<[Record<string, unknown> | unknown[], string | number]> = [[root as Record<string, unknown>, 'v']];
  while (stack.length > 0) {
    const [parent, key] = stack.pop()!;
    const v = (parent as Record<string | number, unknown>)[key];
    if (v === null || typeof v !== 'object') continue;
    let target = v as Record<string, unknown> | unknown[];
    if (!Array.isArray(v) && Object.prototype.hasOwnProperty.call(v, from)) {
      const copy: Record<string, unknown> = {};
      for (const k of Object.keys(v))
        Object.defineProperty(copy, k === from ? to : k, {
          value: (v as Record<string, unknown>)[k],
          enumerable: true,
          writable: true,
          configurable: true,
        });
      (parent as Record<string | number, unknown>)[key] = copy;
      target = copy;
    }
    if (Array.isArray(target)) target.forEach((_, i) => stack.push([target, i]));
    else for (const k of Object.keys(target)) stack.push([target, k]);
  }
  return root.v;
}

/** Whether any object in the value has the own key. Iterative. */
export function hasKey(value: unknown, key: string): boolean {
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    if (!Array.isArray(v) && Object.prototype.hasOwnProperty.call(v, key)) return true;
    for (const x of Array.isArray(v) ? v : Object.values(v)) stack.push(x);
  }
  return false;
}

/** A value as zod checked it: the result, the copy it ran on, and whether `__proto__` keys were renamed in it. */
export interface OwnKeysParse<T> {
  result: z.ZodSafeParseResult<T>;
  checked: unknown;
  renamed: boolean;
}

/** safeParse that sees every own key: `__proto__` keys are renamed to PLACEHOLDER in a copy first. */
export function ownKeysParse<T>(schema: z.ZodType<T>, value: unknown): OwnKeysParse<T> {
  const renamed = hasKey(value, PROTO);
  const checked = renamed ? shadow(structuredClone(value), [PROTO, PLACEHOLDER]) : value;
  return { result: schema.safeParse(checked), checked, renamed };
}
