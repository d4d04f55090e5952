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

/** A fault of the batch store, in plain words (`reason`), with about when asking again helps (its kinds below). */
abstract class BatchStoreFault extends Error {
  static readonly log: LogPolicy = 'message';
  abstract readonly retryAfterSeconds: number;
  constructor(
    readonly reason: string,
    message: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The batch store cannot be reached now (PostgreSQL stopped, restarting, or out of the network's
 * reach): 503 with retry-after. Batches already accepted wait, and their lines resume when it is back.
 */
export class BatchStoreUnavailableError extends BatchStoreFault {
  static readonly code = 'batch_store_unavailable';
  /** About when to ask again: the store reconnect policy's longest wait. */
  readonly retryAfterSeconds = 5;
  constructor(reason: string, options?: ErrorOptions) {
    super(
      reason,
      `The batch store cannot be reached now (${reason}); batches already accepted wait and resume when it is back: retry shortly`,
      options,
    );
  }
}

/**
 * The data directory's disk is full (ENOSPC, or SQLite's "database or disk is full"): 507 with
 * retry-after. Nothing accepted is lost: lines already answered stay, lines still to run wait for
 * space and resume without a restart.
 */
export class BatchStoreFullError extends BatchStoreFault {
  static readonly code = 'insufficient_storage';
  /** A full disk is freed by an operator, not in seconds: ask again in about this long. */
  readonly retryAfterSeconds = 30;
  constructor(reason: string, options?: ErrorOptions) {
    super(
      reason,
      `No space left for batches (${reason}); batches already accepted keep their lines and resume once space is freed: retry later`,
      options,
    );
  }
}
