// Planning errors cross the worker boundary as plain data (structured clone drops classes) and are
// rebuilt as the same classes with the same fields on the other side.
import { BudgetError, ModelLoadError } from '../errors.js';

export type PlanFailure =
  | { kind: 'budget'; budget: BudgetError['budget']; count: number; limit: number; atLeast: boolean }
  | { kind: 'load'; message: string }
  | { kind: 'error'; name: string; message: string };

export function failureOf(error: unknown): PlanFailure {
  if (error instanceof BudgetError) return { kind: 'budget', budget: error.budget, count: error.count, limit: error.limit, atLeast: error.atLeast };
  if (error instanceof ModelLoadError) return { kind: 'load', message: error.message };
  const e = error instanceof Error ? error : new Error(String(error));
  return { kind: 'error', name: e.name, message: e.message };
}

export function rebuild(f: PlanFailure): Error {
  if (f.kind === 'budget') return new BudgetError(f.budget, f.count, f.limit, f.atLeast);
  if (f.kind === 'load') return new ModelLoadError(f.message);
  const e = new Error(f.message);
  e.name = f.name;
  return e;
}

