// buildServer: the Fastify app of the API, from already-made parts (registry, model provider,
// keys), so tests build it in-process and `assay serve` builds it from configuration.
import { randomUUID } from 'node:crypto';
import Fastify, {
  errorCodes,
  LogController,
  type FastifyError,
  type FastifyServerOptions,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import { DEFAULTS } from '../defaults.js';
import type { Registry } from '../registry.js';
import { KeyStore, type ApiKey } from './auth.js';
import type { ApiContext } from './context.js';
import { contentFree, errorResponse } from './error-table.js';
import { InvalidRequestError, retryHeaders } from '../protocol/index.js';
import { jsonInvalid } from '../protocol/index.js';
import { ApiError } from './api-error.js';
import { BodyWorker, nestsDeeperThan } from './body-worker.js';
import { ValidatedBody } from '../protocol/index.js';
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

/** A pino destination: anything with write(line). */
export interface LogStream {
  write(line: string): void;
}

export interface AssayServer extends FastifyInstance {
  assay: { metrics: Metrics; draining(): boolean };
}

const REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/** The health check answers while draining (it says so): /healthz, and /health as the hosted service names it. */
const HEALTH_PATHS = ['/healthz', '/health'];

/** Stack frames only, plus the message of content-free (engine, runtime) errors: other messages may quote request content. */
function errorSerializer(err: Error & { code?: string }) {
  const frames = (err.stack ?? '').split('\n').filter((l) => /^\s+at /.test(l));
  return {
    type: err.name,
    code: err.code,
    ...(contentFree(err) ? { message: err.message } : {}),
    frames: frames.join('\n'),
  };
}

export function loggerOptions(
  level = 'info',
  stream?: LogStream,
  format: 'json' | 'pretty' = 'json',
): Exclude<FastifyServerOptions['logger'], boolean | undefined> {
  // pino-pretty runs as pino's transport (a worker thread), so formatting costs the event loop nothing.
  const pretty = format === 'pretty' && !stream;
  const options = {
    level,
    ...(stream ? { stream } : {}),
    ...(pretty
      ? {
          transport: {
            target: 'pino-pretty',
            options: {
              colorize: process.stdout.isTTY === true,
              translateTime: 'SYS:HH:MM:ss.l',
              ignore: 'pid,hostname',
            },
          },
        }
      : {}),
    // Zero data retention: requests are logged by id, route, status, timing and counts only.
    serializers: {
      req: (req: FastifyRequest) => ({ id: req.id, method: req.method }),
      res: (res: FastifyReply) => ({ statusCode: res.statusCode }),
      err: errorSerializer,
    },
    redact: {
      paths: [
        'headers',
        'body',
        'state',
        'instructions',
        'criteria',
        'questions',
        '*.headers',
        '*.body',
        '*.state',
        '*.instructions',
        '*.criteria',
        '*.questions',
      ],
      censor: '[redacted]',
    },
  };
  return options as unknown as Exclude<FastifyServerOptions['logger'], boolean | undefined>;
}

/** How much of an oversized body is read and discarded so the client can read its 413. */
const DRAIN_BYTES = 128 * 1024 * 1024;
const DRAIN_MS = 30_000;

function drain(raw: NodeJS.ReadableStream & { complete?: boolean }): Promise<void> {
  if (raw.complete) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const finish = () => {
      clearTimeout(timer);
      raw.removeListener('data', onData);
      raw.removeListener('end', finish);
      raw.removeListener('error', finish);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > DRAIN_BYTES) finish();
    };
    const timer = setTimeout(finish, DRAIN_MS);
    raw.on('data', onData);
    raw.on('end', finish);
    raw.on('error', finish);
    raw.resume();
  });
}

/** 405 (with Allow) for a path a route answers with another method, else 404, as FastAPI answers them. */
function notFound(req: FastifyRequest, reply: FastifyReply, known: Map<string, string[]>): FastifyReply {
  const allowed = known.get(req.url.split('?')[0] ?? '');
  if (allowed && !allowed.includes(req.method)) {
    return reply.code(405).header('allow', allowed.join(', ')).send({ detail: 'Method Not Allowed' });
  }
  return reply.code(404).send({ detail: 'Not Found' });
}

