// Residency: which models are in memory, within a count and a memory budget (docs/operations.md#model-residency).
// The settings, a resident model as the operator view reports it, how a model's size is measured
// (the process's RSS growth over its load, and over a request that ran alone) or guessed before its
// first load (the bytes of its folder), and the policy over the pool's slots (createResidency):
// estimate, make room by evicting the least recently used idle model, trim after a load measured
// more than was budgeted, and wait for room within a request's deadline. The slots' lifecycle
// (loads, leases, keep-alive, restarts) is the pool's (model-pool.ts); its refusals are errors.ts's.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { totalmem } from 'node:os';
import { DEFAULTS } from '../defaults.js';
import { mib, ModelsBusyError, ModelsPinnedError, ModelTooLargeError } from './errors.js';
import { expectedBytes, KeptMemory, residentBytes } from './model-size.js';

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

/** What the policy reads of a model the pool holds or wants: its slot (model-pool.ts). */
export interface Resident {
  readonly id: string;
  /** The folder, variant and rewrite it loads: sizes are measured per source. */
  readonly source: string;
  readonly dir: string;
  ready?: { stats(): { prefixCacheBytes: number } };
  loading?: Promise<unknown>;
  /** The default and --preload models: never unloaded for idleness or for room. */
  pinned: boolean;
  /** Requests holding it, and requests waiting for it (its load, or room to load it). */
  leases: number;
  queued: number;
  /** RSS growth over its load, bytes (never less than its files). */
  bytes: number;
  /** The most RSS grew over a request of its that ran alone: the working memory onnxruntime keeps for its passes. */
  workBytes: number;
  lastUsed?: number;
}

/** A request refused for room is told to come back after about this long (jittered by retryHeaders). */
const BUSY_RETRY_SECONDS = 2;

/** The residency policy over the pool's slots; `unload` is the pool's (it closes the model and counts the cause). */
export interface Residency<S extends Resident> {
  /** Models that take memory or a place: loaded, or loading. */
  occupying(): S[];
  /** What a model counts against the budget (model-size.ts): measured, with its prefix cache as it is, when loaded; else estimated. */
  sizeOf(s: S): number;
  /** Unloads least recently used idle models until `s` fits; 'full' when the rest are busy. Throws ModelTooLargeError, ModelsPinnedError. */
  makeRoom(s: S): 'ok' | 'full';
  /** A model just loaded: ModelTooLargeError (after unloading it) when it alone passes the budget; else idle models go until the set fits. */
  admit(s: S): void;
  /** After a measurement grew: idle models other than `s` go until the set fits again. */
  trim(s: S): void;
  /** Waits until a model unloads or goes idle; ModelsBusyError when the signal fires first (or there is none). */
  waitForRoom(id: string, signal: AbortSignal | undefined): Promise<void>;
  /** Wakes the requests waiting for room (a model unloaded or went idle). */
  wake(): void;
  /** Runs a model's load, measuring its RSS growth into `s.bytes`; loads run one at a time (the pool chains them). */
  measureLoad<T>(s: S, load: () => Promise<T>): Promise<T>;
  /** A model is unloading: what it frees the allocator may keep for the next load (model-size.ts's KeptMemory). */
  unloading(s: S): void;
  /** A load queued or running (no request is measured meanwhile); call the returned function when it ends. */
  loadStarted(): () => void;
  /** A request starts holding `s`; the returned function ends it (measuring its working memory when it ran alone). */
  requestStarted(s: S): () => void;
  /** The aggregate of the operator view. */
  view(models: ResidentModel[]): ResidencyView;
}

/**
 * The policy. `cacheShare` is the most each model's prefix cache may grow to, reserved only by the
 * "too large" refusal; `residents` lists every slot the pool has (retiring ones too).
 */
