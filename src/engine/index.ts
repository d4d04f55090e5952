// The engine's one entry point: load a model folder, get an Evaluator.
export type * from './types.js';
export type { EngineConfig, ExecutionProvider } from './config.js';
export { BudgetError, AbortedError, OverloadedError, ModelLoadError, EngineError } from './errors.js';
import type { EngineConfig } from './config.js';
import type { Evaluator } from './types.js';

export async function loadEvaluator(config: EngineConfig): Promise<Evaluator> {
  const { createEvaluator } = await import('./evaluator.js');
  return createEvaluator(config);
}
