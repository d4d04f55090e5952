// Loads evaluators for the registry's versioned ids when they are first asked for, keeps them
// resident within a count and a memory budget (residency.ts) and unloads them when idle or to make
// room; serving a synthetic (random-weight) model is always announced with a loud warning.
import {
  ATTENTION_NOTE,
  EngineDeadError,
  FAMILY_NOTE,
  loadEvaluator,
  Q4_NOTE,
  type EngineConfig,
  type Evaluator,
} from '../engine/index.js';
import { DEFAULTS } from '../defaults.js';
import type { LogPolicy } from '../protocol/index.js';
import { resolveModel, type ModelEntry, type Registry } from '../registry.js';
import { announceEscalations } from './escalation-notice.js';
import { ModelUnavailableError, type Lease, type ModelProvider } from './provider.js';
import {
  folderBytes,
  mib,
  ModelsBusyError,
  ModelsPinnedError,
  ModelTooLargeError,
  residencyOptions,
  type ResidencyCounts,
  type ResidencyOptions,
  type ResidentModel,
  type UnloadCause,
} from './residency.js';
import { registryChange, type RegistryChange } from './registry-change.js';
import { expectedBytes, KeptMemory, residentBytes } from './model-size.js';

export interface PoolLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export const SYNTHETIC_WARNING =
  'SERVING A SYNTHETIC RANDOM-WEIGHT MODEL: its answers are MEANINGLESS until a real model is configured ' +
  '(assay models fetch <owner/name>, or point the registry at an exported model folder: docs/models.md#using-a-real-model)';

/** The engine's load notes that only say packing is unavailable for this export (src/engine/execution/evaluator.ts). */
const PACKING_NOTE = /packed evaluation is not available|packing across requests is off/;

/** A failed load is tried again after 1 s, 2 s, 4 s ... at most this long. */
const MAX_BACKOFF_MS = 5 * 60_000;

interface Slot {
  id: string;
  /** The folder, variant and rewrite it loads (a registry reload that changes it re-points the id). */
  source: string;
  dir: string;
  /** Its registry entry when the slot was made: a load started before a reload loads what was asked for. */
  entry: ModelEntry;
  loading?: Promise<Evaluator>;
  ready?: Evaluator;
  failure?: { error: Error; attempts: number; retryAt: number };
  /** Deaths of its engine thread: in all, and in a row (reset once it has run RESTART_RESET_MS). */
  restarts: number;
  deathsInARow: number;
  readySince?: number;
  /** Requests holding it, and requests waiting for it (its load, or room to load it). */
  leases: number;
  queued: number;
  /** RSS growth over its load, bytes (never less than its files). */
  bytes: number;
  /** The most RSS grew over a request of its that ran alone: the working memory onnxruntime keeps for its passes. */
  workBytes: number;
  loadMs?: number;
  lastUsed?: number;
  expiresAt?: number;
  timer?: NodeJS.Timeout;
  /** The default and --preload models: never unloaded for idleness or for room. */
  pinned: boolean;
  /** Left the registry or re-pointed by a reload: unloaded once its last request is done. */
  retired: boolean;
}

/** A restarted engine that then runs this long without dying starts its backoff afresh. */
const RESTART_RESET_MS = 60_000;

/** A request refused for room is told to come back after about this long (jittered by retryHeaders). */
const BUSY_RETRY_SECONDS = 2;

export type ModelPool = ModelProvider & {
  /** Loads the default model and the --preload ones, kept resident; resolves with the default's evaluator. */
  preload(): Promise<Evaluator>;
  /** Loads a model as a request would (room made, then kept by keep-alive): the CLI, the operator. */
  load(id: string, signal?: AbortSignal): Promise<Evaluator>;
  /** A resident model as the operator view shows it; undefined when it is not resident. */
  view(id: string): ResidentModel | undefined;
  /** Unloads an idle model (the operator); throws ModelInUseError while requests hold it. */
  unload(id: string): boolean;
  /** Takes a new registry: added ids load on first use, removed and re-pointed ones unload once idle. */
  replaceRegistry(next: Registry): RegistryChange;
  registry(): Registry;
};

/** The operator asked to unload a model that requests are using. → 409. */
export class ModelInUseError extends Error {
  static readonly code = 'model_in_use';
  static readonly log: LogPolicy = 'none';
  constructor(id: string, n: number) {
    super(
      `Model ${id} has ${n} request(s) in flight or queued; it is not unloaded under them (retry once they finish)`,
    );
    this.name = 'ModelInUseError';
  }
}

