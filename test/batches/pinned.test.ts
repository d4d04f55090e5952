// A batch line for a model that can never load beside the pinned ones (--max-loaded-models 1, the
// default pinned) fails at once with models_pinned, saying why, instead of waiting until its batch
// expires; the lines for the pinned model are answered. Real model pool, real server, real socket.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { createModelPool, type ModelPool } from '../../src/service/model-pool.js';
import { checkRegistry } from '../../src/registry/registry.js';
import { mixedRequest } from '../api/helpers.js';
import { jsonl, readResults, startBatchServer, submit, waitEnded } from './helpers.js';

describe('a batch line for a model the pinned ones leave no room for', () => {
  let pool: ModelPool;
  let server: Awaited<ReturnType<typeof startBatchServer>>;
  beforeAll(async () => {
    const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const entry = { path: dir, variant: 'fp32', description: 'tiny', release_date: '2026-11-22' };
    const registry = checkRegistry(
      { default: 'svc-a', models: { 'svc-a': entry, 'm-b': entry }, aliases: {} },
      '/tmp/assay-pinned-registry.json',
    );
    pool = createModelPool(registry, { threads: 1 }, { info: () => {}, warn: () => {} }, Date.now, {
      maxLoadedModels: 1,
    });
    await pool.preload();
    server = await startBatchServer({}, { registry, models: pool });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await pool?.close();
  });

  it('fails with models_pinned and the reason; the pinned model’s lines are answered', async () => {
    const { state, questions } = mixedRequest();
    const line = (id: string, model: string) => ({ custom_id: id, body: { model, state, questions } });
    const res = await submit(server.base, jsonl([line('a-1', 'svc-a'), line('b-1', 'm-b'), line('a-2', 'svc-a')]));
    expect(res.status).toBe(200);
    const { id } = (await res.json()) as { id: string };
    const ended = await waitEnded(server.base, id, 60_000);
    expect(ended.status).toBe('completed');
    expect(ended.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
    const { lines } = await readResults(server.base, id);
    const failed = lines.find((l) => l.custom_id === 'b-1')!;
    expect(failed.error?.code).toBe('models_pinned');
    expect(failed.error?.message).toBe(
      'Model m-b cannot be loaded while svc-a stays resident (pinned by --preload): it takes the one place of --max-loaded-models; raise it or pin fewer models',
    );
    for (const ok of ['a-1', 'a-2']) expect(lines.find((l) => l.custom_id === ok)?.response?.status_code).toBe(200);
  }, 90_000);
});
