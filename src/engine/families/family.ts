// A model family: how a request becomes a model's input rows, how one row's output is read back,
// and the calibration that ships with the weights. The decoder family is the engine's own
// (prompting/, execution/); the encoder families (laya/, nli/) implement RowFamily and are run
// by one evaluator (evaluator.ts), which turns their option probabilities into the answers with the
// engine's shared answer code. docs/families/*.md hold each family's written layout.
import type { EvaluateRequest, Question, Usage } from '../types.js';

/**
 * The families, by the layout id their docs and the registry use. Two are run by the decoder engine
 * (prompting/, execution/: the state's KV encoded once and reused): `decoder` (Assay's own prompt,
 * for generic chat models), `decider-labels` (a label-token decision model read under its own
 * prompt contract) and `label-tokens` (one whose contract its folder's decision.json carries). The others are row families (RowFamily, run by evaluator.ts): the encoders
 * (`laya-markers`, `nli-pairs`) and the causal-row graphs with gathered-position heads
 * (`kev-pointer`, `decision-endpoint`, `decider-slots`, `arbiter-fixed`), whose published graphs
 * take whole rows and no KV.
 */
export const FAMILY_NAMES = [
  'decoder',
  'decider-labels',
  'label-tokens',
  'laya-markers',
  'nli-pairs',
  'kev-pointer',
  'decision-endpoint',
  'decider-slots',
  'arbiter-fixed',
] as const;
export type FamilyName = (typeof FAMILY_NAMES)[number];
/** The families the decoder engine runs. */
export type DecoderFamilyName = Extract<FamilyName, 'decoder' | 'decider-labels' | 'label-tokens'>;
export type RowFamilyName = Exclude<FamilyName, DecoderFamilyName>;

/** Whether the family is a row family (else the decoder engine runs it). */
export function isRowFamily(name: FamilyName): name is RowFamilyName {
  return name !== 'decoder' && name !== 'decider-labels' && name !== 'label-tokens';
}

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

export interface FamilyPlan<R extends FamilyRow> {
  questions: FamilyQuestion[];
  rows: R[];
  /** input_tokens: every token of every row (an encoder reads the state again in each row). */
  usage: Usage;
}

/** What the model gave for one row. */
export interface RowOutput {
  /** The row's scores: one per marker (Laya), or the classifier's columns (NLI). */
  logits: number[];
  /** The row's act / abstain pair, where the family's head has one (Laya's act_logits), as the graph gives it. */
  act?: [number, number];
}

/** A loaded model of a row family (an encoder, or a causal-row graph with a gathered-position head). */
export interface RowFamily<R extends FamilyRow = FamilyRow> {
  readonly name: RowFamilyName;
  /** The ONNX file(s) it runs. */
  readonly graph: string;
  /**
   * Rows run one at a time: the graph quantizes activations with one scale per run (a dynamic int8
   * export), so a batch would make a row's numbers depend on the others and on the padding.
   */
  readonly rowsAlone: boolean;
  /** Settings of the folder the load reports (tokenizer settings disabled, temperatures clamped, what was read where). */
  readonly notes: readonly string[];
  /** A request as rows (tokenization and layout, no passes); throws BudgetError for what the family refuses. */
  plan(request: EvaluateRequest): FamilyPlan<R>;
  /** One batched run of rows (any questions of one request) → one output per row. */
  run(rows: readonly R[]): Promise<RowOutput[]>;
  /**
   * A question's calibrated probabilities from its rows' outputs, in the order of a decoder's
   * labels: choice per option (in `options` order), score per level, noul [P(yes), P(no)].
   */
  probabilities(question: FamilyQuestion, outputs: readonly RowOutput[]): number[];
  close(): Promise<void>;
}
