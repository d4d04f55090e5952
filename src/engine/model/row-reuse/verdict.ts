// What a load decided for an export of a causal-row family, read from the graph cache alone (no
// graph code, nothing decoded or written): `assay models` shows it. graph-cache.ts writes it.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { defaultGraphCacheDirs } from '../cache-dirs.js';
import { ROW_REUSE_VERSION, type RowGraphFacts } from './names.js';

/** What `<graph>.json` holds: the facts (or the reason) and the export it was made from. */
export interface RowGraphFile {
  /** The export's path (named apart from graph-file.ts's `source`, whose cleanup must never match these). */
  rowsSource: string;
  facts?: RowGraphFacts;
  reason?: string;
  externalDataDir?: string;
}

/**
 * What a load decided for the export at `source`, from the cache alone (nothing decoded, nothing
 * written: `assay models` asks it): the state read once, whole rows and why, or undefined where no
 * load has decided yet.
 */
export function rowReuseVerdict(source: string, cacheDir?: string): { reuses: true } | { reason: string } | undefined {
  let candidates: string[];
  try {
    candidates = targetsOf(resolve(source), statSync(resolve(source)), cacheDir);
  } catch {
    return undefined;
  }
  for (const target of candidates) {
    let known: Partial<RowGraphFile>;
    try {
      known = JSON.parse(readFileSync(`${target}.json`, 'utf8')) as Partial<RowGraphFile>;
    } catch {
      continue;
    }
    if (typeof known.reason === 'string') return { reason: known.reason };
    if (known.facts && existsSync(target)) return { reuses: true };
  }
  return undefined;
}

/** <cache>/<id>/<name>.assay-rows-<id>.onnx, in order of preference. */
export function targetsOf(
  source: string,
  info: { size: number; mtimeMs: number },
  cacheDir: string | undefined,
): string[] {
  const id = createHash('sha256')
    .update(`rows:${ROW_REUSE_VERSION}:${source}:${info.size}:${info.mtimeMs}`)
    .digest('hex')
    .slice(0, 12);
  const name = basename(source).replace(/\.onnx$/, `.assay-rows-${id}.onnx`);
  return (cacheDir ? [resolve(cacheDir)] : defaultGraphCacheDirs()).map((root) => join(root, id, name));
}
