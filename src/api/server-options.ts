// What buildServer (server.ts) is built from: the already-made parts (registry, model provider, keys,
// batches) and the settings `assay serve` resolves, each with its default.
import type { AllowedHosts } from '../common/index.js';
import type { KernelPaths } from '../engine/index.js';
import type { Registry } from '../registry/index.js';
import type { Batches, ModelProvider } from '../service/index.js';
import type { ApiKey } from './auth.js';
import type { OperatorControls } from './context.js';
import type { LogStream } from './plugins/logging.js';
import type { RateLimits } from './rate-limit.js';

export interface ServerOptions {
  /** The registry at startup (the model provider's own, when it has one, is read after a reload). */
  registry: Registry;
  models: ModelProvider;
  /** The operator endpoints' controls (/admin/..., operator keys only); absent: not served. */
  operator?: OperatorControls;
  keys: readonly ApiKey[];
  rateLimits?: Partial<RateLimits>;
  /** Per-request deadline (queue wait + evaluation), ms. */
  deadlineMs?: number;
  /** Largest accepted body, bytes (413 above). */
  bodyLimit?: number;
  /** Time a client gets to send its whole request, ms. */
  requestTimeoutMs?: number;
  logLevel?: string;
  /** json (default): one JSON object per line; pretty: pino-pretty's colourised lines (for a terminal). */
  logFormat?: 'json' | 'pretty';
  /** Where log lines go (default stdout); tests pass a capturing stream (always JSON). */
  logStream?: LogStream;
  /** false: no logging at all. */
  logging?: boolean;
  /** 'key' (default): prefix cache scoped per API key; 'shared': one cache for every key. */
  prefixCacheScope?: 'key' | 'shared';
  /** Report the engine's duration in Server-Timing (default off). */
  serverTimingEngine?: boolean;
  /** The CPU's int8 / 4-bit kernel paths, exported on /metrics as assay_cpu_kernels_info. */
  kernels?: KernelPaths;
  /** Serve /docs (Swagger UI on /openapi.json); default true. */
  docs?: boolean;
  /** Serve /playground; default true. */
  playground?: boolean;
  /** Sent as `x-assay-replica` on every response when set (a proxy's routing, made visible). */
  replicaId?: string;
  /** Bodies larger than this many bytes are parsed and validated in the body worker (default DEFAULTS.inlineBodyBytes). */
  inlineBodyBytes?: number;
  /** Larger bodies on their way to the body worker at once; the others wait unread (default DEFAULTS.bigBodySlots). */
  bigBodySlots?: number;
  /** The confidence formula the models were given (engine `confidence`), reported by /playground/models; default entropy. */
  confidence?: 'entropy' | 'hosted';
  /**
   * Host names the server answers to besides localhost, *.localhost, IP literals and the machine's
   * name (`*.suffix` allowed); 'any': no Host check. Default: none besides those (hosts.ts).
   */
  allowedHosts?: AllowedHosts;
  /** Origins (`scheme://host[:port]`) browser apps may call from, with CORS headers; `*`: any. Default: none. */
  corsOrigins?: readonly string[];
  /** Serve the MCP endpoint /mcp; default true. */
  mcp?: boolean;
  /** Batch jobs (/v1/batches), opened by the caller (its store); absent: off, for `batchesUnavailable`. */
  batches?: Batches;
  /** Why batches are off, told to callers of /v1/batches (503). */
  batchesUnavailable?: string;
  /** Clock of the rate limiter (ms). */
  now?: () => number;
}
