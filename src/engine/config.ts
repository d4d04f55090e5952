// How an operator configures one loaded model. Defaults suit a 2-core CPU box.
import { DEFAULTS as ALL } from '../defaults.js';

export type ExecutionProvider = 'cpu' | 'cuda';

/**
 * A load note: what the engine read or chose, by kind, so its owner need not read the text:
 * - packing: packed evaluation (within a request, or across requests) is off for this export;
 * - q4: 4-bit weights run through the int8 kernels;
 * - attention: fused into GroupQueryAttention, or why not;
 * - family: the model family and what was read of its folder;
 * - fallback: the engine fell back from what was asked (the rewritten graph did not load, …);
 * - reuse: a causal-row family's state is read once (its export rewritten into a continuation graph);
 * - whole-rows: a causal-row family's rows each read the state again, and why (the graph the
 *   rewrite cannot read, the probe refused, the rewrite off, activations quantized per run).
 */
export interface EngineNote {
  kind: 'packing' | 'q4' | 'attention' | 'family' | 'fallback' | 'reuse' | 'whole-rows';
  message: string;
}

export interface EngineConfig {
  /** Folder of a Hugging Face ONNX export (config.json, tokenizer.json, onnx/...). */
  modelDir: string;
  /**
   * Which ONNX file of the folder: a transformers.js dtype (fp32, fp16, int8, uint8, quantized (= q8),
   * q4, q4f16, bnb4; see variants.ts). Default: the first that exists in variants.ts's DEFAULT_ORDER.
   * A genai folder has one file (its genai_config.json names it).
   */
  variant?: string;
  provider?: ExecutionProvider;
  /** onnxruntime intra-op threads; 0 = onnxruntime's choice (one per core). Never more than cores. */
  threads?: number;
  graphOptimization?: 'disabled' | 'basic' | 'extended' | 'all';
  /**
   * Exact int8 (default true): on CPUs whose default int8 kernel saturates (AVX2 and AVX-512 without
   * VNNI), sessions set onnxruntime's session.x64quantprecision so the exact U8U8 kernel runs
   * (cpu.ts). It is a level-2 graph rewrite: with graphOptimization basic or disabled it does nothing.
   * false keeps the fast saturating kernel there: int8 answers then drift from fp32.
   */
  exactInt8?: boolean;
  /**
   * How 4-bit MatMulNBits run on CPU (default 'int8'): converted at load to per-token int8 products
   * (q4-to-int8.ts), or 'native' (onnxruntime's 4-bit kernel: half the weight memory, slower).
   */
  q4Kernels?: 'int8' | 'native';
  /**
   * Whether dynamic int8 products are rewritten at load to quantize each token's activations with
   * its own scale (per-token-int8.ts; default true), so a question's answer does not depend on what
   * else shares its pass. false runs them as exported (one activation scale per pass).
   */
  perTokenInt8?: boolean;
  /** Byte budget of the cross-request prefix KV cache; 0 turns it off (zero retention). Default 256 MiB. */
  prefixCacheBytes?: number;
  /** Requests waiting for the engine beyond the one running; past this, OverloadedError. Default 64. */
  maxQueue?: number;
  /** Token budgets (docs/engine.md, Budgets). */
  requestTokenBudget?: number;
  questionTokenBudget?: number;
  /** Prompts longer than this many tokens are prefilled in chunks of this size (0: one pass). */
  prefillChunk?: number;
  /** Worker threads that plan requests (tokenization, templates, budgets) off the event loop; 0 plans on the calling thread. Default max(1, cores / 2). */
  plannerThreads?: number;
  /** Rewrite the loaded graph so passes project only the positions read (default true; false runs the export as is). */
  rewriteGraph?: boolean;
  /**
   * Rewrite attention written in plain ops into onnxruntime's fused GroupQueryAttention (fuse-attention.ts;
   * default true; part of the graph rewrite, so off with it too).
   */
  fusedAttention?: boolean;
  /**
   * Where rewritten graphs go (graph-file.ts; nothing is ever written inside a model folder). Default:
   * $XDG_CACHE_HOME/assay/graphs or ~/.cache/assay/graphs, else `<os tmpdir>/assay-graphs`.
   */
  graphCacheDir?: string;
  /**
   * Run the evaluator in a worker thread of its own (default true): onnxruntime-node's passes are
   * synchronous, so on the calling thread each pass would block its event loop. false runs it on
   * the calling thread (tools that want the session itself).
   */
  engineThread?: boolean;
  /**
   * Told at load what the engine read and chose, each note typed by its kind (types.ts EngineNote):
   * how the export runs (packing, 4-bit weights, attention), the family read, or a fallback from
   * what was asked (e.g. the rewritten graph did not load).
   */
  onNote?: (note: EngineNote) => void;
  /**
   * Told once when the engine thread dies after loading (it exited, or an error escaped it): its
   * requests have ended with EngineDeadError and the evaluator answers nothing more; the owner
   * restarts the model (service/model-pool.ts).
   */
  onDeath?: (error: Error) => void;
  /**
   * Evaluate a request's questions packed: their suffixes (and label continuations) in one pass on
   * the prefix, each seeing the prefix and itself only (default true where the graph allows it:
   * rewritten, with plain-op attention and position_ids). false: one pass per question.
   */
  packQuestions?: boolean;
  /** Most tokens of questions in one packed pass (default 512); more questions take more passes. */
  packTokens?: number;
  /**
   * Most tokens of questions in one packed pass of the batch lane (default 128, at most `packTokens`):
   * an interactive request waits behind at most the one batch pass running, so batch passes are short.
   */
  batchPackTokens?: number;
  /**
   * Row families: most padded tokens of one batch of a request's rows (rows × the longest),
   * longest rows first (families/rows/batched.ts); 0 runs rows one by one. Default by provider
   * (src/defaults.ts): one by one on CPU, 4,096 on CUDA.
   */
  rowBatchTokens?: number;
  /**
   * The model's family, by its name (families/list.ts). Default: the folder's declaration
   * (decision.json's `layout`), else what its files show (families/detect.ts).
   */
  family?: string;
  /**
   * Most tokens of one pass that packs concurrent requests together (batching.ts): requests whose
   * whole prompt runs as one packed pass share it, each seeing only its own tokens. 0 turns it off.
   * Default by provider (src/defaults.ts): off on CPU, 4,096 on CUDA.
   */
  batchTokens?: number;
  /** Softmax temperature applied to answer logits; default from the model's assay.json manifest, else 1. */
  temperature?: number;
  /**
   * Calibration: per question type, the temperature the labels' log-probabilities are divided by
   * before they are normalized (on top of `temperature`); default the manifest's
   * `answer_temperature` (written by `assay calibrate`), else 1 for every type.
   */
  answerTemperatures?: Partial<Record<'noul' | 'choice' | 'score', number>>;
  /** Prompt wording and label strategy (prompts.ts: v1 = option names, letters = A, B, C…); default the manifest's `prompt_version`, else v1. */
  promptVersion?: string;
  /**
   * Option-order bias control: ask each choice question over this many rotations of its options and
   * average (default the manifest's `option_rotations`, else 1).
   */
  optionRotations?: number;
  /** The `confidence` of choice and score answers (execution/answers.ts): 'entropy' (1 − H/ln N, the default) or 'hosted' (the hosted service's formulas). */
  confidence?: 'entropy' | 'hosted';
}

