// The engine's public vocabulary: what the API layer sends in and gets back.
// Nothing here mentions tensors; the API layer imports only this file and engine/index.ts.

/** A piece of text the caller sends: a string, a JSON object or an array (null where the spec allows it). */
export type Content = string | { [key: string]: unknown } | unknown[];

export interface NoulQuestion {
  type: 'noul';
  instructions?: Content | null;
  criteria?: { true?: Content | null; false?: Content | null } | null;
}

export interface ChoiceQuestion {
  type: 'choice';
  instructions?: Content | null;
  /** option name → description (null: the option is read by its name alone). 2..255 options. */
  criteria: Record<string, Content | null>;
}

export interface ScoreQuestion {
  type: 'score';
  instructions?: Content | null;
  /** level descriptions, level = position. 2..10 levels. */
  criteria: Content[];
}

export type Question = NoulQuestion | ChoiceQuestion | ScoreQuestion;

export interface NoulAnswer {
  type: 'noul';
  noul: number;
}

export interface ChoiceAnswer {
  type: 'choice';
  choice: string;
  probabilities: Record<string, number>;
  confidence: number;
}

export interface ScoreAnswer {
  type: 'score';
  score: number;
  legend: Record<string, Content>;
  probabilities: Record<string, number>;
  confidence: number;
}

export type Answer = NoulAnswer | ChoiceAnswer | ScoreAnswer;

export interface Usage {
  input_tokens: number;
  output_tokens: number;
}

export interface EvaluateRequest {
  state: Content;
  questions: Record<string, Question>;
}

export interface EvaluateOptions {
  /** Aborts the request: queued work is dropped, running work stops at the next pass. */
  signal?: AbortSignal;
  /**
   * The prefix cache scope (e.g. a hash of the caller's API key): a request only reuses prefix KV
   * stored under the same scope, so one tenant cannot learn another's states by timing. Undefined:
   * the shared scope.
   */
  cacheScope?: string;
}

export interface EvaluateResult {
  answers: Record<string, Answer>;
  usage: Usage;
}

/** Counts of the engine's inner work, read by the API's /metrics. */
export interface EngineStats {
  queueDepth: number;
  running: number;
  prefixCacheHits: number;
  prefixCacheMisses: number;
  prefixCacheBytes: number;
  tokensEvaluated: number;
}

/** One loaded model that answers requests. */
export interface Evaluator {
  readonly modelDir: string;
  /** The model folder's assay.json marks it synthetic (random weights: meaningless answers). */
  readonly synthetic?: boolean;
  evaluate(request: EvaluateRequest, options?: EvaluateOptions): Promise<EvaluateResult>;
  stats(): EngineStats;
  close(): Promise<void>;
}
