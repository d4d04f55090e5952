// A body that is not JSON, answered as FastAPI does: 422 json_invalid at ["body", offset], with
// Python's json module's own words for what is wrong.
import type { ValidationError } from '../schemas.js';

/** FastAPI's answer to a body that is not JSON: loc ["body", offset], ctx.error in Python's words. */
export function jsonInvalid(text: string): ValidationError {
  const { pos, msg } = locateJsonError(text);
  return { type: 'json_invalid', loc: ['body', pos], msg: 'JSON decode error', input: {}, ctx: { error: msg } };
}

class JsonFault {
  constructor(
    readonly pos: number,
    readonly msg: string,
  ) {}
}

/** Finds where and why Python's json module would stop (only called after JSON.parse failed). */
export function locateJsonError(s: string): { pos: number; msg: string } {
  let i = 0;
  const ws = () => {
    while (i < s.length && (s[i] === ' ' || s[i] === '\t' || s[i] === '\n' || s[i] === '\r')) i++;
  };
  const fail = (pos: number, msg: string): never => {
    throw new JsonFault(pos, msg);
  };
  const string = (): void => {
    const start = i++;
    for (;;) {
      if (i >= s.length) fail(start, 'Unterminated string starting at');
      const c = s.charCodeAt(i);
      if (c === 0x22) return void i++;
      if (c < 0x20) fail(i, 'Invalid control character at');
      if (c === 0x5c) {
        const e = s[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(s.slice(i + 2, i + 6))) fail(i, 'Invalid \\uXXXX escape');
          i += 6;
        } else if (e !== undefined && '"\\/bfnrt'.includes(e)) i += 2;
        else if (e === undefined) fail(start, 'Unterminated string starting at');
        else fail(i, 'Invalid \\escape');
      } else i++;
    }
  };
  const key = (): void => {
    if (s[i] !== '"') fail(i, 'Expecting property name enclosed in double quotes');
    string();
    ws();
    if (s[i] !== ':') fail(i, "Expecting ':' delimiter");
    i++;
  };
  // Iterative (an explicit stack of open containers): any nesting depth, no recursion on caller data.
  const value = (): void => {
    const open: string[] = [];
    for (;;) {
      ws();
      const c = s[i];
      if (c === '"') string();
      else if (c === '{' || c === '[') {
        i++;
        ws();
        if (s[i] === (c === '{' ? '}' : ']')) i++;
        else {
          open.push(c);
          if (c === '{') key();
          continue;
        }
      } else {
        const lit = ['true', 'false', 'null'].find((l) => s.startsWith(l, i));
        const num = lit ? undefined : /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?/.exec(s.slice(i, i + 400));
        if (lit) i += lit.length;
        else if (num) i += num[0].length;
        else fail(i, 'Expecting value');
      }
      // A value is complete: close what it completes, or go on after a comma.
      for (;;) {
        if (open.length === 0) return;
        ws();
        const top = open[open.length - 1];
        if (s[i] === (top === '{' ? '}' : ']')) {
          i++;
          open.pop();
          continue;
        }
        if (s[i] !== ',') fail(i, "Expecting ',' delimiter");
        i++;
        if (top === '{') {
          ws();
          key();
        }
        break;
      }
    }
  };
  try {
    value();
    ws();
    if (i < s.length) fail(i, 'Extra data');
    return { pos: 0, msg: 'Expecting value' }; // JSON.parse disagreed; should not happen
  } catch (e) {
    if (e instanceof JsonFault) return { pos: e.pos, msg: e.msg };
    return { pos: 0, msg: 'Expecting value' };
  }
}
