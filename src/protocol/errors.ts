// The protocol's own refusals, raised wherever a request is checked (the body parser, the service)
// and answered by the API's error table. Every error the API answers carries its identity on its
// class, as static fields: a stable `code` (its row in api/error-table.ts) and its `log` policy.
import type { ValidationError } from './schemas.js';

/**
 * How the API logs an error of a class, the one place that says it: 'message', logged with its
 * message, which is content-free (it names files, graph nodes, shapes and counts, never request
 * content); 'frames', logged by type and stack frames only (its message could quote the request);
 * 'none', not logged (an expected refusal: the request's access line carries its code).
 */
export type LogPolicy = 'message' | 'frames' | 'none';

/** The request does not satisfy the contract: 422 with pydantic-style detail entries. */
export class InvalidRequestError extends Error {
  static readonly code = 'invalid_request';
  static readonly log: LogPolicy = 'none';

  constructor(readonly detail: ValidationError[]) {
    super('Request validation failed');
    this.name = 'InvalidRequestError';
  }
}

/** The caller may not use the model it named: 403. */
export class ModelForbiddenError extends Error {
  static readonly code = 'model_forbidden';
  static readonly log: LogPolicy = 'none';

  constructor(readonly model: string) {
    super(`This API key may not use model '${model}'`);
    this.name = 'ModelForbiddenError';
  }
}