export async function buildServer(options: ServerOptions): Promise<AssayServer> {
  const bodyLimit = options.bodyLimit ?? DEFAULTS.bodyLimit;
  let draining = false;
  const app = Fastify({
    logger: options.logging === false ? false : loggerOptions(options.logLevel, options.logStream, options.logFormat),
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit,
    genReqId: (req) => {
      const h = req.headers['x-request-id'];
      return typeof h === 'string' && REQUEST_ID.test(h) ? h : `req_${randomUUID().replaceAll('-', '')}`;
    },
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

  // application/json bodies, and bodies sent without a Content-Type (read as JSON, as FastAPI does);
  // any other media type is 415. Malformed JSON gets FastAPI's json_invalid 422. Small, shallow
  // bodies are parsed here; large or deep ones in the body worker (body-worker.ts), off the loop.
  const inlineBodyBytes = options.inlineBodyBytes ?? DEFAULTS.inlineBodyBytes;
  const bodyWorker = new BodyWorker();
  app.removeAllContentTypeParsers();
  const json = (bytes: Buffer, done: (err: Error | null, body?: unknown) => void) => {
    if (bytes.length === 0) return done(null, undefined); // no body: "Field required" at ["body"]
    if (bytes.length <= inlineBodyBytes) {
      const raw = bytes.toString('utf8');
      if (!nestsDeeperThan(raw)) {
        let body: unknown;
        try {
          body = JSON.parse(raw);
        } catch {
          return done(new InvalidRequestError([jsonInvalid(raw)]), undefined);
        }
        // Validation (the nesting bound first) runs in the service (protocol/validate.ts), one walk.
        return done(null, body);
      }
    }
    bodyWorker.check(bytes).then(
      ({ verdict, bytes: valid }) => {
        if ('detail' in verdict) return done(new InvalidRequestError(verdict.detail), undefined);
        done(null, new ValidatedBody(valid!, verdict.model, verdict.questionCount));
      },
      // The worker died with this body in it: never parsed here instead (that is the stall this avoids).
      () =>
        done(
          new ApiError(
            503,
            'The request body could not be checked; retry',
            retryHeaders(1000),
            'body_worker_unavailable',
          ),
          undefined,
        ),
    );
  };
  app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit }, (_req, data, done) =>
    json(data as Buffer, done),
  );
  // The catch-all parser: fastify gives it both bodies without a Content-Type and unknown media types.
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (req, data, done) => {
    if (req.headers['content-type'] === undefined) return json(data as Buffer, done);
    done(new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(), undefined);
  });
  app.addHook('onClose', async () => bodyWorker.close());

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
    if (draining && !HEALTH_PATHS.includes(route)) throw new ApiError(503, 'The server is shutting down');
  });

  app.setErrorHandler((err: FastifyError | Error, req, reply) => {
    // Body errors (media type, size, JSON) on an unknown path or method: the path is what is wrong.
    if (!req.routeOptions.url) return notFound(req, reply, known);
    const r = errorResponse(err, { deadlineMs: ctx.deadlineMs, bodyLimit });
    req.facts = { ...req.facts, error: r.code };
    if (r.log) req.log.error({ err }, r.status >= 500 ? 'request failed' : 'request refused');
    const respond = () =>
      reply
        .code(r.status)
        .headers(r.headers ?? {})
        .send(r.body);
    // A client still sending an oversized body would see its connection reset (EPIPE) instead of
    // the 413: read and discard what it sends, up to a bound, then answer and close.
    return r.status === 413 ? drain(req.raw).then(respond) : respond();
  });

  // The methods of every fixed path, as the routes register them (for 405 vs 404).
  const known = new Map<string, string[]>();
  app.addHook('onRoute', (route) => {
    if (/[:*]/.test(route.url)) return;
    known.set(route.url, [...(known.get(route.url) ?? []), ...[route.method].flat()]);
  });
  app.setNotFoundHandler((req, reply) => notFound(req, reply, known));

  systemoneRoute(app, ctx);
  modelsRoute(app, ctx);
  await pagesRoutes(app, ctx, { docs: options.docs ?? true, playground: options.playground ?? true });
  opsRoutes(app, ctx);
  await app.ready();
  return app as unknown as AssayServer;
}
