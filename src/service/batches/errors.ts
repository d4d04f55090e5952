// The batch API's own refusals, each a class with its stable code (api/error-table.ts maps them).
import type { LogPolicy } from '../../protocol/index.js';

/** No batch of that id for this key (another key's batch is not found either): 404. */
export class BatchNotFoundError extends Error {
  static readonly code = 'batch_not_found';
  static readonly log: LogPolicy = 'none';
  constructor(readonly id: string) {
    super(`No batch found with id '${id.slice(0, 80)}'`);
    this.name = 'BatchNotFoundError';
  }
}

/** The Idempotency-Key names a batch of other content: 409. */
export class IdempotencyConflictError extends Error {
  static readonly code = 'idempotency_conflict';
  static readonly log: LogPolicy = 'none';
  constructor(readonly batchId: string) {
    super(`This Idempotency-Key was used for batch ${batchId} with other content; use a new key for new content`);
    this.name = 'IdempotencyConflictError';
  }
}

/** The upload is larger than the batch limit: 413. */
export class BatchTooLargeError extends Error {
  static readonly code = 'batch_too_large';
  static readonly log: LogPolicy = 'none';
  constructor(readonly limit: number) {
    super(`A batch input is at most ${limit} bytes`);
    this.name = 'BatchTooLargeError';
  }
}

/** Batches are off on this server (no writable data directory, or the store is down): 503. */
export class BatchesUnavailableError extends Error {
  static readonly code = 'batches_unavailable';
  static readonly log: LogPolicy = 'message';
  constructor(reason: string) {
    super(`Batches are not available on this server: ${reason}`);
    this.name = 'BatchesUnavailableError';
  }
}
