// The MCP server: the tools over one backend. Transports are the caller's: stdio for `assay mcp`,
// Streamable HTTP (stateless, one server per request) for the API's /mcp route.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpBackend } from './backend.js';
import { TOOLS } from './tools.js';

export const MCP_INSTRUCTIONS =
  'Assay answers questions about a piece of content (the state) with small local decision models: ' +
  'check (yes/no), classify (one of several options), score (a level of a rubric), evaluate (several questions at once). ' +
  'Every answer carries probabilities; where thresholds are configured, a decision act | review | abstain.';

/** A server with every tool registered over `backend`. */
export function createMcpServer(backend: McpBackend, version: string): McpServer {
  const server = new McpServer({ name: 'assay', version }, { instructions: MCP_INSTRUCTIONS });
  for (const tool of TOOLS) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.inputSchema },
      (args: Record<string, unknown>, extra) => tool.run(backend, args, extra.signal),
    );
  }
  return server;
}
