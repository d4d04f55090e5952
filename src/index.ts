// The package's entry point: the engine (load a model folder, evaluate requests in-process),
// the HTTP server and the model registry. The client SDK is `assay/client`.
export { loadEvaluator, BudgetError, AbortedError, OverloadedError, ModelLoadError } from './engine/index.js';
export type * from './engine/index.js';
export { buildServer, type ServerOptions, type AssayServer } from './api/index.js';
export { loadRegistry, resolveModel, registerModel } from './registry/index.js';
