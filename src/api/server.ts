// buildServer: the Fastify app of the API, from already-made parts (registry, model provider,
// keys), so tests build it in-process and `assay serve` builds it from configuration.
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { DEFAULTS } from '../defaults.js';
import { KeyStore } from './auth.js';
import type { ApiContext, OperatorControls } from './context.js';
import { loggerOptions, requestId, type LogStream } from './plugins/logging.js';
import { bodyParsing } from './plugins/body.js';
import { errorHandling } from './plugins/errors.js';
import { notFoundHandling } from './plugins/not-found.js';
import { requestLifecycle } from './plugins/requests.js';
import { serverState } from './plugins/state.js';
import { createMetrics } from './metrics.js';
import { DEFAULT_RATE_LIMITS, RateLimiter } from './rate-limit.js';
import { modelsRoute } from './routes/models.js';
import { opsRoutes } from './routes/ops.js';
import { openApiDocument } from './openapi/document.js';
import { probeRoutes } from './routes/probes.js';
import { adminRoutes } from './routes/admin.js';
import { systemoneRoute } from './routes/systemone.js';
import { pagesRoutes } from './routes/pages.js';
import { mcpRoute } from './routes/mcp.js';
import { batchesRoutes } from './routes/batches.js';
import { wireBatches } from './batches-wiring.js';
import { originChecks } from './plugins/origins.js';
import type { ServerOptions } from './server-options.js';

export type { ServerOptions };
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
  // Before any route: it documents each one as it is added (GET /openapi.json).
  await app.register(openApiDocument);
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
  await app.register(probeRoutes);
  if (options.mcp ?? DEFAULTS.mcp) await app.register(mcpRoute, { bodyLimit });
  if (options.operator) await app.register(adminRoutes);
  await app.ready();
  return app;
}
