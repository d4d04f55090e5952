// The MCP server: the tools over one backend. Transports are the caller's: stdio for `assay mcp`,
// Streamable HTTP (stateless, one server per request) for the API's /mcp route.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpBackend } from './backend.js';
import { TOOLS } from './tools.js';

export const MCP_INSTRUCTIONS =
  'Assay answers questions about a piece of content (the state) with small local decision models: ' +
  'check (yes/no), classify (one of several options), score (a level of a rubric), evaluate (several questions at once). ' +
  'Every answer carries probabilities; where thresholds are configured, a decision act | review | abstain.';

/**
 * A tool call whose arguments were already checked and made into its request elsewhere (the API's
 * body worker, for a large /mcp message): the call reaches the server without them, and this answers it.
 */
export interface PreparedTool {
  name: string;
  run(backend: McpBackend, signal: AbortSignal): Promise<CallToolResult>;
}

/** A server with every tool registered over `backend`; `prepared`: that tool answers its prepared call. */
export function createMcpServer(backend: McpBackend, version: string, prepared?: PreparedTool): McpServer {
  const server = new McpServer({ name: 'assay', version }, { instructions: MCP_INSTRUCTIONS });
  for (const tool of TOOLS) {
    const given = prepared?.name === tool.name ? prepared : undefined;
    server.registerTool(
      tool.name,
      // A prepared call arrives without its arguments: none are expected of it.
      { title: tool.title, description: tool.description, inputSchema: given ? {} : tool.inputSchema },
      (args: Record<string, unknown>, extra) =>
        given ? given.run(backend, extra.signal) : tool.run(backend, args, extra.signal),
    );
  }
  return server;
}
