// buildServer: the Fastify app of the API, from already-made parts (registry, model provider,
// keys), so tests build it in-process and `assay serve` builds it from configuration.
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { DEFAULTS } from '../defaults.js';
import type { Registry } from '../registry.js';
import { KeyStore, type ApiKey } from './auth.js';
import type { ApiContext } from './context.js';
import { loggerOptions, requestId, type LogStream } from './plugins/logging.js';
import { DrainingError } from './api-error.js';
import { bodyParsing } from './plugins/body.js';
import { errorHandling } from './plugins/errors.js';
import { notFoundHandling } from './plugins/not-found.js';
import { createMetrics, type Metrics } from './metrics.js';
import type { ModelProvider } from '../service/index.js';
import type { KernelPaths } from '../engine/index.js';
import { DEFAULT_RATE_LIMITS, RateLimiter, type RateLimits } from './rate-limit.js';
import { modelsRoute } from './routes/models.js';
import { opsRoutes } from './routes/ops.js';
import { systemoneRoute } from './routes/systemone.js';
import { pagesRoutes } from './routes/pages.js';

export interface ServerOptions {
  registry: Registry;
  models: ModelProvider;
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
  /** The confidence formula the models were given (engine `confidence`), reported by /playground/models; default entropy. */
  confidence?: 'entropy' | 'hosted';
  /** Clock of the rate limiter (ms). */
  now?: () => number;
}

export type { LogStream };

export interface AssayServer extends FastifyInstance {
  assay: { metrics: Metrics; draining(): boolean };
}

/** The health check answers while draining (it says so): /healthz, and /health as the hosted service names it. */
const HEALTH_PATHS = ['/healthz', '/health'];

export async function buildServer(options: ServerOptions): Promise<AssayServer> {
  const bodyLimit = options.bodyLimit ?? DEFAULTS.bodyLimit;
  let draining = false;
  const app = Fastify({
    logger: options.logging === false ? false : loggerOptions(options.logLevel, options.logStream, options.logFormat),
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    genReqId: requestId,
    // A client gets this long to send its whole request (slowloris guard); evaluation is bounded by the deadline.
    requestTimeout: options.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs,
    // Requests that still arrive while draining get our own 503 (see onRequest).
    return503OnClosing: false,
  });

  const metrics = createMetrics(
    () => options.models.loaded(),
    options.kernels,
    () => options.models.restarts?.() ?? {},
  );
  const ctx: ApiContext = {
    registry: options.registry,
    models: options.models,
    keys: new KeyStore(options.keys),
    limiter: new RateLimiter({ ...DEFAULT_RATE_LIMITS, ...options.rateLimits }, options.now),
    metrics,
    deadlineMs: options.deadlineMs ?? DEFAULTS.deadlineMs,
    prefixCacheScope: options.prefixCacheScope ?? 'key',
    serverTimingEngine: options.serverTimingEngine ?? false,
    confidence: options.confidence ?? DEFAULTS.confidence,
    draining: () => draining,
  };

  app.decorateRequest('apiKey', null);
  app.decorateRequest('facts', null);
  app.decorate('assay', { metrics, draining: () => draining });
  app.addHook('preClose', async () => {
    draining = true;
  });
  // While draining, every response closes its connection, so keep-alive clients do not hold
  // the shutdown open once their in-flight request is answered.
  // Server-Timing: `total` is the server's time on the request up to sending (body read, parsing,
  // validation, handler, serialization); routes that run the engine add `engine` before it.
  app.addHook('onSend', async (_req, reply) => {
    if (draining) reply.header('connection', 'close');
    const engine = reply.getHeader('server-timing');
    const total = `total;dur=${reply.elapsedTime.toFixed(2)}`;
    reply.header('server-timing', typeof engine === 'string' ? `${engine}, ${total}` : total);
  });

  await app.register(bodyParsing, { bodyLimit, inlineBodyBytes: options.inlineBodyBytes ?? DEFAULTS.inlineBodyBytes });

  // Every response carries the request id, under the hosted service's header too (its official
  // SDKs report only that one); every finished request is counted and logged.
  app.addHook('onRequest', async (req, reply) => {
    reply.header('x-request-id', req.id);
    reply.header('x-typesafe-request-id', req.id);
    if (options.replicaId) reply.header('x-assay-replica', options.replicaId);
    const route = req.routeOptions.url ?? 'unmatched';
    metrics.inFlight(route, 1);
    let done = false;
    // 'finish': the response was sent; 'close' without it: the client went away first (499).
    const finish = (sent: boolean) => {
      if (done) return;
      done = true;
      metrics.inFlight(route, -1);
      const status = sent ? reply.statusCode : 499;
      const seconds = reply.elapsedTime / 1000;
      metrics.observe(req.method, route, status, seconds);
      req.log.info(
        { route, method: req.method, status, ms: Math.round(seconds * 1e4) / 10, ...(req.facts ?? {}) },
        'request',
      );
    };
    reply.raw.once('finish', () => finish(true));
    reply.raw.once('close', () => finish(false));
    if (draining && !HEALTH_PATHS.includes(route)) throw new DrainingError('The server is shutting down');
  });

  await app.register(notFoundHandling);
  await app.register(errorHandling, { deadlineMs: ctx.deadlineMs, bodyLimit });

  systemoneRoute(app, ctx);
  modelsRoute(app, ctx);
  await pagesRoutes(app, ctx, { docs: options.docs ?? true, playground: options.playground ?? true });
  opsRoutes(app, ctx);
  await app.ready();
  return app as unknown as AssayServer;
}
