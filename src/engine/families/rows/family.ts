// A row family: a model whose published graph reads one input row per question (or per option)
// and gives each row's head outputs, with no KV across rows. Its folder is read once per thread
// that plans or reads out (RowReader: settings and tokenizer, on the engine thread and in each
// planner thread), its graph opened once on the engine thread (RowRunner: what the rows read and
// how they run). The row evaluator (evaluator.ts) plans off the engine thread, runs the plan's
// rows in the request's turn of the scheduler and turns each question's option probabilities into
// its answer with the engine's shared answer code. The encoders (rows batched whole: batched.ts)
// and the causal-row heads (../causal/: one runner, prefix-reuse ready) are the two kinds.
import type * as ort from 'onnxruntime-node';
import type { ResolvedEngineConfig } from '../../config.js';
import type { PassStep } from '../../model/runner.js';
import type { EvaluateRequest, Question, Usage, UsageParts } from '../../types.js';

/** One input row of a row family: its token count is what batching and usage read. */
export interface FamilyRow {
  readonly tokens: number;
}

/** One question as the family asks it: the rows it reads, its options in the order they were read. */
export interface FamilyQuestion {
  /** The caller's question id. */
  key: string;
  question: Question;
  /** A choice question's option names in the order sent (the answer's); unused for noul and score. */
  options?: readonly string[];
  /** Indices of its rows in the plan. */
  rows: number[];
  /** What the family's layout cut by its authors' design ('state', 'instructions', 'options', …); absent: nothing. */
  truncated?: string[];
}

/** A request as a family's rows: plain data (planned in a planner thread, it crosses to the engine thread). */
export interface FamilyPlan<R extends FamilyRow = FamilyRow> {
  questions: FamilyQuestion[];
  rows: R[];
}

/** What the model gave for one row. */
export interface RowOutput {
  /** The row's scores: one per marker (Laya), the classifier's columns (NLI), a head's options or slots. */
  logits: number[];
  /** The row's act / abstain pair, where the family's head has one (Laya's act_logits), as the graph gives it. */
  act?: [number, number];
}

/** A family's folder as planning and the readout read it: its settings and tokenizer (any thread). */
export interface RowReader<P extends FamilyPlan = FamilyPlan> {
  /** What the load reports of the folder (settings read, tokenizer settings disabled, temperatures clamped, …). */
  readonly notes: readonly string[];
  /** A request as rows (tokenization and layout, no passes); throws BudgetError for what the family refuses. */
  plan(request: EvaluateRequest): P;
  /**
   * A question's calibrated probabilities from its rows' outputs, in the order of a decoder's
   * labels: choice per option (in `options` order), score per level, noul [P(yes), P(no)].
   */
  probabilities(question: FamilyQuestion, outputs: readonly RowOutput[]): number[];
}

/** What a plan reads as a runner runs it: `usage`, and its split per question when the split adds up. */
export interface RowUsage {
  usage: Usage;
  parts?: UsageParts;
}

/**
 * A family's graph, open on the engine thread. `W` is the row one pass takes (an encoder's planned
 * row, a causal family's whole row).
 */
export interface RowRunner<P extends FamilyPlan = FamilyPlan, W = unknown> {
  /** The ONNX file(s) it runs. */
  readonly graph: string;
  /** What the load reports of the graph (rows run one by one, …). */
  readonly notes: readonly string[];
  /** The graph quantizes activations with one scale per run (a dynamic int8 export): its rows run one by one. */
  readonly rowsAlone: boolean;
  /** The tokens the plan's rows read as this runner runs them (the request budget is checked on it). */
  usage(plan: P): RowUsage;
  /**
   * Runs the plan's rows, each pass through `pass` (the request's turn; it counts the pass): one
   * output per row. `cacheScope`: the caller's prefix cache scope, where the runner keeps one.
   */
  run(plan: P, pass: PassStep, cacheScope?: string): Promise<RowOutput[]>;
  /** Whether it reads a state once across a plan's rows and keeps it across requests (/metrics' prefix_reuse). */
  readonly prefixReuse?: boolean;
  /** Its prefix cache now, where it keeps one: hits, misses, bytes (the model's size counts the bytes). */
  cacheStats?(): { hits: number; misses: number; bytes: number };
  /** One pass over rows as given, any plans' (tests and benches: batch invariance, a bare session beside). */
  pass(rows: readonly W[]): Promise<RowOutput[]>;
  /** The graph's inputs for a batch of rows (a bench's bare session runs the same rows). */
  feeds(rows: readonly W[]): Record<string, ort.Tensor>;
  close(): Promise<void>;
}

/** A row family as its descriptor gives it: how its folder is read and how its graph is opened. */
export interface RowFamilySpec<P extends FamilyPlan = FamilyPlan, F extends RowReader<P> = RowReader<P>, W = unknown> {
  /** Reads the folder's settings and tokenizer (a load error names what is wrong); no graph. */
  read(c: ResolvedEngineConfig): F;
  /** Opens the graph, with what `read` read. */
  open(c: ResolvedEngineConfig, reader: F): Promise<RowRunner<P, W>>;
}
