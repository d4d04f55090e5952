// The metamorphic relations (relations.ts) through the engine, on the fp32, dynamic int8 and 4-bit
// flavors of the tiny model, with the default settings (int8 quantized per token at load; 4-bit
// converted to the same per-token int8 products). What the per-pass forms (--no-per-token-int8,
// --q4-kernels native) and an option order without rotations do is measured and printed, not asserted.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadEvaluator, type EngineConfig, type Evaluator } from '../../src/engine/index.js';
import type { EvaluateRequest } from '../../src/engine/types.js';
import { ensureFlavor } from '../../tools/flavors.js';
import { tinyFp32, tinyInt8 } from '../engine/fixtures.js';
import {
  type Ask,
  CYCLIC,
  difference,
  FLAVORS,
  OPTIONS,
  type Probabilities,
  probabilitiesOf,
  RELATIONS,
  type Servings,
  SHUFFLED,
  stateFor,
  referenced,
  TOLERANCE,
} from './relations.js';

const open: Evaluator[] = [];
afterAll(async () => {
  await Promise.all(open.map((e) => e.close()));
});

async function evaluator(modelDir: string, config: Partial<EngineConfig> = {}): Promise<Evaluator> {
  // Planning inline and one thread: the suite is about numbers, not concurrency.
  const e = await loadEvaluator({ modelDir, threads: 1, plannerThreads: 0, ...config });
  open.push(e);
  return e;
}

function asker(e: Evaluator): Ask {
  return async (request, scope) => {
    const result = await e.evaluate(request, scope ? { cacheScope: scope } : {});
    return Object.fromEntries(Object.entries(result.answers).map(([k, a]) => [k, probabilitiesOf(a as never)]));
  };
}

async function servings(modelDir: string, config: Partial<EngineConfig> = {}): Promise<Servings> {
  return {
    packed: asker(await evaluator(modelDir, { ...config, prefixCacheBytes: 0 })),
    unpacked: asker(await evaluator(modelDir, { ...config, prefixCacheBytes: 0, packQuestions: false })),
    cached: asker(await evaluator(modelDir, config)),
  };
}

for (const flavor of FLAVORS) {
  describe(`metamorphic relations through the engine, ${flavor.name}`, () => {
    let s: Servings;
    beforeAll(async () => {
      s = await servings(await flavor.dir());
      // A quantized flavor's answers are measured against its fp32 twin's too (relations.ts).
      if (flavor.name !== 'fp32') s = referenced(s, asker(await evaluator(await tinyFp32(), { prefixCacheBytes: 0 })));
    });
    for (const relation of RELATIONS) {
      it(`${relation.name}: answers equal within ${TOLERANCE}`, async () => {
        expect(await relation.run(s)).toBeLessThan(TOLERANCE);
      });
    }
  });
}

describe('choice option order', () => {
  const one = (e: Evaluator, q: typeof OPTIONS): Promise<Probabilities> =>
    asker(e)({ state: stateFor(20), questions: { t: q } } satisfies EvaluateRequest);
  for (const flavor of FLAVORS) {
    it(`${flavor.name}: with as many rotations as options a cyclic reordering changes no answer; without, the change is reported`, async () => {
      const dir = await flavor.dir();
      const rotated = await evaluator(dir, { optionRotations: 5, prefixCacheBytes: 0 });
      expect(difference(await one(rotated, OPTIONS), await one(rotated, CYCLIC))).toBeLessThan(TOLERANCE);
      const plain = await evaluator(dir, { prefixCacheBytes: 0 });
      const base = await one(plain, OPTIONS);
      console.log(
        `[metamorphic] ${flavor.name} option order, max |ΔP|: without rotations cyclic ${difference(base, await one(plain, CYCLIC)).toExponential(2)}, ` +
          `shuffled ${difference(base, await one(plain, SHUFFLED)).toExponential(2)}; with 5 rotations shuffled ${difference(await one(rotated, OPTIONS), await one(rotated, SHUFFLED)).toExponential(2)}`,
      );
    });
  }
});

describe('the per-pass forms, measured (not asserted)', () => {
  const PER_PASS: Array<{ name: string; dir: () => Promise<string>; config: Partial<EngineConfig> }> = [
    { name: 'int8 --no-per-token-int8', dir: tinyInt8, config: { perTokenInt8: false } },
    {
      name: 'q4 --q4-kernels native (MatMulNBits accuracy_level 4)',
      dir: () => ensureFlavor({ dtype: 'q4' }),
      config: { q4Kernels: 'native' },
    },
  ];
  for (const form of PER_PASS) {
    it(form.name, async () => {
      const s = await servings(await form.dir(), form.config);
      const lines: string[] = [];
      for (const relation of RELATIONS) lines.push(`${relation.name} ${(await relation.run(s)).toExponential(2)}`);
      console.log(`[metamorphic] ${form.name}, max |ΔP|: ${lines.join('; ')}`);
    });
  }
});
