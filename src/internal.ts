// The internal door: NOT a public API. bench/, tools/ and deploy/ reach the engine's inner parts
// (the tokenizer, the model runner, the prompt planner, the graph rewrites, the synthetic model
// writer) only through this file, which names exactly what they use (eslint enforces it). Nothing
// here is covered by the package's versioning, nor exported by package.json; src/ itself imports
// each layer through its index.ts, never through this file. A bench or tool that needs one more
// inner part adds it here, so what they depend on stays listed in one place.

// The engine, its entry (what the package also exports) and inner parts.
export { cpuKernels, externalize, inlineExternalData, loadEvaluator } from './engine/index.js';
export type {
  ChoiceQuestion,
  EvaluateRequest,
  Evaluator,
  KernelPaths,
  NoulQuestion,
  Question,
  ScoreQuestion,
} from './engine/index.js';
export { decodeModel, encodeModel } from './engine/model/graph-rewrite.js';
export { openModelFolder } from './engine/model/model-folder.js';
export { convertQ4ToInt8, Q4_INT8_LEVELS, requantize } from './engine/model/q4-to-int8.js';
export { PerTokenInt8 } from './engine/model/per-token-int8.js';
export { BLOCKED_QUANTIZE_OPSET } from './engine/model/opset.js';
export { topologicalOrder } from './engine/model/graph-order.js';
export {
  RowReuse,
  rowReuseGraph,
  snapshotLength,
  type ReuseRow,
  type Snapshot,
} from './engine/model/row-reuse/index.js';
export { checkContinuation } from './engine/model/row-reuse/check.js';
export { paddedIds, positionInput } from './engine/model/row-reuse/feeds.js';
export { int8SessionConfig } from './engine/model/cpu.js';
export { logSoftmaxAt, ModelRunner } from './engine/model/runner.js';
export { firstTokens } from './engine/prompting/labels.js';
export { planRequest } from './engine/prompting/plan.js';
export { promptSet } from './engine/prompting/prompts.js';
export { TextCodec } from './engine/prompting/tokenizer.js';
export type { EngineThreadEvaluator } from './engine/thread/engine-thread.js';

// The synthetic model writer and the ONNX graph builder.
export { QWEN_TOKENIZER_FILES } from './model-files/synth/shapes.js';
export {
  buildDecoder,
  DEFAULT_SEED,
  derivedManifest,
  ensureSynthModel,
  ensureSynthVariant,
  GENERATED_DIR,
  int8Product,
  type DynamicQuantized,
  type QuantizedNames,
  loadShapes,
  variantCurrent,
  variantModel,
  VARIANT_FILE,
  writeModelFile,
  type Model,
  type ShapeName,
  type SynthDtype,
} from './model-files/index.js';
export { DataType, GraphBuilder } from './model-files/onnx/graph-builder.js';
export { quantize4 } from './model-files/variants.js';
export { quantizeSymmetric } from './model-files/synth/random.js';
export { toHalf } from './model-files/onnx/half.js';

// The server, its keys, the model pool and the registry (benches that run a server in-process).
export { buildServer, keysFromList } from './api/index.js';
export { createModelPool } from './service/index.js';
export { checkRegistry } from './registry/index.js';

// Small helpers.
export { seededRandom } from './common/index.js';
export { stateHash } from './protocol/index.js';
export { resolveEngineConfig } from './engine/config.js';
export { sessionOptions } from './engine/model/session.js';
// The model families (engine/families): the one list, a row family loaded alone (its reader and
// runner, for a bench beside a bare session), the inputs of their graphs.
export { FAMILIES, familyNamed, loadRowFamily } from './engine/families/index.js';
export { rowBatches } from './engine/families/rows/batched.js';
export type { FamilyPlan, FamilyRow, RowReader, RowRunner } from './engine/families/rows/family.js';
export { causalFeeds } from './engine/families/causal/runner.js';
export { wholeRows, type CausalPlan, type WholeRow } from './engine/families/causal/plan.js';
export { layaFeeds, type LayaRowInput } from './engine/families/laya/family.js';
export { nliFeeds, type NliRowInput } from './engine/families/nli/family.js';
export { computeLabelTable, deciderLayout, type DeciderTokenizer } from './engine/families/decider/index.js';

// Worker threads started the project's way (a bench's own client thread, from TypeScript sources).
export { runInBackground, workerEntry } from './workers/index.js';
