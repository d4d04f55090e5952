// The engine's one entry point: load a model folder, get an Evaluator.
export type * from './types.js';
export type { EngineConfig, EngineNote, ExecutionProvider } from './config.js';
export { cpuFacts, cpuKernels, type CpuFacts, type KernelPaths } from './model/cpu.js';
export { ModelManifestSchema, type ModelManifest } from './model/manifest.js';
export { ONNX_DIRS, VARIANTS, parseVariant, variantFileNames, type Variant } from './model/variants.js';
export { PROMPT_VERSIONS } from './prompting/prompts.js';
export { externalize } from './model/graph-file.js';
export { inlineExternalData } from './model/q4-to-int8.js';
// The families' light modules only (no onnxruntime): a row family's parts are imported when a model loads.
export { DEFAULT_FAMILY, FAMILIES, FAMILY_NAMES, familyNamed, isRowFamily, type FamilyName } from './families/list.js';
export type { FamilyDescriptor, FamilyEngine, FetchRule } from './families/descriptor.js';
export { detectFamily, familyOfFiles, type FamilyEvidence } from './families/detect.js';
// The rules of where a family's files are, over a file listing: the hub fetcher picks by them.
export {
  DECISION_FILE,
  findSingleGraph,
  findSplitGraph,
  isExternalData,
  singleGraphVariants,
  TOKENIZER_FILES,
  tokenizerFolder,
  type FolderFiles,
  type HasFile,
} from './families/files.js';
export { CalibrationSchema } from './families/shared/settings.js';
export {
  BudgetError,
  AbortedError,
  OverloadedError,
  ModelLoadError,
  EngineError,
  EngineDeadError,
  UntokenizableError,
} from './errors.js';
import type { EngineConfig } from './config.js';
import type { Evaluator } from './types.js';

/** Loads a model; by default the evaluator runs in a thread of its own (engine-thread.ts), off the caller's event loop. */
export async function loadEvaluator(config: EngineConfig): Promise<Evaluator> {
  if (config.engineThread === false) {
    const { createEvaluator } = await import('./execution/evaluator.js');
    return createEvaluator(config);
  }
  const { loadEvaluatorThread } = await import('./thread/engine-thread.js');
  return loadEvaluatorThread(config);
}
