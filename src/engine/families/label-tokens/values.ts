// Values as text in a label-tokens contract (docs/families/label-tokens.md, "Values as text"):
// `render: "text"` writes a string verbatim and any other value as Python's json.dumps
// (ensure_ascii=False, separators ", " and ": "); `render: "json"` writes every value, strings too,
// as compact JSON (separators "," and ":") with every `<` written \u003c.
import type { Content } from '../../types.js';
import { pyJsonDumps } from '../shared/pyjson.js';

export type Render = 'text' | 'json';

/** A value as the contract writes it into a placeholder. */
export function rendered(value: Content | null | undefined, render: Render): string {
  if (render === 'text') return typeof value === 'string' ? value : pyJsonDumps(value ?? null);
  return pyJsonDumps(value ?? null, { compact: true }).replaceAll('<', '\\u003c');
}

/** A description inside an option's string: a string verbatim, anything else json.dumps with the render's separators. */
export function described(value: Content, render: Render): string {
  return typeof value === 'string' ? value : pyJsonDumps(value, { compact: render === 'json' });
}

/** Whether a description is there (`null`, `""` and absent: none). */
export function hasDescription(value: Content | null | undefined): value is Content {
  return value !== undefined && value !== null && value !== '';
}

/** `name`, or `name: d` when it has a description. */
export function withDescription(name: string, d: Content | null | undefined, render: Render): string {
  return hasDescription(d) ? `${name}: ${described(d, render)}` : name;
}
