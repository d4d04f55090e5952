// The MCP server (Model Context Protocol): Assay's tools for agents, over any backend that answers
// requests. The layer's one entry: code outside src/mcp/ imports it only from here (eslint).
export * from './backend.js';
export * from './decision.js';
export * from './server.js';
export * from './tools.js';
