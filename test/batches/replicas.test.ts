// Replicas sharing batches through a real PostgreSQL (pg-boss as the queue): any replica accepts a
// batch and serves its results; both answer its lines; one killed with SIGKILL in the middle loses
// nothing (its claims' leases run out and the other replica takes those lines up), and every
// custom_id is in the results exactly once.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { mixedRequest } from '../api/helpers.js';
import { postgresBinDir, startPostgres, type Postgres } from '../helpers/postgres.js';
import { startServe, tinyRegistryFile, type ServeProcess } from '../serve-process.js';
import { completedOnce, getBatch, jsonl, submit } from './helpers.js';

const KEY = 'replica-key';
const missing = postgresBinDir() ? undefined : 'no PostgreSQL binaries under /usr/lib/postgresql';
if (missing) console.log(`batch replicas skipped: ${missing}`);

describe.skipIf(missing)('batches across two replicas on PostgreSQL', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => pg?.stop());

  it('any replica serves a batch; killing one mid-batch loses no line and repeats none', async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const dir = mkdtempSync(join(tmpdir(), 'assay-batch-replicas-'));
    const registry = tinyRegistryFile(dir, modelDir);
    const env = { ASSAY_API_KEYS: KEY, ASSAY_BATCH_QUEUE_URL: pg.url };
    const start = (name: string) =>
      startServe(registry, ['--data-dir', join(dir, name), '--batch-lease', '4s', '--replica-id', name], env);
    const ids = ['paid', 'channel', 'punctuality'] as const;
    // 150 states × 10 one-question lines each.
    const lines = Array.from({ length: 1500 }, (_, i) => {
      const req = mixedRequest(`Order ${Math.floor(i / 10)}: delivered late, the customer asked for a refund.`);
      const id = ids[i % 3]!;
      return { custom_id: `r-${i}`, body: { ...req, questions: { [id]: req.questions[id] } } };
    });

    const [a, b] = await Promise.all([start('a'), start('b')]);
    const servers: ServeProcess[] = [a, b];
    try {
      const res = await submit(a.base, jsonl(lines), {}, KEY);
      expect(res.status).toBe(200);
      const batchId = ((await res.json()) as { id: string }).id;
      // Replica b knows the batch replica a accepted.
      for (let i = 0; ; i++) {
        const seen = await getBatch(b.base, batchId, KEY);
        if (seen.request_counts.completed >= 100) break;
        expect(i).toBeLessThan(3000);
        await new Promise((r) => setTimeout(r, 10));
      }
      process.kill(a.pid, 'SIGKILL');
      await a.stop();

      await completedOnce(b.base, batchId, lines.length, KEY);
      // The survivor answered the lines the killed replica left (and served the batch it accepted).
      const metrics = await (await fetch(`${b.base}/metrics`)).text();
      const answeredByB = Number(/assay_batch_lines_total\{result="completed"\} (\d+)/.exec(metrics)?.[1] ?? 0);
      expect(answeredByB).toBeGreaterThan(0);
      expect(answeredByB).toBeLessThan(lines.length + 1);
    } finally {
      for (const s of servers) await s.stop();
    }
  }, 300_000);
});
