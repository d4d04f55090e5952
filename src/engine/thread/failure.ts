// Engine errors cross worker boundaries (the planner's threads, the engine thread) as plain data:
// structured clone drops classes. They are rebuilt as the same classes with the same fields on the
// other side, so the API's error table maps them as if they had been thrown there.
import { AbortedError, BudgetError, EngineError, ModelLoadError, OverloadedError } from '../errors.js';

export type Failure =
  | { kind: 'budget'; budget: BudgetError['budget']; count: number; limit: number; atLeast: boolean }
  | { kind: 'load'; message: string }
  | { kind: 'aborted'; message: string }
  | { kind: 'overloaded'; retryAfterSeconds: number }
  | { kind: 'engine'; message: string }
  | { kind: 'error'; name: string; message: string };

export function failureOf(error: unknown): Failure {
  if (error instanceof BudgetError) return { kind: 'budget', budget: error.budget, count: error.count, limit: error.limit, atLeast: error.atLeast };
  if (error instanceof ModelLoadError) return { kind: 'load', message: error.message };
  if (error instanceof AbortedError) return { kind: 'aborted', message: error.message };
  if (error instanceof OverloadedError) return { kind: 'overloaded', retryAfterSeconds: error.retryAfterSeconds };
  if (error instanceof EngineError) return { kind: 'engine', message: error.message };
  const e = error instanceof Error ? error : new Error(String(error));
  return { kind: 'error', name: e.name, message: e.message };
}

export function rebuild(f: Failure): Error {
  switch (f.kind) {
    case 'budget':
      return new BudgetError(f.budget, f.count, f.limit, f.atLeast);
    case 'load':
      return new ModelLoadError(f.message);
    case 'aborted':
      return new AbortedError(f.message);
    case 'overloaded':
      return new OverloadedError(f.retryAfterSeconds);
    case 'engine':
      return new EngineError(f.message);
    case 'error': {
      const e = new Error(f.message);
      e.name = f.name;
      return e;
    }
  }
}