/** Settings the engine always has a value for: src/defaults.ts gives what the caller left out. */
type Defaulted =
  | 'provider'
  | 'threads'
  | 'graphOptimization'
  | 'exactInt8'
  | 'q4Kernels'
  | 'perTokenInt8'
  | 'prefixCacheBytes'
  | 'maxQueue'
  | 'prefillChunk'
  | 'requestTokenBudget'
  | 'questionTokenBudget'
  | 'packTokens'
  | 'batchPackTokens'
  | 'rowBatchTokens'
  | 'batchTokens'
  | 'confidence'
  | 'packQuestions'
  | 'rewriteGraph'
  | 'fusedAttention';

/** An EngineConfig with every defaulted setting filled in, frozen: what the engine's parts read. */
export type ResolvedEngineConfig = Readonly<EngineConfig & Required<Pick<EngineConfig, Defaulted>>>;

/** Fills the defaults once (src/defaults.ts, the one place they live) and freezes the result (resolving a resolved config changes nothing). */
export function resolveEngineConfig(c: EngineConfig): ResolvedEngineConfig {
  const provider = c.provider ?? ALL.provider;
  return Object.freeze({
    ...c,
    provider,
    threads: c.threads ?? ALL.threads,
    graphOptimization: c.graphOptimization ?? ALL.graphOptimization,
    exactInt8: c.exactInt8 ?? ALL.exactInt8,
    q4Kernels: c.q4Kernels ?? ALL.q4Kernels,
    perTokenInt8: c.perTokenInt8 ?? ALL.perTokenInt8,
    prefixCacheBytes: c.prefixCacheBytes ?? ALL.prefixCacheBytes,
    maxQueue: c.maxQueue ?? ALL.maxQueue,
    prefillChunk: c.prefillChunk ?? ALL.prefillChunk,
    requestTokenBudget: c.requestTokenBudget ?? ALL.requestTokenBudget,
    questionTokenBudget: c.questionTokenBudget ?? ALL.questionTokenBudget,
    packTokens: c.packTokens ?? ALL.packTokens,
    batchPackTokens: c.batchPackTokens ?? ALL.batchPackTokens,
    rowBatchTokens: c.rowBatchTokens ?? ALL.rowBatchTokens[provider],
    batchTokens: c.batchTokens ?? ALL.batchTokens[provider],
    confidence: c.confidence ?? ALL.confidence,
    packQuestions: c.packQuestions ?? ALL.packQuestions,
    rewriteGraph: c.rewriteGraph ?? ALL.rewriteGraph,
    fusedAttention: c.fusedAttention ?? ALL.fusedAttention,
  });
}
