// The model pool's backoffs, on the real engine: a model whose engine thread keeps dying is loaded
// again at once the first time, then after 1 s, 2 s, ... (requests meanwhile get 503 with the time
// left), and a model that has run a minute without dying starts afresh; a model that cannot load is
// tried again only after its own backoff, not by every request.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { createModelPool } from '../../src/service/model-pool.js';
import { ModelUnavailableError } from '../../src/service/errors.js';
import { checkRegistry } from '../../src/registry/registry.js';
import type { EngineThreadEvaluator } from '../../src/engine/thread/engine-thread.js';

// The engine threads these tests start get the crash hook they kill them with (engine/thread/crash-hook.ts).
process.env.ASSAY_ENGINE_CRASH_HOOK = '1';

function registryFor(dir: string) {
  const entry = { path: dir, variant: 'fp32', description: 'tiny', release_date: '2026-11-22' };
  return checkRegistry(
    { default: 'svc-x', models: { 'svc-x': entry }, aliases: {} },
    '/tmp/assay-backoff-registry.json',
  );
}

async function until(check: () => boolean, what: string): Promise<void> {
  const end = Date.now() + 60_000;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('model pool backoff', () => {
  it('restarts a dying engine at once, then after 1 s, 2 s; a minute of health resets it', async () => {
    const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    let clock = 1_000_000;
    const delays: number[] = [];
    const log = {
      info: () => {},
      warn: (o: object, m: string) =>
        void (m.startsWith('engine thread died') && delays.push((o as { restart_in_ms: number }).restart_in_ms)),
    };
    const pool = createModelPool(registryFor(dir), { threads: 1 }, log, () => clock);
    try {
      const kill = async (): Promise<void> => {
        const evaluator = (await pool.load('svc-x')) as EngineThreadEvaluator;
        const deaths = delays.length;
        evaluator.crashForTest('exit');
        await until(() => delays.length > deaths, 'the death to be seen');
      };
      await pool.preload();
      await kill();
      await until(() => pool.ready(), 'the first restart');
      await kill();
      // Waiting out the second restart's backoff: a request is refused with the time left.
      const refused = await pool.load('svc-x').catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(ModelUnavailableError);
      expect((refused as ModelUnavailableError).retryAfterSeconds).toBeCloseTo(1, 0);
      await until(() => pool.ready(), 'the second restart');
      await kill();
      await until(() => pool.ready(), 'the third restart');
      expect(delays).toEqual([0, 1000, 2000]);
      // Running a minute without dying starts the backoff afresh.
      clock += 61_000;
      await kill();
      expect(delays.at(-1)).toBe(0);
      expect(pool.restarts!()['svc-x']).toBe(4);
    } finally {
      await pool.close();
    }
  });

  it('a model that cannot load is tried again only after 1 s, 2 s, 4 s: requests in between do not load it', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'assay-no-model-'));
    let clock = 1_000_000;
    let attempts = 0;
    const log = { info: () => {}, warn: (_o: object, m: string) => void (m === 'model failed to load' && attempts++) };
    const pool = createModelPool(registryFor(empty), { threads: 1 }, log, () => clock);
    const refusal = async (): Promise<ModelUnavailableError> =>
      (await pool.acquire('svc-x').catch((e: unknown) => e)) as ModelUnavailableError;
    try {
      for (const wait of [1, 2, 4]) {
        const before = attempts;
        const first = await refusal();
        expect(first).toBeInstanceOf(ModelUnavailableError);
        expect(first.failed).toBe(true);
        expect(attempts).toBe(before + 1);
        expect(first.retryAfterSeconds).toBeCloseTo(wait, 3);
        // Within the backoff: refused again with the time left, without a new load.
        clock += wait * 1000 - 250;
        const again = await refusal();
        expect(attempts).toBe(before + 1);
        expect(again.retryAfterSeconds).toBeCloseTo(0.25, 3);
        clock += 250;
      }
    } finally {
      await pool.close();
    }
  });
});
