// A /mcp message as the body worker reads it: off the event loop when it is large (or deeply
// nested), as a large /v1/systemone body is. The MCP SDK needs the message as an object on the
// event loop, so what is handed back is kept small: a tool call that asks the model (check,
// classify, score, evaluate) has its arguments checked against the tool's input schema, turned into
// the request body the tool would send, and that body checked as /v1/systemone checks one (the same
// 422 entries), all in the worker; the loop gets the call without its arguments, and the request as
// its bytes with their facts (the engine's planner parses them again in its own thread). Any other
// message comes back whole, or without its params past MCP_MESSAGE_VALUES values (nothing the
// protocol defines is that large: the SDK then refuses it as invalid).
import { z } from 'zod';
import { getParseErrorMessage } from '@modelcontextprotocol/sdk/server/zod-compat.js';
import { TOOLS } from '../mcp/index.js';
import { checkBodyText, jsonInvalid, writeRequest, type BodyVerdict, type ValidationError } from '../protocol/index.js';
import { nestsDeeperThan } from './nesting.js';

/** Most JSON values of an MCP message that is not an asking tool call, handed back to the loop with its params. */
export const MCP_MESSAGE_VALUES = 10_000;

/** A tool call prepared off the loop. */
export interface PreparedCall {
  /** The tool called. */
  name: string;
  /** Its arguments did not fit the tool's input schema: what the SDK says then. */
  invalid?: string;
  /** Its request checked as /v1/systemone checks a body: the facts, or the 422 entries. */
  verdict?: BodyVerdict;
  /** A valid request's bytes (UTF-8 JSON). */
  bytes?: Uint8Array<ArrayBuffer>;
}

/** The worker's answer: a 422 (not JSON, or nested past the bound), or the message (small) and its prepared call. */
export type McpChecked = { notJson: ValidationError[] } | { message: unknown; prepared?: PreparedCall };

/** A /mcp body read by the body worker: what the route hands the SDK, and the call prepared for it. */
export class McpBody {
  constructor(
    readonly message: unknown,
    readonly prepared?: PreparedCall,
  ) {}
}

type Params = { name?: unknown; arguments?: unknown } & Record<string, unknown>;

/** JSON values in `v`, counted up to just past `max`. */
function values(v: unknown, max: number): number {
  let n = 0;
  const stack = [v];
  while (stack.length > 0 && n <= max) {
    const x = stack.pop();
    n++;
    if (x !== null && typeof x === 'object') for (const c of Object.values(x)) stack.push(c);
  }
  return n;
}

/** Reads an MCP message's text (in the body worker); `defaultModel` is what a call without `model` asks. */
export function checkMcpText(text: string, defaultModel: string): McpChecked {
  // Content nested past the bound: refused as not JSON, as this route always has (never walked here).
  if (nestsDeeperThan(text)) return { notJson: [jsonInvalid(text)] };
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return { notJson: [jsonInvalid(text)] };
  }
  const m = message as { method?: unknown; params?: Params } | null;
  const tool =
    m && typeof m === 'object' && m.method === 'tools/call' && m.params && typeof m.params === 'object'
      ? TOOLS.find((t) => t.name === m.params!.name)
      : undefined;
  if (tool && m?.params) {
    const args = z.object(tool.inputSchema).safeParse(m.params.arguments ?? {});
    const call = { ...m, params: { ...m.params, arguments: {} } };
    if (!args.success)
      return {
        message: call,
        prepared: {
          name: tool.name,
          invalid: `Input validation error: Invalid arguments for tool ${tool.name}: ${getParseErrorMessage(args.error)}`,
        },
      };
    // A tool that does not ask the model (models) takes its arguments as checked: none of the sender's extras.
    if (!tool.asks) return { message: { ...m, params: { ...m.params, arguments: args.data } } };
    const { request, order } = tool.asks.request(args.data, defaultModel);
    const body = writeRequest(request as Parameters<typeof writeRequest>[0], order);
    const verdict = checkBodyText(body);
    const prepared: PreparedCall = { name: tool.name, verdict };
    if (!('detail' in verdict)) prepared.bytes = new TextEncoder().encode(body) as Uint8Array<ArrayBuffer>;
    return { message: call, prepared };
  }
  if (values(message, MCP_MESSAGE_VALUES) <= MCP_MESSAGE_VALUES) return { message };
  if (!m || typeof m !== 'object' || Array.isArray(m)) return { message: {} };
  const { params: _dropped, ...rest } = m;
  return { message: rest };
}
