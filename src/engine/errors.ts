// Typed errors the engine throws. Each carries its stable `code` and log policy (static fields);
// the API's table maps the code to a status (api/error-table.ts). Each crosses threads (planner,
// engine thread) as its name and constructor arguments, and is built again from ENGINE_ERRORS on
// the other side (thread/failure.ts): adding an error is this file (the class with its code, log
// policy and args(), its registry entry) and its row in the API's table.
import type { LogPolicy } from '../protocol/index.js';

/** An engine error that can be built again from its constructor arguments in another thread. */
export abstract class CrossingError extends Error {
  /** The arguments its constructor takes to make this same error again. */
  abstract args(): unknown[];
}

/** The request does not fit a token budget or the model's context. → 422 */
export class BudgetError extends CrossingError {
  static readonly code = 'token_budget_exceeded';
  /** Its message is content-free (budgets and counts), but a refusal is not logged. */
  static readonly log: LogPolicy = 'none';

  constructor(
    /** which budget: 'request' (64k: state + all questions), 'question' (32k: state + longest question), 'context' (the model's own length) */
    readonly budget: 'request' | 'question' | 'context',
    readonly count: number,
    readonly limit: number,
    /** The count stopped early: the request needs at least `count` tokens. */
    readonly atLeast = false,
    /** A message of its own (a model family's limit, e.g. its options' share of a row); default the budget's. */
    message?: string,
  ) {
    super(
      message ?? `${budgetName(budget)} is ${limit} tokens; this request needs ${atLeast ? 'more than ' : ''}${count}`,
    );
    this.name = 'BudgetError';
  }

  /** A subclass (a family's own refusal) crosses threads as a BudgetError with its message. */
  args(): unknown[] {
    return [this.budget, this.count, this.limit, this.atLeast, this.message];
  }
}

function budgetName(b: BudgetError['budget']): string {
  if (b === 'request') return 'the token budget for the state plus all questions';
  if (b === 'question') return 'the token budget for the state plus the longest question';
  return "the model's context length";
}

/** The request was aborted (deadline or client gone) before it finished. → 408 */
export class AbortedError extends CrossingError {
  static readonly code = 'deadline';
  static readonly log: LogPolicy = 'none';

  constructor(message = 'request aborted') {
    super(message);
    this.name = 'AbortedError';
  }

  args(): unknown[] {
    return [this.message];
  }
}

/** The engine's queue is full. → 529 */
export class OverloadedError extends CrossingError {
  static readonly code = 'overloaded';
  static readonly log: LogPolicy = 'none';

  /** `retryAfterSeconds`: the expected wait before a retry is admitted (fractional; the API adds jitter). */
  constructor(readonly retryAfterSeconds: number) {
    super('the engine queue is full');
    this.name = 'OverloadedError';
  }

  args(): unknown[] {
    return [this.retryAfterSeconds];
  }
}

/** A model folder is not a usable decoder export, or an execution provider is missing. Raised at load time. */
export class ModelLoadError extends CrossingError {
  static readonly code = 'model_load_failed';
  static readonly log: LogPolicy = 'message';

  constructor(message: string) {
    super(message);
    this.name = 'ModelLoadError';
  }

  args(): unknown[] {
    return [this.message];
  }
}

/**
 * The model's engine thread died (it exited, or an error escaped it): its requests, running and
 * queued, end with this, and the model is restarted. → 503 with retry-after
 */
export class EngineDeadError extends CrossingError {
  static readonly code = 'engine_dead';
  static readonly log: LogPolicy = 'message';

  constructor(
    message: string,
    readonly retryAfterSeconds = 5,
  ) {
    super(message);
    this.name = 'EngineDeadError';
  }

  args(): unknown[] {
    return [this.message, this.retryAfterSeconds];
  }
}

/**
 * onnxruntime failed during a pass. Its message names graph nodes and shapes, never request
 * content, so it is safe to log. → 500
 */
export class EngineError extends CrossingError {
  static readonly code = 'engine_failure';
  static readonly log: LogPolicy = 'message';

  constructor(message: string) {
    super(message);
    this.name = 'EngineError';
  }

  args(): unknown[] {
    return [this.message];
  }
}

/**
 * The model's tokenizer could not take a text of the request (the JS Unigram tokenizer of
 * sentencepiece models overflows its stack on a long run without whitespace, such as 100,000 CJK
 * characters). The caller's input, not a server fault. → 422
 */
export class UntokenizableError extends CrossingError {
  static readonly code = 'untokenizable_input';
  static readonly log: LogPolicy = 'none';

  constructor(
    /** The longest run of characters without whitespace in the text. */
    readonly run: number,
  ) {
    super(
      `this model's tokenizer cannot take the request's text: a run of ${run} characters without whitespace ` +
        'overflowed it; break long runs (spaces or line breaks) or shorten the state',
    );
    this.name = 'UntokenizableError';
  }

  args(): unknown[] {
    return [this.run];
  }
}

/** Every error the engine throws, by name: what thread/failure.ts builds again after a thread boundary. */
export const ENGINE_ERRORS: Record<string, new (...args: never[]) => CrossingError> = {
  BudgetError,
  AbortedError,
  OverloadedError,
  ModelLoadError,
  EngineDeadError,
  EngineError,
  UntokenizableError,
};
