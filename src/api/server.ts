// buildServer: the Fastify app of the API, from already-made parts (registry, model provider,
// keys), so tests build it in-process and `assay serve` builds it from configuration.
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { DEFAULTS } from '../defaults.js';
import type { Registry } from '../registry/index.js';
import { KeyStore, type ApiKey } from './auth.js';
import type { ApiContext, OperatorControls } from './context.js';
import { loggerOptions, requestId, type LogStream } from './plugins/logging.js';
import { bodyParsing } from './plugins/body.js';
import { errorHandling } from './plugins/errors.js';
import { notFoundHandling } from './plugins/not-found.js';
import { requestLifecycle } from './plugins/requests.js';
import { serverState } from './plugins/state.js';
import { createMetrics } from './metrics.js';
import type { Batches, ModelProvider } from '../service/index.js';
import type { KernelPaths } from '../engine/index.js';
import { DEFAULT_RATE_LIMITS, RateLimiter, type RateLimits } from './rate-limit.js';
import { modelsRoute } from './routes/models.js';
import { opsRoutes } from './routes/ops.js';
import { adminRoutes } from './routes/admin.js';
import { systemoneRoute } from './routes/systemone.js';
import { pagesRoutes } from './routes/pages.js';
import { mcpRoute } from './routes/mcp.js';
import { batchesRoutes } from './routes/batches.js';
import { wireBatches } from './batches-wiring.js';
import { originChecks } from './plugins/origins.js';
import type { AllowedHosts } from '../common/index.js';

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

export type { LogStream, OperatorControls };

/**
 * The server: Fastify's instance with the state plugins/state.ts puts on it (declared in context.ts;
 * named here too so the published types carry it).
 */
export type AssayServer = FastifyInstance & { assay: ApiContext };

/** The app: Fastify with the logger, then the plugins in the order their hooks run, then the routes. */
export async function buildServer(options: ServerOptions): Promise<AssayServer> {
  const bodyLimit = options.bodyLimit ?? DEFAULTS.bodyLimit;
  const app = Fastify({
    logger: options.logging === false ? false : loggerOptions(options.logLevel, options.logStream, options.logFormat),
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    genReqId: requestId,
    // A client gets this long to send its whole request (slowloris guard); evaluation is bounded by the deadline.
    requestTimeout: options.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs,
    // Requests that still arrive while draining get our own 503 (plugins/requests.ts).
    return503OnClosing: false,
    // A request without Host reaches the Host check (plugins/origins.ts) and gets its JSON 403,
    // instead of Node's bare 400.
    http: { requireHostHeader: false },
  });

  const metrics = createMetrics(
    () => options.models.loaded(),
    options.kernels,
    () => options.models.restarts?.() ?? {},
    options.models,
  );
  const deadlineMs = options.deadlineMs ?? DEFAULTS.deadlineMs;
  await app.register(serverState, {
    registryNow: () => options.models.registry?.() ?? options.registry,
    models: options.models,
    operator: options.operator,
    keys: new KeyStore(options.keys),
    limiter: new RateLimiter({ ...DEFAULT_RATE_LIMITS, ...options.rateLimits }, options.now),
    metrics,
    deadlineMs,
    prefixCacheScope: options.prefixCacheScope ?? DEFAULTS.prefixCacheScope,
    serverTimingEngine: options.serverTimingEngine ?? DEFAULTS.serverTimingEngine,
    confidence: options.confidence ?? DEFAULTS.confidence,
    ...(options.batches ? { batches: options.batches } : {}),
    batchesUnavailable: options.batchesUnavailable,
  });
  if (options.batches) wireBatches(app, app.assay, options.batches);
  await app.register(requestLifecycle, { replicaId: options.replicaId });
  await app.register(bodyParsing, {
    bodyLimit,
    inlineBodyBytes: options.inlineBodyBytes ?? DEFAULTS.inlineBodyBytes,
    bigBodySlots: options.bigBodySlots,
  });
  await app.register(notFoundHandling);
  await app.register(errorHandling, { deadlineMs, bodyLimit });
  // After the error handler: its refusals (and the CORS preflight route it may add) are answered by it.
  await app.register(originChecks, {
    allowedHosts: options.allowedHosts ?? [],
    corsOrigins: options.corsOrigins ?? [],
  });

  await app.register(systemoneRoute);
  await app.register(batchesRoutes);
  await app.register(modelsRoute);
  await app.register(pagesRoutes, {
    docs: options.docs ?? DEFAULTS.docs,
    playground: options.playground ?? DEFAULTS.playground,
  });
  await app.register(opsRoutes);
  if (options.mcp ?? DEFAULTS.mcp) await app.register(mcpRoute, { bodyLimit });
  if (options.operator) await app.register(adminRoutes);
  await app.ready();
  return app;
}
