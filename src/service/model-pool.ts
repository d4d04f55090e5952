// Loads evaluators for the registry's versioned ids when they are first asked for, and keeps each
// slot's lifecycle: one load at a time with a backoff after a failure, leases, keep-alive, restarts
// of a dead engine thread, registry reloads, the operator's view. Which models stay resident, within
// a count and a memory budget, is the residency policy's (residency.ts); the refusals are errors.ts's.
// Serving a synthetic (random-weight) model is always announced with a loud warning.
import { EngineDeadError, loadEvaluator, type EngineConfig, type EngineNote, type Evaluator } from '../engine/index.js';
import { DEFAULTS } from '../defaults.js';
import { resolveModel, type ModelEntry, type Registry } from '../registry/index.js';
import { ModelInUseError, ModelTooLargeError, ModelUnavailableError } from './errors.js';
import { announceEscalations } from './escalation-notice.js';
import type { Lease, ModelProvider, PoolLog } from './provider.js';
import {
  createResidency,
  residencyOptions,
  type Resident,
  type ResidencyCounts,
  type ResidencyOptions,
  type ResidentModel,
  type UnloadCause,
} from './residency.js';
import { registryChange, type RegistryChange } from './registry-change.js';

export const SYNTHETIC_WARNING =
  'SERVING A SYNTHETIC RANDOM-WEIGHT MODEL: its answers are MEANINGLESS until a real model is configured ' +
  '(assay models fetch <owner/name>, or point the registry at an exported model folder: docs/models.md#using-a-real-model)';

/** How the pool logs each kind of the engine's load notes: a note about how the export runs is info; a fallback warns. */
function logNote(log: PoolLog, model: string, note: EngineNote): void {
  switch (note.kind) {
    // Packing (several questions, or requests, per pass) unavailable is how this export runs, not a
    // fallback from what was asked: info. Anything else (e.g. the rewritten graph did not load) warns.
    case 'packing':
      return log.info({ model, reason: note.message }, 'model runs without packing');
    case 'q4':
      return log.info({ model, note: note.message }, 'model runs its 4-bit weights on the int8 kernels');
    case 'attention':
      return log.info({ model, note: note.message }, 'model attention');
    case 'family':
      return log.info({ model, note: note.message }, 'model family');
    case 'fallback':
      return log.warn({ model, reason: note.message }, 'model load fell back');
    case 'reuse':
      return log.info({ model, note: note.message }, 'model reads a state once');
    // A causal-row export whose rows each read the state again: it answers exactly, at whole rows' cost.
    case 'whole-rows':
      return log.warn({ model, reason: note.message }, 'model reads the state again for every question');
  }
}

/** A failed load is tried again after 1 s, 2 s, 4 s ... at most this long. */
const MAX_BACKOFF_MS = 5 * 60_000;

interface Slot extends Resident {
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
  const prefixBytes = (s: Slot) => (s.ready ? s.ready.stats().prefixCacheBytes : 0);
  /** Each model's prefix cache may grow to this: reserved only by the "too large" refusal (sizes: residency.ts, model-size.ts). */
  const cacheShare = engine.prefixCacheBytes ?? DEFAULTS.prefixCacheBytes;
  const policy = createResidency<Slot>(opts, cacheShare, all, (s, cause) => unload(s, cause));

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
    const evaluator = await policy.measureLoad(slot, () =>
      loadEvaluator({
        ...engine,
        modelDir: m.dir,
        variant: m.entry.variant,
        ...(m.entry.family ? { family: m.entry.family } : {}),
        rewriteGraph: engine.rewriteGraph !== false && m.entry.graph_rewrite !== false,
        fusedAttention: engine.fusedAttention !== false && m.entry.fused_attention !== false,
        onNote: (note) => logNote(log, slot.id, note),
        onDeath: (error) => died(slot, error),
      }),
    );
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

  function unload(slot: Slot, cause: UnloadCause): void {
    clearTimeout(slot.timer);
    slot.timer = undefined;
    slot.expiresAt = undefined;
    const e = slot.ready;
    if (!e) return;
    const bytes = policy.sizeOf(slot);
    policy.unloading(slot);
    slot.ready = undefined;
    if (slot.retired) retiring.delete(slot);
    const c = countOf(slot.id);
    c.unloads[cause] = (c.unloads[cause] ?? 0) + 1;
    log.info({ model: slot.id, cause, bytes }, 'model unloaded');
    // Its prefix cache lives in its engine thread and goes with it.
    void e.close();
    policy.wake();
  }

  /** A model nobody holds or waits for: unloaded now, later (keep-alive), or kept. */
  function idle(slot: Slot): void {
    if (slot.leases > 0 || slot.queued > 0 || !slot.ready) return;
    if (slot.retired) return unload(slot, 'registry');
    policy.wake(); // it can now be unloaded to make room
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
    policy.wake();
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
    const run = loadChain.then(() => open(slot)).finally(policy.loadStarted());
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
        policy.admit(slot);
        idle(slot);
        return evaluator;
      },
      (error: Error) => {
        slot.loading = undefined;
        const backoff = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** attempts);
        slot.failure = { error, attempts: attempts + 1, retryAt: now() + backoff };
        log.warn({ model: slot.id, reason: error.message, retry_in_ms: backoff }, 'model failed to load');
        policy.wake();
        throw error;
      },
    );
    return slot.loading;
  }

  function lease(slot: Slot, evaluator: Evaluator): Lease {
    const ended = policy.requestStarted(slot);
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
        ended();
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
          if (policy.makeRoom(slot) === 'full') {
            if (!waited) countOf(id).slotWaits++;
            waited = true;
            await policy.waitForRoom(id, signal);
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
      size_bytes: policy.sizeOf(s),
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
    residency: () =>
      policy.view(
        policy
          .occupying()
          .map(view)
          .sort((a, b) => a.model.localeCompare(b.model)),
      ),
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
      policy.wake();
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
