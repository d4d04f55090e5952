// /mcp: the MCP tools (src/mcp) over Streamable HTTP, behind the same bearer keys, per-key models
// and limits as /v1/systemone. Stateless: each POST is answered by a fresh server and transport
// (no session to keep or to steal), with a JSON response. GET (a server-sent stream) and DELETE
// (ending a session) have nothing to serve without sessions: 405 with Allow: POST, as for any
// path. The Host and Origin checks of every route (plugins/origins.ts) are the transport spec's
// Origin validation: they run before this route, and they say what the SDK's exact-match lists
// cannot (`*.localhost`, IP literals, `*.suffix`).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { packageVersion } from '../../common/index.js';
import { InvalidRequestError, jsonInvalid } from '../../protocol/index.js';
import { createMcpServer, ToolFailure, type McpBackend } from '../../mcp/index.js';
import { listModels } from '../../registry/index.js';
import { admission, keyAllows } from '../admission.js';
import { nestsDeeperThan } from '../body-worker.js';
import type { ApiContext } from '../context.js';
import { errorResponse } from '../error-table.js';
import { errorHandler } from '../plugins/errors.js';
import { evaluateAsKey, untilClientGone } from '../evaluate-as-key.js';

/** Largest MCP message, bytes: parsed on the event loop, so small (a bigger state goes to POST /v1/systemone). */
const MCP_BODY_LIMIT = 256 * 1024;

export interface McpRouteOptions {
  /** The server's body limit (the MCP one is the smaller of it and MCP_BODY_LIMIT). */
  bodyLimit: number;
}

/** The tools' backend for one request: the service under the request's key. */
function keyBackend(ctx: ApiContext, req: FastifyRequest, reply: FastifyReply, bodyLimit: number): McpBackend {
  const key = req.apiKey!;
  const gone = untilClientGone(reply);
  return {
    defaultModel: ctx.registry.default,
    models: async () => listModels(ctx.registry, (name, id) => keyAllows(key, name, id)).map((m) => m.metadata),
    async evaluate(body, signal) {
      try {
        return (await evaluateAsKey(ctx, req, body, AbortSignal.any([gone, ...(signal ? [signal] : [])]))).response;
      } catch (error) {
        const r = errorResponse(error as Error, { deadlineMs: ctx.deadlineMs, bodyLimit });
        req.facts = { ...req.facts, error: r.code };
        if (r.log) req.log.error({ err: error }, r.status >= 500 ? 'mcp tool call failed' : 'mcp tool call refused');
        throw new ToolFailure(r.status, r.body.detail, r.headers);
      }
    },
    thresholds: (id) => ctx.registry.models[id]?.decision_thresholds,
  };
}

export async function mcpRoute(app: FastifyInstance, options: McpRouteOptions): Promise<void> {
  const ctx = app.assay;
  const bodyLimit = Math.min(MCP_BODY_LIMIT, options.bodyLimit);
  // JSON-RPC bodies of this route only: small, parsed here (a 413 names this limit); any other media type is 415.
  app.setErrorHandler(errorHandler(app, { deadlineMs: ctx.deadlineMs, bodyLimit }));
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit }, (_req, text, done) => {
    if (nestsDeeperThan(text as string)) return done(new InvalidRequestError([jsonInvalid(text as string)]));
    try {
      done(null, JSON.parse(text as string));
    } catch {
      done(new InvalidRequestError([jsonInvalid(text as string)]));
    }
  });

  const handle = async (req: FastifyRequest, reply: FastifyReply) => {
    const server = createMcpServer(keyBackend(ctx, req, reply, bodyLimit), packageVersion());
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    // The transport writes the response itself: Fastify's headers so far (request ids, CORS) go first.
    reply.hijack();
    for (const [name, value] of Object.entries(reply.getHeaders()))
      if (value !== undefined) reply.raw.setHeader(name, value);
    reply.raw.once('close', () => void server.close());
    await server.connect(transport);
    await transport.handleRequest(req.raw, reply.raw, req.body);
  };
  app.post('/mcp', { onRequest: admission(ctx) }, handle);
}
