// The files Assay reads (the model registry, a model folder's assay.json, the keys file) are checked
// by zod schemas; a problem is reported in one shape, `file: path.in[0].it: what was expected`.
import { z } from 'zod';

/** A zod path as it reads in the file: `models["svc-1.13.0"].escalate.below.noul`, `keys[0].sha256`. */
export function filePath(path: readonly PropertyKey[]): string {
  return path
    .map((p, i) =>
      typeof p === 'number'
        ? `[${p}]`
        : /^[A-Za-z_][A-Za-z0-9_]*$/.test(String(p))
          ? `${i === 0 ? '' : '.'}${String(p)}`
          : `[${JSON.stringify(String(p))}]`,
    )
    .join('');
}

/**
 * `file: path: expectation` for the problem zod found that explains the most: a misspelt field
 * first (it is often why a required field is missing), else the first.
 */
export function fileProblem(file: string, error: z.ZodError): string {
  const issue =
    error.issues.find((i) => i.code === 'unrecognized_keys' || (i.code === 'custom' && i.params?.misspelt)) ??
    error.issues[0]!;
  const missing = issue.code === 'invalid_type' && issue.message.endsWith('received undefined');
  const message = missing ? `missing (expected ${issue.expected})` : issue.message;
  return `${file}: ${filePath(issue.path) || '(top level)'}: ${message}`;
}

/** A name written as people misspell it: lower case, without `_` and `-`. */
const folded = (name: string) => name.toLowerCase().replace(/[_-]/g, '');

/** Levenshtein distance, stopping at `bound` + 1. */
function distance(a: string, b: string, bound: number): number {
  if (Math.abs(a.length - b.length) > bound) return bound + 1;
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}

/** The known field `name` is a misspelling of (same letters but case and `_`, or one or two edits away), if any. */
export function misspeltField(name: string, known: readonly string[]): string | undefined {
  const n = folded(name);
  let best: { field: string; d: number } | undefined;
  for (const field of known) {
    const f = folded(field);
    const bound = Math.min(n.length, f.length) <= 4 ? 1 : 2;
    const d = distance(n, f, bound);
    if (d <= bound && (!best || d < best.d)) best = { field, d };
  }
  return best?.field;
}

/**
 * An object of a file that tools and people both write (the registry, assay.json): its fields are
 * checked; a field it does not know is kept (a newer Assay's, a tool's provenance), unless it looks
 * like a misspelling of a known one, which is an error naming the field meant.
 */
export function fileObject<S extends z.ZodRawShape>(shape: S) {
  const known = Object.keys(shape);
  return z.looseObject(shape).superRefine(
    (value, ctx) => {
      for (const key of Object.keys(value)) {
        if (Object.prototype.hasOwnProperty.call(shape, key)) continue;
        const meant = misspeltField(key, known);
        if (meant)
          ctx.addIssue({
            code: 'custom',
            path: [key],
            message: `unknown field: expected "${meant}"`,
            params: { misspelt: true },
          });
      }
    },
    // Also when a field failed: a misspelt field is often why a required one is missing.
    { when: (payload) => typeof payload.value === 'object' && payload.value !== null },
  );
}
