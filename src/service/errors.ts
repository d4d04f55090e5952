// The model pool's refusals, each a class with its stable code and log policy (the API's error
// table maps them): a model that failed to load or stopped (ModelUnavailableError), no room within
// the deadline (ModelsBusyError), pinned models that leave no room (ModelsPinnedError), a model past
// the whole memory budget (ModelTooLargeError), an operator's unload under requests (ModelInUseError).
import type { LogPolicy } from '../protocol/index.js';

/**
 * The model failed to load and waits out its backoff. → 503 with retry-after. Its message says why
 * (the engine's load error: files, shapes, counts), so logs keep it.
 */
export class ModelUnavailableError extends Error {
  static readonly code: string = 'model_unavailable';
  static readonly log: LogPolicy = 'message';

  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    /** It failed to load (the message says why), rather than an escalation's second model failing. */
    readonly failed = false,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ModelUnavailableError';
  }
}

/**
 * Every resident model has requests in flight or queued, so none can be unloaded to make room, and
 * none freed it within the request's deadline. → 503 with retry-after (jittered); not logged (an
 * expected refusal under a full budget, counted as a slot wait on /metrics).
 */
export class ModelsBusyError extends ModelUnavailableError {
  static override readonly code: string = 'models_busy';
  static override readonly log: LogPolicy = 'none';

  constructor(message: string, retryAfterSeconds: number) {
    super(message, retryAfterSeconds);
    this.name = 'ModelsBusyError';
  }
}

/**
 * The pinned models (--preload) alone leave no room for this one (their count at
 * --max-loaded-models, or their bytes with its own past --memory-budget): waiting cannot help until
 * the settings change. → 503, no retry-after; a batch line fails with it instead of waiting.
 */
export class ModelsPinnedError extends Error {
  static readonly code = 'models_pinned';
  static readonly log: LogPolicy = 'message';

  constructor(id: string, pinned: string[], why: string) {
    super(
      `Model ${id} cannot be loaded while ${pinned.join(', ')} ${pinned.length === 1 ? 'stays' : 'stay'} resident (pinned by --preload): ${why}`,
    );
    this.name = 'ModelsPinnedError';
  }
}

/** A model that alone needs more than the memory budget: refused before (or right after) its load. → 503, no retry-after. */
export class ModelTooLargeError extends Error {
  static readonly code = 'model_too_large';
  static readonly log: LogPolicy = 'message';

  constructor(id: string, bytes: number, cacheShare: number, budget: number, measured: boolean) {
    super(
      `Model ${id} needs ${mib(bytes)} (${measured ? 'measured at its load' : 'its files'}, with ` +
        `its prefix cache's ${mib(cacheShare)}), more than the whole memory budget of ` +
        `${mib(budget)} (--memory-budget)`,
    );
    this.name = 'ModelTooLargeError';
  }
}

/** The operator asked to unload a model that requests are using. → 409. */
export class ModelInUseError extends Error {
  static readonly code = 'model_in_use';
  static readonly log: LogPolicy = 'none';
  constructor(id: string, n: number) {
    super(
      `Model ${id} has ${n} request(s) in flight or queued; it is not unloaded under them (retry once they finish)`,
    );
    this.name = 'ModelInUseError';
  }
}

/** Bytes as MiB with one decimal, as the refusals and the residency log write them. */
export function mib(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}
