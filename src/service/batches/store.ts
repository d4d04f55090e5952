// The batch store: what a batch job keeps at rest, behind one interface with two engines (an
// embedded SQLite file in the data directory, one node; PostgreSQL shared by replicas). Batches are
// OpenAI's batch objects; items are the batch's lines, each answered exactly once: an item's result
// is written in the same transaction that marks it done, and an item already done is never written
// again, so a line re-run after a crash (its lease expired) cannot appear twice in the results.
//
// Every method is async: the SQLite engine runs in its own worker thread (its driver is synchronous
// and must never run on the event loop), the PostgreSQL engine over the network. Every `now` argument
// is unix milliseconds (Date.now()); the records' times are unix seconds.

/** OpenAI's batch statuses. */
export type BatchStatus =
  'validating' | 'failed' | 'in_progress' | 'finalizing' | 'completed' | 'expired' | 'cancelling' | 'cancelled';

/** A reason a whole batch failed at validating, or one invalid line (OpenAI's `errors.data[]`). */
export interface BatchError {
  code: string;
  message: string;
  /** 1-based line of the input, where one line is the cause. */
  line?: number;
}

export interface BatchRecord {
  id: string;
  /** Whose batch: the API key's rate key (its hash, hex). Another owner never sees it. */
  owner: string;
  status: BatchStatus;
  /** Unix seconds. */
  createdAt: number;
  inProgressAt?: number;
  finalizingAt?: number;
  completedAt?: number;
  failedAt?: number;
  expiredAt?: number;
  cancellingAt?: number;
  cancelledAt?: number;
  /** When an unfinished batch expires (unix seconds). */
  expiresAt: number;
  /** Lines accepted (valid and invalid); 0 until validation ends. */
  total: number;
  /** Lines answered with a 200 response. */
  completed: number;
  /** Lines answered with an error (invalid, refused, cancelled, expired). */
  failed: number;
  /** Why the batch failed at validating (OpenAI's `errors.data`). */
  errors?: BatchError[];
  idempotencyKey?: string;
  /** SHA-256 (hex) of the uploaded bytes: the same Idempotency-Key with other content is a conflict. */
  contentHash?: string;
  metadata?: Record<string, string>;
  /** The prefix cache scope its items run under (the owner's, unless the operator shares the cache). */
  cacheScope?: string;
  /** Unix seconds when the last page of its results was read (retention counts from it). */
  resultsReadAt?: number;
}

export interface NewBatch {
  id: string;
  owner: string;
  createdAt: number;
  expiresAt: number;
  idempotencyKey?: string;
  contentHash?: string;
  metadata?: Record<string, string>;
  cacheScope?: string;
}

/** One valid line, waiting to run. */
export interface NewItem {
  /** 1-based line number in the input. */
  line: number;
  customId: string;
  /**
   * Items of one batch with the same group run together (one engine request where the model allows):
   * the state's hash (protocol stateHash) and the model name, e.g. `<hash>|tiny-tasks-1`.
   */
  group: string;
  /** The line's `body` (a SystemOneRequest) as the JSON text it was sent in. */
  body: string;
}

/** A line answered: its results line (one JSON object, no newline), ok or an error. */
export interface ItemResult {
  line: number;
  /** The JSONL results line: `{"custom_id":…,"response":{"status_code":200,"body":…}}` or `{"custom_id":…,"error":{…}}`. */
  result: string;
  ok: boolean;
  /** Input tokens the line used (0 for an error). */
  inputTokens: number;
}

/** Items of one batch and one group, leased to one runner. */
export interface ClaimedGroup {
  /** The store's own handle of this claim (a queue job id, a lease token): give it back to `settle`. */
  lease: string;
  batchId: string;
  owner: string;
  cacheScope?: string;
  group: string;
  items: Array<{ line: number; customId: string; body: string }>;
}

export interface ClaimOptions {
  maxItems: number;
  leaseMs: number;
  now: number;
  /**
   * Groups whose state this runner holds (it ran them lately: its prefix cache has them). Their
   * claimable items go first, before the batches' turns, so a state stays on the replica that
   * encoded it; on one node, where every group is at home, it changes only the order.
   */
  prefer?: string[];
}

