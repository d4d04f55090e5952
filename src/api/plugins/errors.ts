// The error handler: every error a request ends in is answered from the error table
// (error-table.ts), logged by its policy, and named in the request's access line.
import type { FastifyError, FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { errorResponse } from '../error-table.js';
import { drain } from './body.js';

export interface ErrorsOptions {
  /** Per-request deadline, ms (the 408's detail names it). */
  deadlineMs: number;
  /** Largest accepted body, bytes (the 413's detail names it). */
  bodyLimit: number;
}

async function errors(app: FastifyInstance, options: ErrorsOptions): Promise<void> {
  app.setErrorHandler((err: FastifyError | Error, req, reply) => {
    // Body errors (media type, size, JSON) on an unknown path or method: the path is what is wrong.
    if (!req.routeOptions.url) return app.notFound(req, reply);
    const r = errorResponse(err, options);
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
}

/** On the server itself, so every route's errors reach it; after not-found (it answers unrouted requests). */
export const errorHandling = fp(errors, { name: 'assay-errors', dependencies: ['assay-not-found'] });
