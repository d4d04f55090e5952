// The one error table: every error a request can end in, by its stable code → status, `detail`
// body and retry headers. The code and the log policy are the error class's own (static `code`
// and `log`, see protocol/errors.ts): adding an error is its class and its row here. The server's
// error handler reads nothing else.
import type { FastifyError } from 'fastify';
import {
  AbortedError,
  BudgetError,
  EngineDeadError,
  EngineError,
  ModelLoadError,
  OverloadedError,
  UntokenizableError,
} from '../engine/index.js';
import { InvalidRequestError, ModelForbiddenError, retryHeaders, type LogPolicy } from '../protocol/index.js';
import {
  BodyWorkerUnavailableError,
  DrainingError,
  HostForbiddenError,
  OperatorOnlyError,
  OriginForbiddenError,
  RateLimitedError,
  UnauthenticatedError,
} from './api-error.js';
import {
  ModelInUseError,
  ModelsBusyError,
  ModelsPinnedError,
  ModelTooLargeError,
  ModelUnavailableError,
  RegistryRefusedError,
  ResponseContractError,
  BatchNotFoundError,
  BatchesUnavailableError,
  BatchTooLargeError,
  IdempotencyConflictError,
  BatchCursorError,
} from '../service/index.js';

export interface ErrorResponse {
  /** The error's stable code, logged with the request (never sent: bodies keep FastAPI's shape). */
  code: string;
  status: number;
  body: { detail: unknown };
  headers?: Record<string, string>;
  /** How the error handler logs it (its class's policy): with its message, or by type and stack frames only; absent: not logged. */
  log?: 'message' | 'frames';
}

export interface ErrorContext {
  deadlineMs: number;
  bodyLimit: number;
  /** The request's id (x-request-id), named in a 500's detail so a report can be matched to its log line. */
  requestId?: string;
}

/** An error class the table answers: its stable code and its log policy are static fields. */
export interface ErrorClass<E extends Error = Error> {
  new (...args: never[]): E;
  readonly code: string;
  readonly log: LogPolicy;
}

type Respond<E> = (e: E, c: ErrorContext) => Omit<ErrorResponse, 'code' | 'log'>;

/** A row: the class (its code is the key; what the response reads is typed by it) and its response. */
function row<E extends Error>(type: ErrorClass<E>, respond: Respond<E>): [string, Row] {
  return [type.code, { type, respond: respond as Respond<Error> }];
}

interface Row {
  type: ErrorClass;
  respond: Respond<Error>;
}

/** Retry headers from an expected wait in seconds (one helper for every refusal: protocol/retry-after.ts). */
function retryAfter(seconds: number): Record<string, string> {
  return retryHeaders(seconds * 1000);
}

/**
 * A server fault: FastAPI's "Internal Server Error", then the error's stable code and the request's id,
 * so a client's report names what failed and the line of the server's log that holds the cause.
 */
function internal(code: string, c: ErrorContext): Omit<ErrorResponse, 'code' | 'log'> {
  const request = c.requestId ? `, request ${c.requestId}` : '';
  return {
    status: 500,
    body: { detail: `Internal Server Error (${code}${request}): the server's log holds the cause` },
  };
}

/** A refusal of the API's own: its message as `detail`, the headers it carries. */
const refusal = (status: number) => (e: { detail: string; headers: Record<string, string> }) => ({
  status,
  body: { detail: e.detail },
  headers: e.headers,
});

