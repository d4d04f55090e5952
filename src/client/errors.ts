// Errors the client throws. Every one carries the request id the server sent (x-request-id),
// when there was a response, so a failure can be found in the server's logs.
import type { ValidationError } from '../protocol/index.js';

export class AssayError extends Error {
  /** HTTP status, when the server answered. */
  readonly status: number | undefined;
  /** The server's `detail`: a message, or for 422 the list of validation errors. */
  readonly detail: unknown;
  /** x-request-id of the (last) response, when there was one. */
  readonly requestId: string | undefined;
  /** How many attempts were made (1 + retries). */
  readonly attempts: number;

  constructor(
    message: string,
    init: { status?: number; detail?: unknown; requestId?: string; attempts?: number; cause?: unknown } = {},
  ) {
    super(message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'AssayError';
    this.status = init.status;
    this.detail = init.detail;
    this.requestId = init.requestId;
    this.attempts = init.attempts ?? 1;
  }
}

/** The server answered with a non-2xx status. */
export class AssayAPIError extends AssayError {
  declare readonly status: number;
  readonly headers: Headers;

  constructor(status: number, detail: unknown, headers: Headers, attempts: number) {
    super(describe(status, detail), { status, detail, requestId: headers.get('x-request-id') ?? undefined, attempts });
    this.name = 'AssayAPIError';
    this.headers = headers;
  }

  /** For 422: the validation errors (loc, msg, type, ...); otherwise empty. */
  get validationErrors(): ValidationError[] {
    return this.status === 422 && Array.isArray(this.detail) ? (this.detail as ValidationError[]) : [];
  }
}

/** No usable response: the connection failed, or the server sent something that is not the contract. */
export class AssayConnectionError extends AssayError {
  constructor(message: string, init: { cause?: unknown; attempts?: number; requestId?: string; status?: number } = {}) {
    super(message, init);
    this.name = 'AssayConnectionError';
  }
}

/** An attempt ran past the per-call timeout (after any retries). */
export class AssayTimeoutError extends AssayConnectionError {
  constructor(timeoutMs: number, attempts: number) {
    super(`request timed out after ${timeoutMs} ms${attempts > 1 ? ` (${attempts} attempts)` : ''}`, { attempts });
    this.name = 'AssayTimeoutError';
  }
}

/** The caller's AbortSignal fired. Not retried. */
export class AssayAbortError extends AssayError {
  constructor(reason: unknown, attempts: number) {
    super('request aborted', { cause: reason, attempts });
    this.name = 'AbortError';
  }
}

function describe(status: number, detail: unknown): string {
  if (typeof detail === 'string') return `${status} ${detail}`;
  if (Array.isArray(detail)) {
    const parts = detail
      .slice(0, 3)
      .map((d: Partial<ValidationError>) => `${(d.loc ?? []).join('.')}: ${d.msg ?? d.type ?? '?'}`);
    const more = detail.length > 3 ? ` (+${detail.length - 3} more)` : '';
    return `${status} ${parts.join('; ')}${more}`;
  }
  return `${status} ${detail === undefined ? 'error' : JSON.stringify(detail)}`;
}
