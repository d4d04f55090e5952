// Typed errors the engine throws; the API layer maps each to a status.

/** The request does not fit a token budget or the model's context. → 422 */
export class BudgetError extends Error {
  constructor(
    /** which budget: 'request' (64k: state + all questions), 'question' (32k: state + longest question), 'context' (the model's own length) */
    readonly budget: 'request' | 'question' | 'context',
    readonly count: number,
    readonly limit: number,
    /** The count stopped early: the request needs at least `count` tokens. */
    readonly atLeast = false,
  ) {
    super(`${budgetName(budget)} is ${limit} tokens; this request needs ${atLeast ? 'more than ' : ''}${count}`);
    this.name = 'BudgetError';
  }
}

function budgetName(b: BudgetError['budget']): string {
  if (b === 'request') return 'the token budget for the state plus all questions';
  if (b === 'question') return 'the token budget for the state plus the longest question';
  return "the model's context length";
}

/** The request was aborted (deadline or client gone) before it finished. → 408 */
export class AbortedError extends Error {
  constructor(message = 'request aborted') {
    super(message);
    this.name = 'AbortedError';
  }
}

/** The engine's queue is full. → 529 */
export class OverloadedError extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super('the engine queue is full');
    this.name = 'OverloadedError';
  }
}

/** A model folder is not a usable decoder export, or an execution provider is missing. Raised at load time. */
export class ModelLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelLoadError';
  }
}

/**
 * The model's engine thread died (it exited, or an error escaped it): its requests, running and
 * queued, end with this, and the model is restarted. → 503 with retry-after
 */
export class EngineDeadError extends Error {
  constructor(
    message: string,
    readonly retryAfterSeconds = 5,
  ) {
    super(message);
    this.name = 'EngineDeadError';
  }
}

/**
 * onnxruntime failed during a pass. Its message names graph nodes and shapes, never request
 * content, so it is safe to log. → 500
 */
export class EngineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EngineError';
  }
}