export function createResidency<S extends Resident>(
  opts: ResidencyOptions,
  cacheShare: number,
  residents: () => S[],
  unload: (s: S, cause: UnloadCause) => void,
): Residency<S> {
  /** Measured sizes by source: the next load of the same folder is budgeted with it. */
  const sizes = new Map<string, number>();
  /** Requests waiting for room: called when a model unloads or goes idle. */
  const roomWaiters = new Set<() => void>();
  /** Requests holding any model now, and the one request being measured (it ran alone, or it does not count). */
  let active = 0;
  let probe: { token: object; before: number; clean: boolean } | undefined;
  /** Loads started and not ended. */
  let loading = 0;
  /** Freed memory the allocator keeps for the next load; the largest RSS growth a load of each folder measured. */
  const kept = new KeptMemory();
  const loads = new Map<string, number>();

  const occupying = () => residents().filter((s) => s.ready !== undefined || s.loading !== undefined);
  /** Before a load: the most its folder measured (any id loading it), else its files. */
  const estimate = (s: S) => expectedBytes(sizes.get(s.source), folderBytes(s.dir));
  /** Resident: its own measurements and its prefix cache now; loading: the estimate. */
  const sizeOf = (s: S) => (s.ready ? residentBytes(s, s.ready.stats().prefixCacheBytes) : estimate(s));
  /** Keeps the largest measurement of a folder: RSS readings of one process are noisy, the budget errs high. */
  const measured = (s: S) => sizes.set(s.source, Math.max(sizes.get(s.source) ?? 0, s.bytes + s.workBytes));
  const evictable = (s: S) => !!s.ready && !s.loading && !s.pinned && s.leases === 0 && s.queued === 0;
  const used = (set: S[]) => set.reduce((t, s) => t + sizeOf(s), 0);
  const leastRecent = (set: S[]) => set.filter(evictable).sort((a, b) => (a.lastUsed ?? 0) - (b.lastUsed ?? 0))[0];

  function trim(loaded: S): void {
    for (;;) {
      if (used(occupying()) <= opts.memoryBudget) return;
      const victim = leastRecent(occupying().filter((s) => s !== loaded));
      if (!victim) return;
      unload(victim, 'evicted');
    }
  }

  function busyMessage(id: string): string {
    const set = occupying();
    const why =
      set.length >= opts.maxLoadedModels
        ? `${set.length} of ${opts.maxLoadedModels} models are resident (--max-loaded-models)`
        : `the memory budget is taken (${mib(used(set))} of ${mib(opts.memoryBudget)}, --memory-budget)`;
    return `Model ${id} cannot be loaded now: ${why} and each has requests in flight; retry later`;
  }

  return {
    occupying,
    sizeOf,
    trim,
    makeRoom(slot) {
      const need = estimate(slot);
      if (need + cacheShare > opts.memoryBudget)
        throw new ModelTooLargeError(slot.id, need + cacheShare, cacheShare, opts.memoryBudget, sizes.has(slot.source));
      const pinned = occupying().filter((s) => s !== slot && s.pinned);
      const pinnedBytes = used(pinned);
      const they = pinned.length === 1 ? 'it takes' : 'they take';
      const places = opts.maxLoadedModels === 1 ? 'the one place' : `all ${opts.maxLoadedModels} places`;
      const why =
        pinned.length + 1 > opts.maxLoadedModels
          ? `${they} ${places} of --max-loaded-models; raise it or pin fewer models`
          : pinnedBytes + need > opts.memoryBudget
            ? `${they} ${mib(pinnedBytes)} of the ${mib(opts.memoryBudget)} --memory-budget and it needs ${mib(need)}; raise the budget or pin fewer models`
            : undefined;
      if (why)
        throw new ModelsPinnedError(
          slot.id,
          pinned.map((s) => s.id),
          why,
        );
      for (;;) {
        const others = occupying().filter((s) => s !== slot);
        if (others.length + 1 <= opts.maxLoadedModels && used(others) + need <= opts.memoryBudget) return 'ok';
        const victim = leastRecent(others);
        if (!victim) return 'full';
        unload(victim, 'evicted');
      }
    },
    admit(slot) {
      if (slot.bytes + cacheShare > opts.memoryBudget) {
        unload(slot, 'too_large');
        throw new ModelTooLargeError(slot.id, slot.bytes + cacheShare, cacheShare, opts.memoryBudget, true);
      }
      trim(slot);
    },
    waitForRoom(id, signal) {
      if (!signal || signal.aborted) return Promise.reject(new ModelsBusyError(busyMessage(id), BUSY_RETRY_SECONDS));
      return new Promise((resolve, reject) => {
        const done = () => {
          roomWaiters.delete(done);
          signal.removeEventListener('abort', onAbort);
          resolve();
        };
        const onAbort = () => {
          roomWaiters.delete(done);
          reject(new ModelsBusyError(busyMessage(id), BUSY_RETRY_SECONDS));
        };
        roomWaiters.add(done);
        signal.addEventListener('abort', onAbort, { once: true });
      });
    },
    wake() {
      for (const w of [...roomWaiters]) w();
    },
    async measureLoad(slot, load) {
      if (probe) probe.clean = false; // a load inside a measured request is not that request's memory
      const before = opts.rss();
      kept.loading(before);
      const loaded = await load();
      // Its resident cost: what the process grew by over the load (weights, rewritten graph, the engine
      // thread). Loads run one at a time, so the growth is this model's; never less than its files
      // (memory an unloaded model freed and the allocator hands out again does not show as growth).
      // The memory earlier unloads freed and the allocator kept shows as no growth: counted (model-size.ts);
      // and a folder's load is never taken for less than its largest load in this process.
      const loadedBefore = loads.get(slot.source);
      slot.bytes = Math.max(kept.loaded(opts.rss() - before, loadedBefore), loadedBefore ?? 0, folderBytes(slot.dir));
      loads.set(slot.source, slot.bytes); // never below loadedBefore, by the line above
      measured(slot);
      return loaded;
    },
    unloading(slot) {
      kept.unloaded(slot.bytes + slot.workBytes, opts.rss());
    },
    loadStarted() {
      loading++;
      return () => void loading--;
    },
    requestStarted(slot) {
      const token = {};
      if (probe) probe.clean = false;
      else if (active === 0 && loading === 0) probe = { token, before: opts.rss(), clean: true };
      active++;
      return () => {
        active--;
        if (probe?.token !== token) return;
        if (probe.clean) {
          slot.workBytes = Math.max(slot.workBytes, opts.rss() - probe.before);
          measured(slot);
        }
        probe = undefined;
        trim(slot);
      };
    },
    view(models) {
      return {
        models,
        max_loaded_models: opts.maxLoadedModels,
        memory_budget_bytes: opts.memoryBudget,
        resident_bytes: used(occupying()),
        keep_alive_ms: opts.keepAliveMs,
      };
    },
  };
}
