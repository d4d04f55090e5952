// Engine errors cross worker boundaries (the planner's threads, the engine thread) as plain data:
// structured clone drops classes. Each is sent as its name and constructor arguments and built
// again from the registry (errors.ts ENGINE_ERRORS) on the other side, the same class with the same
// fields, so the API's error table maps it as if it had been thrown there. Anything else arrives
// as a plain Error with its name and message.
import { CrossingError, ENGINE_ERRORS } from '../errors.js';

export type Failure = { name: string; args: unknown[] } | { name: string; message: string };

export function failureOf(error: unknown): Failure {
  if (error instanceof CrossingError) {
    // A subclass the registry does not list (a family's BudgetError) crosses as its nearest listed
    // class, with that class's arguments (a BudgetError's include its message).
    for (let proto = Object.getPrototypeOf(error) as object | null; proto; proto = Object.getPrototypeOf(proto)) {
      const Known = ENGINE_ERRORS[(proto.constructor as { name: string }).name];
      if (Known && Known.prototype === proto)
        return { name: Known.name, args: (proto as CrossingError).args.call(error) };
    }
  }
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
