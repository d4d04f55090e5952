// What the server needs from the models (ModelProvider): an evaluator per versioned id, held for a
// request by a lease; the pool (model-pool.ts) is the one `assay serve` runs, staticModels the one
// tests and embedding programs use.
import type { EngineStats, Evaluator } from '../engine/index.js';
import type { Registry } from '../registry/index.js';
import type { ResidencyCounts, ResidencyView } from './residency.js';

/** Where the models' lifecycle is logged (pino's info and warn, or a test's collector). */
export interface PoolLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

/** A loaded model's engine counters, for /metrics. */
export interface EngineSnapshot {
  model: string;
  stats: EngineStats;
}

/** A model held for one request: it is not unloaded until `release` (called once, when the request is done with it). */
export interface Lease {
  evaluator: Evaluator;
  release(): void;
}

/** What the server needs from the models: an evaluator per versioned id, held while a request uses it. */
export interface ModelProvider {
  /**
   * The evaluator of a versioned id, held until the lease is released: loaded first when it is not
   * resident (a load in progress is waited for; room is made by unloading the least recently used
   * idle model, or waited for), all within the signal. ModelUnavailableError (503) after a failed
   * load; ModelsBusyError (503) when no room came before the signal; ModelTooLargeError (503).
   */
  acquire(id: string, signal?: AbortSignal): Promise<Lease>;
  /** Loaded evaluators, for /metrics. */
  loaded(): EngineSnapshot[];
  /** Whether the default model is loaded (GET /healthz). */
  ready(): boolean;
  /** Engine threads that died and were restarted, by versioned id (/metrics). */
  restarts?(): Record<string, number>;
  /** What is resident, for the operator (GET /admin/models) ; absent: no residency (everything stays). */
  residency?(): ResidencyView;
  /** Loads, load seconds, unloads by cause and slot waits, by versioned id (/metrics). */
  counts?(): Record<string, ResidencyCounts>;
  /** The registry the models come from now (it changes on a reload). */
  registry?(): Registry;
  close(): Promise<void>;
}

/** Runs `fn` on a model's evaluator, held for the time it runs. */
export async function withModel<T>(
  models: ModelProvider,
  id: string,
  signal: AbortSignal | undefined,
  fn: (e: Evaluator) => Promise<T>,
): Promise<T> {
  const lease = await models.acquire(id, signal);
  try {
    return await fn(lease.evaluator);
  } finally {
    lease.release();
  }
}

/** A provider over evaluators that are already loaded (tests, embedding). */
export function staticModels(evaluators: Record<string, Evaluator>): ModelProvider {
  return {
    async acquire(id) {
      const e = evaluators[id];
      if (!e) throw new Error(`no evaluator loaded for model ${id}`);
      return { evaluator: e, release: () => {} };
    },
    loaded: () => Object.entries(evaluators).map(([model, e]) => ({ model, stats: e.stats() })),
    ready: () => true,
    close: async () => {
      await Promise.all(Object.values(evaluators).map((e) => e.close()));
    },
  };
}
