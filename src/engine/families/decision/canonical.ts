// The Decision family's text of a JSON value (docs/families/decision-endpoint.md): `payload` writes
// a string as it is and anything else canonically, as the authors' code does with Python's
// `json.dumps(v, ensure_ascii=False, sort_keys=True, separators=(",", ":"))`: keys sorted by code
// point, no spaces, numbers as Python writes them (pyNumber), non-ASCII as it is.
import { pyJsonDumps } from '../shared/pyjson.js';

/** The canonical JSON text of a parsed JSON value (the shared writer, keys sorted, no spaces). */
export function canonicalJson(value: unknown): string {
  return pyJsonDumps(value, { sortKeys: true, compact: true });
}

/** A value as the row holds it: a string as it is, anything else (null included) as canonical JSON. */
export function payload(value: unknown): string {
  return typeof value === 'string' ? value : canonicalJson(value);
}