export interface ResultsPage {
  /** Results lines in the order they were written (not input order), each without a newline. */
  lines: string[];
  /** The cursor after the last line of this page (pass it as `after` for the next); absent when the page is empty. */
  cursor?: string;
  /** True when the batch has ended (completed, failed, expired, cancelled) and no line is left after this page. */
  done: boolean;
}

export interface BatchStore {
  /**
   * Creates a batch in `validating`, or returns the owner's batch of the same idempotency key
   * (`created: false`; the caller compares its content hash).
   */
  create(batch: NewBatch): Promise<{ batch: BatchRecord; created: boolean }>;
  /** Adds lines during validation: valid items, and invalid lines with their error results (done at once). */
  addItems(batchId: string, items: NewItem[], invalid: ItemResult[]): Promise<void>;
  /** Validation ended: `in_progress` with `total` lines (or `completed` when every line was invalid). */
  start(batchId: string, now: number): Promise<void>;
  /** Validation refused the batch: `failed` with its errors; its items are removed. */
  fail(batchId: string, errors: BatchError[], now: number): Promise<void>;
  /** The owner's batch, or undefined (another owner's batch is undefined too). */
  get(owner: string, id: string): Promise<BatchRecord | undefined>;
  /** The owner's batches, newest first, after the batch id `after` (OpenAI's pagination). */
  list(owner: string, options: { after?: string; limit: number }): Promise<{ data: BatchRecord[]; hasMore: boolean }>;
  /**
   * Cancels: `cancelling`, then (once no item is leased) `cancelled`, every unanswered line written
   * with a `batch_cancelled` error. Returns the batch, or undefined when the owner has none of that id.
   */
  cancel(owner: string, id: string, now: number): Promise<BatchRecord | undefined>;
  /** Removes the batch, its input and its results at once; false when the owner has none of that id. */
  delete(owner: string, id: string): Promise<boolean>;

  /**
   * Leases pending items of one group (at most `maxItems`) to `runner` until `now + leaseMs`: of the
   * in-progress batches, the one whose items were claimed least recently (batches take turns), its
   * oldest group first. Items whose lease expired are pending again. Undefined: nothing to run.
   */
  claim(runner: string, options: ClaimOptions): Promise<ClaimedGroup | undefined>;
  /**
   * Writes answered lines: each item not yet done becomes done with its result (one that is already
   * done is left as it is); counts them; a batch with no line left becomes `completed` (or
   * `cancelled` when cancelling). In one transaction.
   */
  complete(batchId: string, results: ItemResult[], now: number): Promise<void>;
  /** The runner is done with a claim (every item completed or released): the queue forgets it. */
  settle(claim: ClaimedGroup): Promise<void>;
  /** Gives leased items back (pending again), e.g. at shutdown. */
  release(batchId: string, lines: number[]): Promise<void>;
  /**
   * A page of results after `after` (undefined: from the start), at most `limit` lines. A cursor the
   * store did not write rejects with BatchCursorError (code `invalid_cursor`; the API's error table answers it).
   */
  results(owner: string, id: string, options: { after?: string; limit: number }): Promise<ResultsPage | undefined>;
  /** Records that the last page of a batch's results was read (the input is removed then). */
  resultsRead(owner: string, id: string, now: number): Promise<void>;
  /**
   * Retention: batches past `expiresAt` that have not ended become `expired` (unanswered lines get a
   * `batch_expired` error); ended batches whose results were read more than `keepReadMs` ago, or
   * that ended more than `keepMs` ago, are deleted with their input and results. Returns the ids deleted.
   */
  sweep(now: number, options: { keepMs: number; keepReadMs: number }): Promise<string[]>;
  /** False while the store is down (its thread died and starts again on the next call). */
  healthy?(): boolean;
  /** Told errors of the store's own background work that no call saw (the service logs them). */
  onBackgroundError?: (error: unknown) => void;
  /** Counts for /metrics: batches per status, items pending and leased. */
  counts(): Promise<{ batches: Partial<Record<BatchStatus, number>>; pending: number; leased: number }>;
  close(): Promise<void>;
}