const ROWS: [string, Row][] = [
  row(UnauthenticatedError, refusal(401)),
  row(HostForbiddenError, refusal(403)),
  row(OriginForbiddenError, refusal(403)),
  row(RateLimitedError, refusal(429)),
  row(DrainingError, refusal(503)),
  row(BodyWorkerUnavailableError, refusal(503)),
  row(InvalidRequestError, (e) => ({ status: 422, body: { detail: e.detail } })),
  row(ModelForbiddenError, (e) => ({ status: 403, body: { detail: e.message } })),
  row(BudgetError, (e) => ({
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
  })),
  row(UntokenizableError, (e) => ({
    status: 422,
    body: { detail: [{ type: 'untokenizable_input', loc: ['body'], msg: e.message, ctx: { run: e.run } }] },
  })),
  row(AbortedError, (_e, c) => ({
    status: 408,
    body: { detail: `Request exceeded its deadline of ${c.deadlineMs} ms` },
  })),
  row(OverloadedError, (e) => ({
    status: 529,
    body: { detail: 'The engine is overloaded; retry with backoff' },
    headers: retryAfter(e.retryAfterSeconds),
  })),
  row(ModelUnavailableError, (e) => ({
    status: 503,
    body: { detail: e.message },
    headers: retryAfter(e.retryAfterSeconds),
  })),
  row(ModelsBusyError, (e) => ({
    status: 503,
    body: { detail: e.message },
    headers: retryAfter(e.retryAfterSeconds),
  })),
  // Retrying does not help until the budget or the model changes: no retry-after.
  row(ModelTooLargeError, (e) => ({ status: 503, body: { detail: e.message } })),
  row(ModelsPinnedError, (e) => ({ status: 503, body: { detail: e.message } })),
  row(OperatorOnlyError, refusal(403)),
  row(ModelInUseError, (e) => ({ status: 409, body: { detail: e.message } })),
  row(RegistryRefusedError, (e) => ({ status: 422, body: { detail: e.message } })),
  row(ModelLoadError, (e) => ({
    status: 503,
    body: { detail: `The model cannot be loaded: ${e.message}` },
    headers: retryAfter(30),
  })),
  row(EngineDeadError, (e) => ({
    status: 503,
    body: { detail: `The model stopped and is being restarted; retry shortly` },
    headers: retryAfter(e.retryAfterSeconds),
  })),
  row(BatchNotFoundError, (e) => ({ status: 404, body: { detail: e.message } })),
  row(BatchCursorError, (e) => ({
    status: 422,
    body: { detail: [{ type: 'invalid_cursor', loc: ['query', 'after'], msg: e.message }] },
  })),
  row(IdempotencyConflictError, (e) => ({ status: 409, body: { detail: e.message } })),
  row(BatchTooLargeError, (e) => ({ status: 413, body: { detail: e.message } })),
  row(BatchesUnavailableError, (e) => ({ status: 503, body: { detail: e.message } })),
  row(EngineError, (_e, c) => internal(EngineError.code, c)),
  row(ResponseContractError, (_e, c) => internal(ResponseContractError.code, c)),
];

/** The table, by code: one row per code (a duplicate is a bug, refused at load). */
export const ERROR_TABLE: ReadonlyMap<string, Row> = new Map(ROWS);
if (ERROR_TABLE.size !== ROWS.length) throw new Error('error-table: two rows share a code');

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

/** The class of an error the table answers (its code, its policy; a subclass may set its own policy), else undefined. */
function knownClass(err: Error): ErrorClass | undefined {
  const type = err.constructor as Partial<ErrorClass>;
  const r = typeof type.code === 'string' ? ERROR_TABLE.get(type.code) : undefined;
  return r && err instanceof r.type ? (type as ErrorClass) : undefined;
}

/** How an error is logged: its class's policy; an error the table does not know, by type and stack frames only. */
export function logPolicy(err: Error): LogPolicy {
  return knownClass(err)?.log ?? 'frames';
}

export function errorResponse(err: Error, c: ErrorContext): ErrorResponse {
  const type = knownClass(err);
  if (type) {
    const log = type.log === 'none' ? undefined : type.log;
    return { code: type.code, ...ERROR_TABLE.get(type.code)!.respond(err, c), ...(log ? { log } : {}) };
  }
  const f = err as FastifyError;
  const known = f.code ? FASTIFY[f.code] : undefined;
  if (known) return known(c, f);
  if (f.statusCode && f.statusCode >= 400 && f.statusCode < 500 && f.code?.startsWith('FST_'))
    return { code: 'bad_request', status: f.statusCode, body: { detail: err.message } };
  return { code: 'internal_error', ...internal('internal_error', c), log: 'frames' };
}

/** Whether an error's message is content-free, so logs may keep it: its class's log policy says so. */
export function contentFree(err: Error): boolean {
  return logPolicy(err) === 'message';
}
