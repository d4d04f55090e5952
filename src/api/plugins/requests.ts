// A request's life on the server: its id on the response, the in-flight gauge, the metrics and the
// access log line once it ends, 503 while draining, and Server-Timing on the way out.
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { DrainingError } from '../api-error.js';
import { PROBE_PATHS } from '../routes/probes.js';

export interface RequestsOptions {
  /** Sent as `x-assay-replica` on every response when set (a proxy's routing, made visible). */
  replicaId?: string;
}

/** The health checks answer while draining (they say so): /healthz, /health as the hosted service names it, the probes. */
const HEALTH_PATHS = ['/healthz', '/health', ...PROBE_PATHS];

async function requests(app: FastifyInstance, options: RequestsOptions): Promise<void> {
  const { metrics, draining } = app.assay;
  // While draining, every response closes its connection, so keep-alive clients do not hold
  // the shutdown open once their in-flight request is answered.
  // Server-Timing: `total` is the server's time on the request up to sending (body read, parsing,
  // validation, handler, serialization); routes that run the engine add `engine` before it.
  app.addHook('onSend', async (_req, reply) => {
    if (draining()) reply.header('connection', 'close');
    const engine = reply.getHeader('server-timing');
    const total = `total;dur=${reply.elapsedTime.toFixed(2)}`;
    reply.header('server-timing', typeof engine === 'string' ? `${engine}, ${total}` : total);
  });

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
    if (draining() && !HEALTH_PATHS.includes(route)) throw new DrainingError('The server is shutting down');
  });
}

/** On the server itself: every route's requests, and unrouted ones, pass these hooks. */
export const requestLifecycle = fp(requests, { name: 'assay-requests', dependencies: ['assay-state'] });
