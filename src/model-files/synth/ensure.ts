// Generates a synthetic model folder on first use and reuses it afterwards.
//
// The folder is written under a temporary name and renamed into place only when complete (its
// assay.json, written last, says so), so concurrent callers and interrupted runs never see a
// half-written model: a loser of the rename race discards its copy and uses the winner's.
import { readFileSync, readdirSync, renameSync, rmSync, mkdirSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { synthesize, weightsDigest } from './folder.js';
import { GENERATOR_VERSION, variantName, type ShapeName, type SynthDtype } from './shapes.js';

export const GENERATED_DIR = fileURLToPath(new URL('../../../models/generated/', import.meta.url));

export interface EnsureOptions {
  shape: ShapeName;
  dtype: SynthDtype;
  /** Whether the graph takes position_ids (default true). */
  positionIds?: boolean;
  seed?: number;
  /** Trained weights (safetensors) instead of random ones; the folder is regenerated when they change. */
  weights?: string;
  /** Target folder (default `models/generated/<shape>-<dtype>[-nopos]`). */
  out?: string;
  /** Regenerate even if a complete folder exists. */
  force?: boolean;
  log?: (line: string) => void;
}

/** Default folder of a variant. */
export function synthModelDir(shape: ShapeName, dtype: SynthDtype, positionIds = true): string {
  return join(GENERATED_DIR, variantName(shape, dtype, positionIds));
}

interface Marker {
  synthetic?: boolean;
  generator_version?: number;
  shape?: string;
  dtype?: string;
  position_ids?: boolean;
  seed?: number;
  trained?: { sha256?: string };
}

function readMarker(dir: string): Marker | null {
  try {
    return JSON.parse(readFileSync(join(dir, 'assay.json'), 'utf8')) as Marker;
  } catch {
    return null;
  }
}

function isComplete(dir: string, opts: EnsureOptions): boolean {
  const m = readMarker(dir);
  return (
    m !== null &&
    (opts.weights === undefined ? m.synthetic === true : m.trained?.sha256 === weightsDigest(opts.weights)) &&
    m.generator_version === GENERATOR_VERSION &&
    m.shape === opts.shape &&
    m.dtype === opts.dtype &&
    m.position_ids === (opts.positionIds ?? true) &&
    (opts.seed === undefined || m.seed === opts.seed)
  );
}

/**
 * Whether the folder `opts.out` (default the variant's) is complete and was written for `opts`: the
 * same generator version, shape, dtype and inputs, and the same weights (random, or the trained
 * file's SHA-256).
 */
export function synthModelCurrent(opts: EnsureOptions): boolean {
  return isComplete(resolve(opts.out ?? synthModelDir(opts.shape, opts.dtype, opts.positionIds ?? true)), opts);
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes temporary folders left by interrupted runs (their process is gone). */
function sweepStale(target: string): void {
  const parent = dirname(target);
  const prefix = `.${basename(target)}.`;
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const n of names) {
    if (!n.startsWith(prefix)) continue;
    const pid = Number(/\.(?:tmp|old)-(\d+)-/.exec(n)?.[1]);
    if (Number.isInteger(pid) && pid !== process.pid && !pidAlive(pid)) {
      rmSync(join(parent, n), { recursive: true, force: true });
    }
  }
}

/** Returns the folder of a synthetic model, generating it if missing or outdated. */
export async function ensureSynthModel(opts: EnsureOptions): Promise<string> {
  const positionIds = opts.positionIds ?? true;
  const target = resolve(opts.out ?? synthModelDir(opts.shape, opts.dtype, positionIds));
  if (!opts.force && isComplete(target, opts)) return target;

  const parent = dirname(target);
  mkdirSync(parent, { recursive: true });
  sweepStale(target);
  const tag = `${process.pid}-${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  const tmp = join(parent, `.${basename(target)}.tmp-${tag}`);
  try {
    opts.log?.(`generating ${variantName(opts.shape, opts.dtype, positionIds)} in ${target}`);
    synthesize({
      shape: opts.shape,
      dtype: opts.dtype,
      positionIds,
      seed: opts.seed,
      weights: opts.weights,
      out: tmp,
      log: opts.log,
    });
    for (let attempt = 0; ; attempt++) {
      try {
        renameSync(tmp, target);
        return target;
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'ENOTEMPTY' && code !== 'EEXIST' && code !== 'EISDIR') throw e;
        // Someone else finished first: use theirs, unless it is stale or we were asked to replace it.
        if (!opts.force && isComplete(target, opts)) return target;
        if (attempt > 3) throw e;
        const old = join(parent, `.${basename(target)}.old-${tag}`);
        try {
          renameSync(target, old);
        } catch {
          // Raced with another replacer; retry the rename.
        }
        rmSync(old, { recursive: true, force: true });
      }
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
