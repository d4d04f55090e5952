// The one error table: every error a request can end in → status, `detail` body, retry headers,
// and whether (and how) it is logged. The server's error handler reads nothing else.
//
// Logging keeps the message of engine and runtime errors (model loading, onnxruntime failures,
// budgets): those messages name files, graph nodes, shapes and counts, never request content.
// Any other error is logged by type and stack frames only: its message could quote the request.
import type { FastifyError } from 'fastify';
import {
  AbortedError,
  BudgetError,
  EngineDeadError,
  EngineError,
  ModelLoadError,
  OverloadedError,
} from '../engine/index.js';
import { InvalidRequestError, ModelForbiddenError, retryHeaders } from '../protocol/index.js';
import { ApiError } from './api-error.js';
import { ModelUnavailableError, ResponseContractError } from '../service/index.js';

export interface ErrorResponse {
  /** A stable name for the outcome, logged with the request (never sent: bodies keep FastAPI's shape). */
  code: string;
  status: number;
  body: { detail: unknown };
  headers?: Record<string, string>;
  /** Logged at this level with its message (content-free classes), or 'frames' (type and stack only), or not at all. */
  log?: 'message' | 'frames';
}

export interface ErrorContext {
  deadlineMs: number;
  bodyLimit: number;
}

/** Retry headers from an expected wait in seconds (one helper for every refusal: protocol/retry-after.ts). */
function retryAfter(seconds: number): Record<string, string> {
  return retryHeaders(seconds * 1000);
}

/** Codes of the API's own HTTP errors, by status. */
const API_CODES: Record<number, string> = { 401: 'unauthenticated', 429: 'rate_limited', 503: 'draining' };

/**
 * One error class: its response, and whether its message is content-free (it names files, graph
 * nodes, shapes and counts, never request content), so logs may keep it. Adding an error is one row.
 */
type Row = [new (...args: never[]) => Error, (e: never, c: ErrorContext) => ErrorResponse, { contentFree: boolean }?];

const CONTENT_FREE = { contentFree: true };

const TABLE: Row[] = [
  [
    ApiError,
    (e: ApiError) => ({
      code: e.code ?? API_CODES[e.statusCode] ?? 'http_error',
      status: e.statusCode,
      body: { detail: e.detail },
      headers: e.headers,
    }),
  ],
  [
    InvalidRequestError,
    (e: InvalidRequestError) => ({ code: 'invalid_request', status: 422, body: { detail: e.detail } }),
  ],
  [
    ModelForbiddenError,
    (e: ModelForbiddenError) => ({ code: 'model_forbidden', status: 403, body: { detail: e.message } }),
  ],
  [
    BudgetError,
    (e: BudgetError) => ({
      code: 'token_budget_exceeded',
      status: 422,
      body: {
        detail: [
          {
            type: 'token_budget_exceeded',
            loc: ['body'],
            msg: e.message,
            ctx: { budget: e.budget, limit: e.limit, count: e.count },
          },
        ],
      },
    }),
    CONTENT_FREE,
  ],
  [
    AbortedError,
    (_e: AbortedError, c) => ({
      code: 'deadline',
      status: 408,
      body: { detail: `Request exceeded its deadline of ${c.deadlineMs} ms` },
    }),
  ],
  [
    OverloadedError,
    (e: OverloadedError) => ({
      code: 'overloaded',
      status: 529,
      body: { detail: 'The engine is overloaded; retry with backoff' },
      headers: retryAfter(e.retryAfterSeconds),
    }),
  ],
  [
    ModelUnavailableError,
    (e: ModelUnavailableError) => ({
      code: 'model_unavailable',
      status: 503,
      body: { detail: e.message },
      headers: retryAfter(e.retryAfterSeconds),
      log: e.failed ? 'message' : undefined,
    }),
    CONTENT_FREE,
  ],
  [
    ModelLoadError,
    (e: ModelLoadError) => ({
      code: 'model_load_failed',
      status: 503,
      body: { detail: `The model cannot be loaded: ${e.message}` },
      headers: retryAfter(30),
      log: 'message',
    }),
    CONTENT_FREE,
  ],
  [
    EngineDeadError,
    (e: EngineDeadError) => ({
      code: 'engine_dead',
      status: 503,
      body: { detail: `The model stopped and is being restarted; retry shortly` },
      headers: retryAfter(e.retryAfterSeconds),
      log: 'message',
    }),
    CONTENT_FREE,
  ],
  [
    EngineError,
    () => ({ code: 'engine_failure', status: 500, body: { detail: 'Internal Server Error' }, log: 'message' }),
    CONTENT_FREE,
  ],
  [
    ResponseContractError,
    () => ({ code: 'response_contract', status: 500, body: { detail: 'Internal Server Error' }, log: 'message' }),
    CONTENT_FREE,
  ],
];

/** Fastify's own client errors, by code. */
const FASTIFY: Record<string, (c: ErrorContext, e: FastifyError) => ErrorResponse> = {
  FST_ERR_CTP_BODY_TOO_LARGE: (c) => ({
    code: 'body_too_large',
    status: 413,
    body: { detail: `Request body is larger than ${c.bodyLimit} bytes` },
  }),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () => ({
    code: 'unsupported_media_type',
    status: 415,
    body: { detail: 'Unsupported media type: send the body as application/json' },
  }),
};

export function errorResponse(err: Error, c: ErrorContext): ErrorResponse {
  for (const [type, respond] of TABLE) if (err instanceof type) return respond(err as never, c);
  const f = err as FastifyError;
  const known = f.code ? FASTIFY[f.code] : undefined;
  if (known) return known(c, f);
  if (f.statusCode && f.statusCode >= 400 && f.statusCode < 500 && f.code?.startsWith('FST_'))
    return { code: 'bad_request', status: f.statusCode, body: { detail: err.message } };
  return { code: 'internal_error', status: 500, body: { detail: 'Internal Server Error' }, log: 'frames' };
}

/** Whether an error's message is safe to log (it never carries request content): its row says so. */
export function contentFree(err: Error): boolean {
  return TABLE.some(([type, , flags]) => err instanceof type && flags?.contentFree === true);
}
