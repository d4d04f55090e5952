// Residency: which models are in memory, within a count and a memory budget (docs/operations.md#model-residency).
// The settings, a resident model as the operator view reports it, the two refusals, and how a
// model's size is measured (the process's RSS growth over its load) or guessed before its first
// load (the bytes of its folder).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { totalmem } from 'node:os';
import { DEFAULTS } from '../defaults.js';
import type { LogPolicy } from '../protocol/index.js';
import { ModelUnavailableError } from './provider.js';

export interface ResidencyOptions {
  /** Most models resident (loaded or loading) at once. */
  maxLoadedModels: number;
  /** Idle time before a model is unloaded, ms: 0 after each request, negative never. */
  keepAliveMs: number;
  /** Bytes the resident models may take (sizes as measured by `rss`). */
  memoryBudget: number;
  /** Names loaded at startup besides the default; they stay resident, as the default does. */
  preload: readonly string[];
  /** The process's resident set size in bytes (process.memoryUsage.rss; tests may pass their own). */
  rss: () => number;
}

/** What a resident model looks like to the operator (GET /admin/models, `assay ps`). */
export interface ResidentModel {
  model: string;
  /**
   * What it counts against the budget (model-size.ts): the RSS growth over its load (never less
   * than its files) plus the most RSS grew over one of its requests that ran alone (onnxruntime's
   * working memory), plus what its prefix cache holds now.
   */
  size_bytes: number;
  /** What its prefix cache holds now (it goes with the model). */
  prefix_cache_bytes: number;
  state: 'loading' | 'ready';
  /** Its model family (docs/models.md#model-families), once loaded; null while it loads. */
  family: string | null;
  /** ISO times; expires_at null while requests are in flight or for a model kept resident. */
  loaded_at: string | null;
  last_used: string | null;
  expires_at: string | null;
  /** Kept resident (the default, --preload): never unloaded for idleness or room. */
  pinned: boolean;
  in_flight: number;
  /** Requests waiting for it to load or for room. */
  queued: number;
  load_ms: number | null;
}

/** Counters per model for /metrics. */
export interface ResidencyCounts {
  loads: number;
  loadSeconds: number;
  unloads: Partial<Record<UnloadCause, number>>;
  slotWaits: number;
}

/** Why a model left memory: room for another, idle past keep-alive, an operator, a registry reload. */
export type UnloadCause = 'evicted' | 'expired' | 'operator' | 'registry' | 'too_large';

/** The residency view: each resident model, the limits and what is used of them. */
export interface ResidencyView {
  models: ResidentModel[];
  max_loaded_models: number;
  memory_budget_bytes: number;
  resident_bytes: number;
  keep_alive_ms: number;
}

/**
 * Every resident model has requests in flight or queued, so none can be unloaded to make room, and
 * none freed it within the request's deadline. → 503 with retry-after (jittered); not logged (an
 * expected refusal under a full budget, counted as a slot wait on /metrics).
 */
export class ModelsBusyError extends ModelUnavailableError {
  static override readonly code: string = 'models_busy';
  static override readonly log: LogPolicy = 'none';

  constructor(message: string, retryAfterSeconds: number) {
    super(message, retryAfterSeconds);
    this.name = 'ModelsBusyError';
  }
}

/**
 * The pinned models (--preload) alone leave no room for this one (their count at
 * --max-loaded-models, or their bytes with its own past --memory-budget): waiting cannot help until
 * the settings change. → 503, no retry-after; a batch line fails with it instead of waiting.
 */
export class ModelsPinnedError extends Error {
  static readonly code = 'models_pinned';
  static readonly log: LogPolicy = 'message';

  constructor(id: string, pinned: string[], why: string) {
    super(
      `Model ${id} cannot be loaded while ${pinned.join(', ')} ${pinned.length === 1 ? 'stays' : 'stay'} resident (pinned by --preload): ${why}`,
    );
    this.name = 'ModelsPinnedError';
  }
}

/** A model that alone needs more than the memory budget: refused before (or right after) its load. → 503, no retry-after. */
export class ModelTooLargeError extends Error {
  static readonly code = 'model_too_large';
  static readonly log: LogPolicy = 'message';

  constructor(id: string, bytes: number, cacheShare: number, budget: number, measured: boolean) {
    super(
      `Model ${id} needs ${mib(bytes)} (${measured ? 'measured at its load' : 'its files'}, with its prefix cache's ${mib(cacheShare)}), more than the whole memory budget of ${mib(budget)} (--memory-budget)`,
    );
    this.name = 'ModelTooLargeError';
  }
}

export function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/** The default budget: a share of the machine's memory, or of the cgroup's limit where that is lower. */
export function defaultMemoryBudget(): number {
  const limit = process.constrainedMemory?.() ?? 0;
  const machine = totalmem();
  const total = limit > 0 && limit < machine ? limit : machine;
  return Math.floor(total * DEFAULTS.memoryBudgetShare);
}

/**
 * The options with what is left out filled: no limits (every model loaded stays), as an embedding
 * program or a test that never asked for residency expects; `assay serve` passes all of its settings.
 */
export function residencyOptions(o: Partial<ResidencyOptions> = {}): ResidencyOptions {
  return {
    maxLoadedModels: o.maxLoadedModels ?? Infinity,
    keepAliveMs: o.keepAliveMs ?? -1,
    memoryBudget: o.memoryBudget ?? Infinity,
    preload: o.preload ?? [],
    rss: o.rss ?? (() => process.memoryUsage.rss()),
  };
}

/** The bytes of a model's folder (its files, recursively): the guess of its size before its first load. */
export function folderBytes(dir: string): number {
  let total = 0;
  try {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) total += folderBytes(p);
      else if (e.isFile()) total += statSync(p).size;
    }
  } catch {
    // A missing folder guesses 0: its load fails and says why.
  }
  return total;
}
