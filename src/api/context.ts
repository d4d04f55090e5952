// What the routes share: the registry, the models, keys, limits and metrics of one server, as
// `app.assay`; and the request's own decorations (its key, its access-log facts, its body's key order).
import type { SentOrder } from '../protocol/index.js';
import type { Registry } from '../registry/index.js';
import type { ApiKey, KeyStore } from './auth.js';
import type { Metrics } from './metrics.js';
import type { Batches, ModelProvider, RegistryChange, ResidencyView, ResidentModel } from '../service/index.js';
import type { RateLimiter } from './rate-limit.js';

/** What the operator endpoints (/admin/...) steer: the model pool's residency and the registry reload. */
export interface OperatorControls {
  residency(): ResidencyView;
  /** Loads a versioned id as a request would (room made; kept by keep-alive). */
  load(id: string, signal?: AbortSignal): Promise<unknown>;
  view(id: string): ResidentModel | undefined;
  /** Unloads an idle model: false when it is not resident; ModelInUseError while requests hold it. */
  unload(id: string): boolean;
  /** Reads the registry file again and takes it; RegistryRefusedError (the set unchanged) when it is bad. */
  reloadRegistry(): RegistryChange;
}

export interface ApiContext {
  /** The registry now (a reload replaces it). */
  readonly registry: Registry;
  /** The operator endpoints' controls; absent: /admin/... is not served. */
  operator?: OperatorControls;
  models: ModelProvider;
  keys: KeyStore;
  limiter: RateLimiter;
  metrics: Metrics;
  /** Per-request deadline in ms (queue wait + evaluation); past it, 408. */
  deadlineMs: number;
  /** 'key' (default): each API key has its own prefix cache scope; 'shared': one cache for all keys. */
  prefixCacheScope: 'key' | 'shared';
  /** Send the engine's duration in Server-Timing (off by default: it tells a cache hit from a miss). */
  serverTimingEngine: boolean;
  /** The confidence formula the models run with (--confidence), for the pages that show answers. */
  confidence: 'entropy' | 'hosted';
  /** Batch jobs (/v1/batches); absent: off, for the reason in `batchesUnavailable`. */
  batches?: Batches;
  /** Why batches are off (no data directory, a store that cannot open). */
  batchesUnavailable?: string;
  /** True once shutdown has begun. */
  draining(): boolean;
}

/** Per-request facts for the access log (counts and ids only, never content). */
export interface RequestFacts {
  model?: string;
  question_count?: number;
  input_tokens?: number;
  /** What the model family's layout cut by its authors' design: questions per part, e.g. "state=3, options=1". */
  truncated?: string;
  /** The error table's code when the request ended in an error (e.g. deadline, overloaded). */
  error?: string;
}

// The server's own state, typed on Fastify's own types (plugins/state.ts decorates them).
declare module 'fastify' {
  interface FastifyInstance {
    /** What the routes share (plugins/state.ts). */
    assay: ApiContext;
  }
  interface FastifyRequest {
    apiKey: ApiKey | null;
    facts: RequestFacts | null;
    /** A body parsed inline: the order its question ids and options were sent in (plugins/body.ts). */
    sentOrder: SentOrder | null;
  }
}
