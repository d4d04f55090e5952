// The protocol's own refusals, raised wherever a request is checked (the body parser, the service)
// and answered by the API's error table.
import type { ValidationError } from './schemas.js';

/** The request does not satisfy the contract: 422 with pydantic-style detail entries. */
export class InvalidRequestError extends Error {
  constructor(readonly detail: ValidationError[]) {
    super('Request validation failed');
    this.name = 'InvalidRequestError';
  }
}

/** The caller may not use the model it named: 403. */
export class ModelForbiddenError extends Error {
  constructor(readonly model: string) {
    super(`This API key may not use model '${model}'`);
    this.name = 'ModelForbiddenError';
  }
}
