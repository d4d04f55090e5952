// /mcp: the MCP tools (src/mcp) over Streamable HTTP, behind the same bearer keys, per-key models
// and limits as /v1/systemone. Stateless: each POST is answered by a fresh server and transport
// (no session to keep or to steal), with a JSON response. GET (a server-sent stream) and DELETE
// (ending a session) have nothing to serve without sessions: 405 with Allow: POST, as for any
// path. The Host and Origin checks of every route (plugins/origins.ts) are the transport spec's
// Origin validation: they run before this route, and they say what the SDK's exact-match lists
// cannot (`*.localhost`, IP literals, `*.suffix`). Bodies are read as /v1/systemone's are, with the
// same limit (plugins/body.ts): a large or deep one in the body worker, which hands back the message
// without a tool call's arguments and the request they make, already checked (mcp-body.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { packageVersion } from '../../common/index.js';
import { InvalidRequestError, ValidatedBody } from '../../protocol/index.js';
import {
  answered,
  createMcpServer,
  failure,
  TOOLS,
  ToolFailure,
  type McpBackend,
  type PreparedTool,
} from '../../mcp/index.js';
import { listModels } from '../../registry/index.js';
import { admission, keyAllows } from '../admission.js';
import type { ApiContext } from '../context.js';
import { errorResponse } from '../error-table.js';
import { evaluateAsKey, untilClientGone } from '../evaluate-as-key.js';
import { McpBody, type PreparedCall } from '../mcp-body.js';

export interface McpRouteOptions {
  /** The server's body limit (a refused tool call's 413 names it). */
  bodyLimit: number;
}

/** The tool call the body worker prepared, answered from what it made (mcp-body.ts). */
function preparedTool(call: PreparedCall, req: FastifyRequest): PreparedTool | undefined {
  const asks = TOOLS.find((t) => t.name === call.name)?.asks;
  const { invalid, verdict, bytes } = call;
  return {
    name: call.name,
    async run(backend, signal): Promise<CallToolResult> {
      // As the SDK answers arguments that do not fit the tool's schema.
      if (invalid !== undefined || !asks || !verdict)
        return {
          content: [{ type: 'text', text: new McpError(ErrorCode.InvalidParams, invalid ?? '').message }],
          isError: true,
        };
      if ('detail' in verdict) {
        req.facts = { ...req.facts, error: InvalidRequestError.code };
        return failure(new ToolFailure(422, verdict.detail), asks.single);
      }
      return answered(
        backend,
        asks,
        new ValidatedBody(bytes!, verdict.model, verdict.questionCount, verdict.order),
        signal,
      );
    },
  };
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
  const { bodyLimit } = options;

  const handle = async (req: FastifyRequest, reply: FastifyReply) => {
    const body = req.body instanceof McpBody ? req.body : new McpBody(req.body);
    const prepared = body.prepared && preparedTool(body.prepared, req);
    const server = createMcpServer(keyBackend(ctx, req, reply, bodyLimit), packageVersion(), prepared);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    // The transport writes the response itself: Fastify's headers so far (request ids, CORS) go first.
    reply.hijack();
    for (const [name, value] of Object.entries(reply.getHeaders()))
      if (value !== undefined) reply.raw.setHeader(name, value);
    reply.raw.once('close', () => void server.close());
    await server.connect(transport);
    await transport.handleRequest(req.raw, reply.raw, body.message);
  };
  app.post('/mcp', { onRequest: admission(ctx) }, handle);
}
