// True sizes: with two models loaded and answering, what `assay ps` lists (GET /admin/models: each
// model's size_bytes, and resident_bytes, what the memory budget counts) agrees within 15% with
// what the process's RSS grew by over their loads, and the table ps prints says the same total.
import { afterAll, describe, expect, it } from 'vitest';
import { psTable } from '../../src/commands/operator.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { checkRegistry } from '../../src/registry/index.js';
import { createModelPool, type ModelPool } from '../../src/service/index.js';

let pool: ModelPool | undefined;
afterAll(async () => pool?.close());

describe('model sizes', () => {
  it('two models: their sizes add up to the RSS they grew the process by, within 15%', async () => {
    const a = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const b = await ensureSynthModel({ shape: 'tiny', dtype: 'int8' });
    const registry = checkRegistry(
      {
        default: 'm-a',
        models: {
          'm-a': { path: a, variant: 'fp32', description: 'a', release_date: '2026-01-01' },
          'm-b': { path: b, variant: 'int8', description: 'b', release_date: '2026-01-01' },
        },
        aliases: {},
      },
      '/tmp/assay-size-registry.json',
    );
    const before = process.memoryUsage.rss();
    pool = createModelPool(registry, { threads: 1 }, { info: () => {}, warn: () => {} }, Date.now, {
      memoryBudget: 16 * 2 ** 30,
    });
    for (const id of ['m-a', 'm-b']) {
      const lease = await pool.acquire(id);
      await lease.evaluator.evaluate({
        state: 'The parcel arrived two days late and the box was damaged; the customer wants a refund.',
        questions: {
          late: { type: 'noul', instructions: 'Was it late?' },
          topic: { type: 'choice', instructions: 'Topic?', criteria: { delivery: null, billing: null } },
        },
      });
      lease.release();
    }
    const grown = process.memoryUsage.rss() - before;
    const view = pool.residency!();
    expect(view.models.map((m) => m.model).sort()).toEqual(['m-a', 'm-b']);
    const listed = view.models.reduce((t, m) => t + m.size_bytes, 0);
    expect(view.resident_bytes).toBe(listed);
    const off = Math.abs(listed - grown) / grown;
    expect(
      off,
      `listed ${(listed / 2 ** 20).toFixed(1)} MiB, RSS grew ${(grown / 2 ** 20).toFixed(1)} MiB`,
    ).toBeLessThan(0.15);
    // What ps prints: the same total.
    const mib = (x: number) => `${(x / 2 ** 20).toFixed(1)} MiB`;
    expect(psTable(view)).toContain(`2 of ${view.max_loaded_models} models, ${mib(listed)}`);
  }, 180_000);
});
