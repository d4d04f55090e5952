// Engine errors cross threads as data (thread/failure.ts): every class of the registry comes back
// as itself, with the same fields and message; anything else as a plain Error with its name.
import { describe, expect, it } from 'vitest';
import {
  AbortedError,
  BudgetError,
  EngineDeadError,
  EngineError,
  ENGINE_ERRORS,
  ModelLoadError,
  OverloadedError,
  UntokenizableError,
} from '../../src/engine/errors.js';
import { failureOf, rebuild } from '../../src/engine/thread/failure.js';

const samples = [
  new BudgetError('question', 40_000, 32_000, true),
  new AbortedError('deadline'),
  new OverloadedError(7),
  new ModelLoadError('no chat template'),
  new EngineDeadError('the thread exited', 3),
  new EngineError('node MatMul_12: shape mismatch'),
  new UntokenizableError(160_000),
];

describe('errors across threads', () => {
  it('the registry holds every engine error class', () => {
    expect(Object.keys(ENGINE_ERRORS).sort()).toEqual(samples.map((e) => e.name).sort());
  });

  it.each(samples.map((e) => [e.name, e] as const))('%s comes back as itself, fields and message', (_name, error) => {
    const data = structuredClone(failureOf(error)); // what postMessage does to it
    const back = rebuild(data);
    expect(back).toBeInstanceOf(error.constructor);
    expect(back.message).toBe(error.message);
    expect({ ...back }).toEqual({ ...error });
  });

  it('any other error arrives as a plain Error with its name and message', () => {
    const back = rebuild(structuredClone(failureOf(new RangeError('out of range'))));
    expect(back.constructor).toBe(Error);
    expect([back.name, back.message]).toEqual(['RangeError', 'out of range']);
  });
});