/**
 * Evaluators for a registry. `engine` holds the options every model shares (threads, queue,
 * prefix cache, provider); folder and variant come from each registry entry; `residency` the count,
 * budget and keep-alive (left out: no limits, every model loaded stays).
 *
 * A request never loads a model itself: `acquire` answers with the loaded evaluator, or starts (or
 * joins) the one background load and waits for it, within the request's signal. Loads run one at a
 * time, so each one's RSS growth is its own. A failed load is remembered and tried again only after
 * an exponential backoff; requests meanwhile get 503 with the reason and the time left. Model
 * folders are never written here: synthetic models are generated by `assay models synth`.
 */
export function createModelPool(
  initial: Registry,
  engine: Omit<EngineConfig, 'modelDir' | 'variant'>,
  log: PoolLog,
  now: () => number = Date.now,
  residency: Partial<ResidencyOptions> = {},
): ModelPool {
  const opts = residencyOptions(residency);
  let registry = initial;
  const slots = new Map<string, Slot>();
  /** Slots a registry reload took out, still held by requests. */
  const retiring = new Set<Slot>();
  const counts = new Map<string, ResidencyCounts>();
  /** Measured sizes by source: the next load of the same folder is budgeted with it. */
  const sizes = new Map<string, number>();
  /** Requests waiting for room: called when a model unloads or goes idle. */
  const roomWaiters = new Set<() => void>();
  let loadChain: Promise<unknown> = Promise.resolve();
  let startupDone = false;
  let pinnedNames: string[] = [];
  const defaultIdOf = (r: Registry) => {
    // An escalating default has no folder: its first model is the one to preload and to be ready.
    const d = resolveModel(r, r.default);
    return d?.entry.escalate ? resolveModel(r, d.entry.escalate.first)!.id : (d?.id ?? r.default);
  };
  let defaultId = defaultIdOf(registry);
  announceEscalations(registry, log);
  let closed = false;
  /** Folders already announced as synthetic: once per folder, however many ids and aliases name it. */
  const announced = new Set<string>();

  const countOf = (id: string) => {
    let c = counts.get(id);
    if (!c) counts.set(id, (c = { loads: 0, loadSeconds: 0, unloads: {}, slotWaits: 0 }));
    return c;
  };
  const all = () => [...slots.values(), ...retiring];
  /** Models that take memory or a place: loaded, or loading. */
  const occupying = () => all().filter((s) => s.ready !== undefined || s.loading !== undefined);
  const prefixBytes = (s: Slot) => (s.ready ? s.ready.stats().prefixCacheBytes : 0);
  // ---- sizes (model-size.ts: what ps and the budget count) ----
  /** Each model's prefix cache may grow to this: reserved only by the "too large" refusal. */
  const cacheShare = engine.prefixCacheBytes ?? DEFAULTS.prefixCacheBytes;
  /** Before a load: the most its folder measured (any id loading it), else its files. */
  const estimate = (s: Slot) => expectedBytes(sizes.get(s.source), folderBytes(s.dir));
  /** Resident: its own measurements and its prefix cache now; loading: the estimate. */
  const sizeOf = (s: Slot) => (s.ready ? residentBytes(s, prefixBytes(s)) : estimate(s));
  // ---- end sizes ----
  /** Freed memory the allocator keeps for the next load; the largest RSS growth a load of each folder measured. */
  const kept = new KeptMemory();
  const loads = new Map<string, number>();
  /** Keeps the largest measurement of a folder: RSS readings of one process are noisy, the budget errs high. */
  const measured = (s: Slot) => sizes.set(s.source, Math.max(sizes.get(s.source) ?? 0, s.bytes + s.workBytes));
  /** Requests holding any model now, and the one request being measured (it ran alone, or it does not count). */
  let active = 0;
  let probe: { slot: Slot; token: object; before: number; clean: boolean } | undefined;
  /** Loads started and not ended. */
  let loading = 0;
  const evictable = (s: Slot) => !!s.ready && !s.loading && !s.pinned && s.leases === 0 && s.queued === 0;

  function sourceOf(id: string, r: Registry): { source: string; dir: string; entry: ModelEntry } | undefined {
    const m = resolveModel(r, id);
    if (!m || m.entry.escalate) return undefined;
    const rewrite = engine.rewriteGraph !== false && m.entry.graph_rewrite !== false;
    const fused = engine.fusedAttention !== false && m.entry.fused_attention !== false;
    return {
      source: `${m.dir}|${m.entry.variant ?? ''}|${rewrite}|${fused}|${m.entry.family ?? ''}`,
      dir: m.dir,
      entry: m.entry,
    };
  }

  async function open(slot: Slot): Promise<Evaluator> {
    const m = { dir: slot.dir, entry: slot.entry };
    const started = performance.now();
    if (probe) probe.clean = false; // a load inside a measured request is not that request's memory
    const before = opts.rss();
    kept.loading(before);
    const evaluator = await loadEvaluator({
      ...engine,
      modelDir: m.dir,
      variant: m.entry.variant,
      ...(m.entry.family ? { family: m.entry.family } : {}),
      rewriteGraph: engine.rewriteGraph !== false && m.entry.graph_rewrite !== false,
      fusedAttention: engine.fusedAttention !== false && m.entry.fused_attention !== false,
      onWarning: (message) =>
        // Packing (several questions, or requests, per pass) unavailable is how this export runs, not a
        // fallback from what was asked: info. Anything else (e.g. the rewritten graph did not load) warns.
        PACKING_NOTE.test(message)
          ? log.info({ model: slot.id, reason: message }, 'model runs without packing')
          : message.startsWith(Q4_NOTE)
            ? log.info({ model: slot.id, note: message }, 'model runs its 4-bit weights on the int8 kernels')
            : message.startsWith(ATTENTION_NOTE)
              ? log.info({ model: slot.id, note: message.slice(ATTENTION_NOTE.length).trim() }, 'model attention')
              : message.startsWith(FAMILY_NOTE)
                ? log.info({ model: slot.id, note: message.slice(FAMILY_NOTE.length).trim() }, 'model family')
                : log.warn({ model: slot.id, reason: message }, 'model load fell back'),
      onDeath: (error) => died(slot, error),
    });
    // Its resident cost: what the process grew by over the load (weights, rewritten graph, the engine
    // thread). Loads run one at a time, so the growth is this model's; never less than its files
    // (memory an unloaded model freed and the allocator hands out again does not show as growth).
    // The memory earlier unloads freed and the allocator kept shows as no growth: counted (model-size.ts);
    // and a folder's load is never taken for less than its largest load in this process.
    const loadedBefore = loads.get(slot.source);
    slot.bytes = Math.max(kept.loaded(opts.rss() - before, loadedBefore), loadedBefore ?? 0, folderBytes(slot.dir));
    loads.set(slot.source, Math.max(loads.get(slot.source) ?? 0, slot.bytes));
    measured(slot);
    slot.loadMs = performance.now() - started;
    const c = countOf(slot.id);
    c.loads++;
    c.loadSeconds += slot.loadMs / 1000;
    log.info(
      { model: slot.id, dir: m.dir, graph: evaluator.graph, ms: Math.round(slot.loadMs), bytes: slot.bytes },
      'model loaded',
    );
    // A registry entry generated from trained weights is not random: its manifest says so.
    if (
      ((m.entry.synthetic && m.entry.synthetic.weights === undefined) || evaluator.synthetic) &&
      !announced.has(m.dir)
    ) {
      announced.add(m.dir);
      log.warn({ model: slot.id, synthetic: true }, SYNTHETIC_WARNING);
    }
    return evaluator;
  }

  function slotOf(id: string): Slot {
    let slot = slots.get(id);
    if (!slot) {
      const src = sourceOf(id, registry);
      if (!src) throw new ModelUnavailableError(`Model ${id} is not in the registry (it was reloaded)`, 1);
      slots.set(
        id,
        (slot = {
          id,
          ...src,
          restarts: 0,
          deathsInARow: 0,
          leases: 0,
          queued: 0,
          bytes: 0,
          workBytes: 0,
          pinned: false,
          retired: false,
        }),
      );
    }
    return slot;
  }

  function wake(): void {
    for (const w of [...roomWaiters]) w();
  }

  function unload(slot: Slot, cause: UnloadCause): void {
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.expiresAt = undefined;
    const e = slot.ready;
    if (!e) return;
    const bytes = sizeOf(slot);
    kept.unloaded(slot.bytes + slot.workBytes, opts.rss());
    slot.ready = undefined;
    if (slot.retired) retiring.delete(slot);
    const c = countOf(slot.id);
    c.unloads[cause] = (c.unloads[cause] ?? 0) + 1;
    log.info({ model: slot.id, cause, bytes }, 'model unloaded');
    // Its prefix cache lives in its engine thread and goes with it.
    void e.close();
    wake();
  }

  /** A model nobody holds or waits for: unloaded now, later (keep-alive), or kept. */
  function idle(slot: Slot): void {
    if (slot.leases > 0 || slot.queued > 0 || !slot.ready) return;
    if (slot.retired) return unload(slot, 'registry');
    wake(); // it can now be unloaded to make room
    if (slot.pinned || opts.keepAliveMs < 0 || slot.timer) return;
    if (opts.keepAliveMs === 0) return unload(slot, 'expired');
    // Keep-alive counts from its last use.
    slot.expiresAt = (slot.lastUsed ?? now()) + opts.keepAliveMs;
    slot.timer = setTimeout(
      () => {
        slot.timer = undefined;
        if (slot.leases === 0 && slot.queued === 0 && !slot.pinned) unload(slot, 'expired');
      },
      Math.max(0, slot.expiresAt - now()),
    );
    slot.timer.unref();
  }

  /** Unloads least recently used idle models until `slot` fits the count and the budget. */
  function makeRoom(slot: Slot): 'ok' | 'full' {
    const need = estimate(slot);
    if (need + cacheShare > opts.memoryBudget)
      throw new ModelTooLargeError(slot.id, need + cacheShare, cacheShare, opts.memoryBudget, sizes.has(slot.source));
    const pinned = occupying().filter((s) => s !== slot && s.pinned);
    const pinnedBytes = pinned.reduce((t, s) => t + sizeOf(s), 0);
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
      const used = others.reduce((t, s) => t + sizeOf(s), 0);
      if (others.length + 1 <= opts.maxLoadedModels && used + need <= opts.memoryBudget) return 'ok';
      const victim = others.filter(evictable).sort((a, b) => (a.lastUsed ?? 0) - (b.lastUsed ?? 0))[0];
      if (!victim) return 'full';
      unload(victim, 'evicted');
    }
  }

  /** After a load measured more than was budgeted: idle models go until the set fits again. */
  function trim(loaded: Slot): void {
    for (;;) {
      const used = occupying().reduce((t, s) => t + sizeOf(s), 0);
      if (used <= opts.memoryBudget) return;
      const victim = occupying()
        .filter((s) => s !== loaded && evictable(s))
        .sort((a, b) => (a.lastUsed ?? 0) - (b.lastUsed ?? 0))[0];
      if (!victim) return;
      unload(victim, 'evicted');
    }
  }

  function busyMessage(id: string): string {
    const set = occupying();
    const used = set.reduce((t, s) => t + sizeOf(s), 0);
    const why =
      set.length >= opts.maxLoadedModels
        ? `${set.length} of ${opts.maxLoadedModels} models are resident (--max-loaded-models)`
        : `the memory budget is taken (${mib(used)} of ${mib(opts.memoryBudget)}, --memory-budget)`;
    return `Model ${id} cannot be loaded now: ${why} and each has requests in flight; retry later`;
  }

  /** Waits until a model unloads or goes idle; ModelsBusyError when the signal fires first (or there is none). */
  function waitForRoom(id: string, signal: AbortSignal | undefined): Promise<void> {
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
  }

  /** Rejects with the signal's reason when it fires first. */
  function within<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    if (!signal) return p;
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(signal.reason as Error);
      signal.addEventListener('abort', onAbort, { once: true });
      p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /**
   * A model's engine thread died: its requests have ended with EngineDeadError (503). The slot
   * forgets it at once (/healthz 503 for the default model) and the model is loaded again: at once
   * the first time (new requests wait for that load within their deadline), then after the load
   * backoff while it keeps dying (requests meanwhile get 503 "stopped; retrying in N s").
   */
  function died(slot: Slot, error: Error): void {
    const dead = slot.ready;
    slot.ready = undefined;
    void dead?.close();
    wake();
    if (closed || slot.retired) return;
    if (slot.readySince !== undefined && now() - slot.readySince > RESTART_RESET_MS) slot.deathsInARow = 0;
    slot.restarts++;
    const delay = slot.deathsInARow === 0 ? 0 : Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (slot.deathsInARow - 1));
    slot.deathsInARow++;
    slot.failure = { error, attempts: 0, retryAt: now() + delay };
    log.warn(
      { model: slot.id, reason: error.message, restart_in_ms: delay, restarts: slot.restarts },
      'engine thread died; restarting the model',
    );
    setTimeout(() => {
      if (!closed && !slot.retired) load(slot).catch(() => {}); // the outcome is remembered in the slot
    }, delay).unref();
  }

  /** Starts (or joins) the load of a model, after the loads before it; resolves when it is ready. */
  function load(slot: Slot): Promise<Evaluator> {
    if (slot.ready) return Promise.resolve(slot.ready);
    if (slot.loading) return slot.loading;
    const attempts = slot.failure?.attempts ?? 0;
    loading++;
    const run = loadChain.then(() => open(slot)).finally(() => loading--);
    loadChain = run.catch(() => undefined);
    slot.loading = run.then(
      (evaluator) => {
        slot.loading = undefined;
        slot.failure = undefined;
        if (closed) {
          void evaluator.close();
          throw new Error('the model pool is closed');
        }
        slot.ready = evaluator;
        slot.readySince = now();
        slot.lastUsed = now();
        if (slot.bytes + cacheShare > opts.memoryBudget) {
          unload(slot, 'too_large');
          throw new ModelTooLargeError(slot.id, slot.bytes + cacheShare, cacheShare, opts.memoryBudget, true);
        }
        trim(slot);
        idle(slot);
        return evaluator;
      },
      (error: Error) => {
        slot.loading = undefined;
        const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** attempts);
        slot.failure = { error, attempts: attempts + 1, retryAt: now() + backoff };
        log.warn({ model: slot.id, reason: error.message, retry_in_ms: backoff }, 'model failed to load');
        wake();
        throw error;
      },
    );
    return slot.loading;
  }

  function lease(slot: Slot, evaluator: Evaluator): Lease {
    const token = {};
    if (probe) probe.clean = false;
    else if (active === 0 && loading === 0) probe = { slot, token, before: opts.rss(), clean: true };
    active++;
    slot.leases++;
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.expiresAt = undefined;
    slot.lastUsed = now();
    let released = false;
    return {
      evaluator,
      release() {
        if (released) return;
        released = true;
        active--;
        if (probe?.token === token) {
          if (probe.clean) {
            slot.workBytes = Math.max(slot.workBytes, opts.rss() - probe.before);
            measured(slot);
          }
          probe = undefined;
          trim(slot);
        }
        slot.leases--;
        slot.lastUsed = now();
        idle(slot);
      },
    };
  }

  async function acquire(id: string, signal?: AbortSignal): Promise<Lease> {
    const slot = slotOf(id);
    slot.queued++;
    let waited = false;
    try {
      for (;;) {
        if (closed) throw new Error('the model pool is closed');
        if (slot.ready) return lease(slot, slot.ready);
        const failure = slot.failure;
        if (failure && !slot.loading && now() < failure.retryAt) {
          const seconds = (failure.retryAt - now()) / 1000;
          const what =
            failure.error instanceof EngineDeadError
              ? `Model ${id} stopped (${failure.error.message})`
              : `Model ${id} failed to load (${failure.error.message})`;
          throw new ModelUnavailableError(`${what}; retrying in ${Math.ceil(seconds)} s`, seconds, true);
        }
        if (!slot.loading) {
          if (makeRoom(slot) === 'full') {
            if (!waited) countOf(id).slotWaits++;
            waited = true;
            await waitForRoom(id, signal);
            continue;
          }
          load(slot).catch(() => {}); // waited for below; the outcome is remembered in the slot
        }
        // A model that is loading is waited for: the caller's deadline bounds the wait. A failed
        // load is a 503 with its reason.
        await within(slot.loading!, signal).catch((error: Error) => {
          if (signal?.aborted || error instanceof ModelTooLargeError) throw error;
          const retryAt = slot.failure?.retryAt ?? now();
          const seconds = Math.max(1, (retryAt - now()) / 1000);
          throw new ModelUnavailableError(
            `Model ${id} failed to load (${error.message}); retrying in ${Math.ceil(seconds)} s`,
            seconds,
            true,
            { cause: error },
          );
        });
      }
    } finally {
      slot.queued--;
      idle(slot);
    }
  }

  function view(s: Slot): ResidentModel {
    const iso = (t: number | undefined) => (t === undefined ? null : new Date(t).toISOString());
    return {
      model: s.id,
      size_bytes: sizeOf(s),
      prefix_cache_bytes: prefixBytes(s),
      state: s.ready ? 'ready' : 'loading',
      family: s.ready ? s.ready.stats().family : null,
      loaded_at: iso(s.ready ? s.readySince : undefined),
      last_used: iso(s.lastUsed),
      expires_at: iso(s.expiresAt),
      pinned: s.pinned,
      in_flight: s.leases,
      queued: s.queued,
      load_ms: s.ready && s.loadMs !== undefined ? Math.round(s.loadMs) : null,
    };
  }

  /** The default and the --preload names, as versioned ids with a folder (an escalating entry: its local models). */
  function pinnedIds(): string[] {
    const ids = new Set<string>([defaultId]);
    for (const name of pinnedNames) {
      const m = resolveModel(registry, name);
      if (!m) continue;
      const spec = m.entry.escalate;
      const names = spec ? [spec.first, ...(typeof spec.second === 'string' ? [spec.second] : [])] : [m.id];
      for (const n of names) ids.add(resolveModel(registry, n)!.id);
    }
    return [...ids];
  }

  async function loadPinned(): Promise<void> {
    const ids = pinnedIds();
    for (const id of ids) slotOf(id).pinned = true;
    for (const id of ids) (await acquire(id)).release();
  }

  return {
    acquire,
    async preload() {
      pinnedNames = [...opts.preload];
      for (const name of pinnedNames)
        if (!resolveModel(registry, name)) throw new Error(`--preload names ${name}, which the registry does not know`);
      await loadPinned();
      startupDone = true;
      return slots.get(defaultId)!.ready!;
    },
    async load(id, signal) {
      // A command or an operator that asked for this load is told the load's own error.
      const lease = await acquire(id, signal).catch((e: Error) => {
        throw e instanceof ModelUnavailableError && e.cause instanceof Error ? e.cause : e;
      });
      lease.release();
      return lease.evaluator;
    },
    view(id) {
      const slot = slots.get(id);
      return slot && (slot.ready || slot.loading) ? view(slot) : undefined;
    },
    unload(id) {
      const slot = slots.get(id);
      if (!slot?.ready) return false;
      if (slot.leases + slot.queued > 0) throw new ModelInUseError(id, slot.leases + slot.queued);
      slot.pinned = false;
      unload(slot, 'operator');
      return true;
    },
    replaceRegistry(next) {
      const change = registryChange(registry, next, (id, r) => sourceOf(id, r)?.source);
      registry = next;
      for (const id of [...change.removed, ...change.changed]) {
        const slot = slots.get(id);
        if (!slot) continue;
        slots.delete(id);
        slot.retired = true;
        slot.pinned = false;
        clearTimeout(slot.timer);
        if (slot.ready || slot.loading) retiring.add(slot);
        idle(slot);
      }
      // A reload is also the operator's "try again now" (the files were fixed): a model whose load
      // failed loads at its next request, not once its backoff has run out.
      for (const s of slots.values()) if (!s.ready && !s.loading) s.failure = undefined;
      defaultId = defaultIdOf(registry);
      pinnedNames = pinnedNames.filter((n) => resolveModel(registry, n));
      for (const s of slots.values()) s.pinned = false;
      announceEscalations(registry, log);
      // The (new) default and the remaining --preload models load now and stay.
      loadPinned().catch((err: Error) =>
        log.warn({ reason: err.message }, 'a model kept resident failed to load after the registry reload'),
      );
      log.info(change, 'registry reloaded');
      return change;
    },
    registry: () => registry,
    residency: () => {
      const set = occupying();
      return {
        models: set.map(view).sort((a, b) => a.model.localeCompare(b.model)),
        max_loaded_models: opts.maxLoadedModels,
        memory_budget_bytes: opts.memoryBudget,
        resident_bytes: set.reduce((t, s) => t + sizeOf(s), 0),
        keep_alive_ms: opts.keepAliveMs,
      };
    },
    counts: () => Object.fromEntries([...counts].map(([id, c]) => [id, { ...c, unloads: { ...c.unloads } }])),
    loaded: () =>
      all()
        .filter((s) => s.ready)
        .map((s) => ({ model: s.id, stats: s.ready!.stats() })),
    ready: () => {
      const s = slots.get(defaultId);
      return !!s?.ready || (startupDone && !s?.failure && !s?.loading);
    },
    restarts: () =>
      Object.fromEntries(
        all()
          .filter((s) => s.restarts > 0)
          .map((s) => [s.id, s.restarts]),
      ),
    async close() {
      closed = true;
      for (const s of all()) clearTimeout(s.timer);
      wake();
      await Promise.allSettled(
        all()
          .filter((s) => s.ready)
          .map((s) => s.ready!.close()),
      );
      slots.clear();
      retiring.clear();
    },
  };
}
