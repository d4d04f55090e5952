// The error handler: every error a request ends in is answered from the error table
// (error-table.ts), logged by its policy, and named in the request's access line.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { errorResponse } from '../error-table.js';
import { HostForbiddenError, OriginForbiddenError } from '../api-error.js';
import { drain, WrittenInvalidRequestError } from './body.js';

export interface ErrorsOptions {
  /** Per-request deadline, ms (the 408's detail names it). */
  deadlineMs: number;
  /** Largest accepted body, bytes (the 413's detail names it). */
  bodyLimit: number;
}

/** The handler; a route with its own body limit (/mcp) sets one of its own with that limit. */
export function errorHandler(app: FastifyInstance, options: ErrorsOptions) {
  return (err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply) => {
    // Body errors (media type, size, JSON) on an unknown path or method: the path is what is wrong.
    // A Host or Origin refused is refused on every path: a rebinding page learns nothing of the routes.
    const everyPath = err instanceof HostForbiddenError || err instanceof OriginForbiddenError;
    if (!req.routeOptions.url && !everyPath) return app.notFound(req, reply);
    const r = errorResponse(err, { ...options, requestId: req.id });
    req.facts = { ...req.facts, error: r.code };
    if (r.log) req.log.error({ err }, r.status >= 500 ? 'request failed' : 'request refused');
    const respond = () => {
      reply.code(r.status).headers(r.headers ?? {});
      // A big body's 422 (its detail may echo megabytes of it) was written off the loop: sent as written.
      if (err instanceof WrittenInvalidRequestError)
        return reply.type('application/json; charset=utf-8').send(err.json);
      return reply.send(r.body);
    };
    // A client still sending an oversized body would see its connection reset (EPIPE) instead of
    // the 413: read and discard what it sends, up to a bound, then answer and close.
    return r.status === 413 ? drain(req.raw).then(respond) : respond();
  };
}

async function errors(app: FastifyInstance, options: ErrorsOptions): Promise<void> {
  app.setErrorHandler(errorHandler(app, options));
}

/** On the server itself, so every route's errors reach it; after not-found (it answers unrouted requests). */
export const errorHandling = fp(errors, { name: 'assay-errors', dependencies: ['assay-not-found'] });
