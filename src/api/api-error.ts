// The API's own HTTP refusals (401, 403 for a Host or Origin not allowed, 429, 503 while draining
// or when the body worker is gone): each a class with its stable code and log policy, answered by
// its row in the error table with
// `{"detail": "<message>"}` and the headers it carries. Validation failures are InvalidRequestError
// (src/protocol/errors.ts).
import type { LogPolicy } from '../protocol/index.js';

export abstract class ApiError extends Error {
  /** Refusals are expected outcomes: the request's access line carries the code. */
  static readonly log: LogPolicy = 'none';

  constructor(
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
    this.name = new.target.name;
  }
}

/** No API key, or one the server does not know. → 401 */
export class UnauthenticatedError extends ApiError {
  static readonly code = 'unauthenticated';
}

/** The key used its requests per minute or input tokens per second. → 429 with retry headers */
export class RateLimitedError extends ApiError {
  static readonly code = 'rate_limited';
}

/** The server is shutting down and takes no new requests. → 503 */
export class DrainingError extends ApiError {
  static readonly code = 'draining';
}

/** The body worker died with the body in it (never parsed inline instead). → 503 with retry headers */
export class BodyWorkerUnavailableError extends ApiError {
  static readonly code = 'body_worker_unavailable';
}

/** The request's Host is not one this server answers to (DNS rebinding guard, hosts.ts). → 403 */
export class HostForbiddenError extends ApiError {
  static readonly code = 'host_forbidden';
}

/** A browser request from an origin that is neither this server's nor in --cors-origins. → 403 */
export class OriginForbiddenError extends ApiError {
  static readonly code = 'origin_forbidden';
}

/** A key that is not the operator's asked for an operator endpoint (/admin/...). → 403 */
export class OperatorOnlyError extends ApiError {
  static readonly code = 'operator_only';
}
