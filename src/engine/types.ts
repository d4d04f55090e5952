// The engine's public vocabulary: what the service layer sends in and gets back.
// Nothing here mentions tensors; the layers above import only this file and engine/index.ts.

// The wire vocabulary (content, questions, answers, usage) is the protocol's: its zod schemas are
// the single source, and the engine takes their inferred types as they are (types only: the
// engine never runs zod).
import type { Answer, SentOrder, SystemOneRequest, Usage } from '../protocol/index.js';
export type {
  SentOrder,
  Answer,
  ChoiceAnswer,
  ChoiceQuestion,
  Content,
  NoulAnswer,
  NoulQuestion,
  Question,
  ScoreAnswer,
  ScoreQuestion,
  Usage,
} from '../protocol/index.js';

/** What the engine evaluates: a request's state and questions (its model is chosen before). */
export type EvaluateRequest = Pick<SystemOneRequest, 'state' | 'questions'> & {
  /**
   * The order the question ids and each choice question's options were sent in (protocol/order.ts):
   * the order options are listed and labelled in the prompt. A JS object lists integer-like keys
   * ("1", "2") first whatever the order sent. Absent (or not naming exactly the request's keys):
   * the objects' own key order.
   */
  order?: SentOrder;
};

/**
 * Which lane of the scheduler a request runs in (execution/scheduler.ts): a batch request's pass is
 * granted only while no interactive request is in the engine, is never refused for a full queue
 * (its runner bounds its own work in flight), and is counted apart from the interactive queue.
 */
export type Lane = 'interactive' | 'batch';

export interface EvaluateOptions {
  /** Aborts the request: queued work is dropped, running work stops at the next pass. */
  signal?: AbortSignal;
  /** The scheduler lane (default 'interactive'). */
  lane?: Lane;
  /**
   * The prefix cache scope (e.g. a hash of the caller's API key): a request only reuses prefix KV
   * stored under the same scope, so one tenant cannot learn another's states by timing. Undefined:
   * the shared scope.
   */
  cacheScope?: string;
  /** Time the request's stages (EvaluateResult.stages), for tracing: off unless asked. */
  trace?: boolean;
}

/** One timed stage of a request in the engine (wall-clock ms); counts only, never content. */
export interface StageSpan {
  name: 'planning' | 'queue_wait' | 'engine_pass' | 'readout';
  start: number;
  end: number;
  /** The tokens of an engine pass. */
  tokens?: number;
}

export interface EvaluateResult {
  answers: Record<string, Answer>;
  usage: Usage;
  /**
   * `usage` split into what the questions share (the state, encoded once) and what each question
   * adds, keyed by the request's question ids: `shared` + Σ `questions` = `usage`, and a request of
   * any subset of the questions on the same state, sent alone, would be charged `shared` + Σ of
   * their parts. Absent where that does not hold (a prompt whose shared prefix depends on which
   * questions are asked: a template without a system role, prompting/plan.ts).
   */
  usageParts?: UsageParts;
  /** What the model's family says beside the answers (never part of the answers themselves). */
  notes?: EvaluateNotes;
  /** The request's stages in the engine, when EvaluateOptions.trace asked for them. */
  stages?: StageSpan[];
}

/** A request's usage, per part (EvaluateResult.usageParts). */
export interface UsageParts {
  shared: Usage;
  /** Per question id (own keys: an id may be named like an Object.prototype member). */
  questions: Record<string, Usage>;
}

/** Facts of an evaluation outside the answer contract: the API sends them as headers (docs/api.md). */
export interface EvaluateNotes {
  /**
   * Per question id, what the family's layout cut because its authors' reference cuts it by design
   * ('state', 'instructions', 'options', 'row' for Laya; 'state' for NLI pairs): a request that does
   * not fit is otherwise refused (422), never cut silently.
   */
  truncated?: Record<string, string[]>;
  /** Per question id, the Laya head's act_logits pair as the graph returns it (rows of its act / abstain head). */
  actLogits?: Record<string, [number, number]>;
}

/** Counts of the engine's inner work, read by the API's /metrics. */
export interface EngineStats {
  /** Interactive requests admitted that have not run a pass yet (the load signal an autoscaler reads). */
  queueDepth: number;
  /** Batch-lane requests admitted that have not run a pass yet (never in queueDepth). */
  batchQueueDepth: number;
  /** Requests in progress (both lanes): they have run a pass and are not finished. */
  running: number;
  prefixCacheHits: number;
  prefixCacheMisses: number;
  prefixCacheBytes: number;
  tokensEvaluated: number;
  /** Forward passes run (prefill chunks, prefixes, suffixes, packed passes). */
  passes: number;
  /** The model's family, by its name (docs/models.md#model-families). */
  family: string;
  /**
   * Whether the model reuses a state's tokens across questions and requests: the decoder engine's
   * families encode a state's KV once; a row family whose rows are run whole reads the state again in
   * every row (its prefix cache figures stay 0).
   */
  prefixReuse: boolean;
}

/** One loaded model that answers requests. */
export interface Evaluator {
  readonly modelDir: string;
  /** The model folder's assay.json marks it synthetic (random weights: meaningless answers). */
  readonly synthetic?: boolean;
  /** The ONNX file the session runs: the load-time rewrite in the graph cache, or the export itself. */
  readonly graph?: string;
  evaluate(request: EvaluateRequest, options?: EvaluateOptions): Promise<EvaluateResult>;
  /**
   * The same for a request body as bytes (UTF-8 JSON of a SystemOneRequest the caller validated,
   * protocol/body.ts): parsed, rendered and tokenized off the calling thread, so a large body never
   * becomes an object there. The bytes may be transferred (detached) when they own their buffer.
   */
  evaluateBody?(body: Uint8Array, options?: EvaluateOptions): Promise<EvaluateResult>;
  stats(): EngineStats;
  close(): Promise<void>;
}
