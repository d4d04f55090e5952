// What the MCP tools need from whoever answers: the engine in this process (`assay mcp`), a server
// over HTTP (`assay mcp --url`), or the server's own service under the caller's key (/mcp).
import type { ModelMetadata, SystemOneResponse } from '../protocol/index.js';
import type { DecisionThresholds } from './decision.js';

export interface McpBackend {
  /** The model a tool call without `model` asks. */
  defaultModel: string;
  /** The models the caller may use, as GET /v1/models lists them. */
  models(): Promise<ModelMetadata[]>;
  /**
   * Answers a whole request body (validated as POST /v1/systemone validates it), or a ParsedBody
   * (the body with the order of its questions and options); throws ToolFailure for a refusal.
   */
  evaluate(request: unknown, signal?: AbortSignal): Promise<SystemOneResponse>;
  /** The decision thresholds of the versioned id that answered, if it has any. */
  thresholds(model: string): DecisionThresholds | undefined;
}

/**
 * A request the backend refused, with the HTTP status and `detail` the API would answer
 * (422 validation entries, 403, 429, 503, ...): the tool answers it as an MCP tool error.
 */
export class ToolFailure extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === 'string' ? detail : `HTTP ${status}`);
    this.name = 'ToolFailure';
  }
}
