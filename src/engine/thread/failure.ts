// Engine errors cross worker boundaries (the planner's threads, the engine thread) as plain data:
// structured clone drops classes. Each is sent as its name and constructor arguments and built
// again from the registry (errors.ts ENGINE_ERRORS) on the other side, the same class with the same
// fields, so the API's error table maps it as if it had been thrown there. Anything else arrives
// as a plain Error with its name and message.
import { CrossingError, ENGINE_ERRORS } from '../errors.js';

export type Failure = { name: string; args: unknown[] } | { name: string; message: string };

export function failureOf(error: unknown): Failure {
  if (error instanceof CrossingError && ENGINE_ERRORS[error.name]) return { name: error.name, args: error.args() };
  const e = error instanceof Error ? error : new Error(String(error));
  return { name: e.name, message: e.message };
}

export function rebuild(f: Failure): Error {
  const Known = ENGINE_ERRORS[f.name];
  if (Known && 'args' in f) return new Known(...(f.args as never[]));
  const e = new Error('message' in f ? f.message : f.name);
  e.name = f.name;
  return e;
}
