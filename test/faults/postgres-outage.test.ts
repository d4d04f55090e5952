// Fault: the PostgreSQL that two replicas share stops (`pg_ctl stop -m fast`, as an operator's
// restart does: every session is cut) for OUTAGE_MS while they drain a shared batch and answer
// interactive requests, then starts again. Nothing may crash: interactive requests, which need no
// database, keep answering 200; batch routes answer a clear 503 with retry-after; /healthz says
// degraded and why; the replicas reconnect by themselves (same processes, no restart) and finish
// the batch with every custom_id in its results exactly once.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { postgresBinDir, startPostgres, type Postgres } from '../helpers/postgres.js';
import { startServe, tinyRegistryFile, type ServeProcess } from '../serve-process.js';
import { completedOnce, getBatch, jsonl, submit } from '../batches/helpers.js';
import { batchLines, figures, health, interactiveLoad, percentile, waitFor, UNLIMITED_RPM } from './helpers.js';

const KEY = 'fault-pg-key';
/** How long PostgreSQL stays down: the 30 s (ASSAY_FAULT_PG_OUTAGE_MS to try others). */
const OUTAGE_MS = Number(process.env.ASSAY_FAULT_PG_OUTAGE_MS ?? 30_000);
const missing = postgresBinDir() ? undefined : 'no PostgreSQL binaries under /usr/lib/postgresql';
if (missing) console.log(`PostgreSQL outage fault skipped: ${missing}`);

describe.skipIf(missing)('fault: PostgreSQL stops and comes back under two replicas', () => {
  let pg: Postgres;
  beforeAll(async () => {
    pg = await startPostgres();
  });
  afterAll(async () => pg?.stop());

  it(`survives a ${OUTAGE_MS / 1000} s outage: no crash, interactive answers, degraded health, reconnect, every line once`, async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const dir = mkdtempSync(join(tmpdir(), 'assay-fault-pg-'));
    const registry = tinyRegistryFile(dir, modelDir);
    const env = { ASSAY_API_KEYS: KEY, ASSAY_RATE_RPM: UNLIMITED_RPM, ASSAY_BATCH_QUEUE_URL: pg.url };
    const start = (name: string) => startServe(registry, ['--data-dir', join(dir, name), '--replica-id', name], env);
    const lines = batchLines(1200, 10, 'pg');
    const [a, b] = await Promise.all([start('a'), start('b')]);
    const servers: ServeProcess[] = [a, b];
    try {
      // Idle latency first (after a warm-up), with the same clients as during the fault, for the figures.
      await interactiveLoad(a.base, KEY, 1).stop();
      await interactiveLoad(b.base, KEY, 1).stop();
      const idle = [interactiveLoad(a.base, KEY, 1), interactiveLoad(b.base, KEY, 1)];
      await waitFor(() => idle.every((l) => l.samples.length >= 100), '100 idle requests per replica', 120_000);
      const idleSamples = (await Promise.all(idle.map((l) => l.stop()))).flat();

      const res = await submit(a.base, jsonl(lines), {}, KEY);
      expect(res.status, await res.clone().text()).toBe(200);
      const batchId = ((await res.json()) as { id: string }).id;
      await waitFor(async () => (await getBatch(b.base, batchId, KEY)).request_counts.completed >= 150, '150 lines');

      const load = [interactiveLoad(a.base, KEY, 1), interactiveLoad(b.base, KEY, 1)];
      await pg.halt();
      const stoppedAt = Date.now();

      // Both replicas say so on /healthz (200: they still serve requests), with the reason.
      for (const s of servers)
        await waitFor(async () => (await health(s.base)).body.status === 'degraded', `${s.base} degraded`, OUTAGE_MS);
      const said = await health(a.base);
      expect(said.code).toBe(200);
      expect(said.body).toMatchObject({ status: 'degraded', batches: 'unreachable' });
      expect(String(said.body.reason)).toMatch(/PostgreSQL/);
      // A batch route answers a clear 503 with retry-after, never a 500.
      const read = await fetch(`${b.base}/v1/batches/${batchId}`, { headers: { authorization: `Bearer ${KEY}` } });
      expect(read.status).toBe(503);
      expect(Number(read.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await read.json()) as { detail: string }).detail).toMatch(/batch store .*PostgreSQL/i);
      // /metrics says it too.
      expect(await (await fetch(`${a.base}/metrics`)).text()).toMatch(/assay_batch_store_up 0/);

      const left = OUTAGE_MS - (Date.now() - stoppedAt);
      if (left > 0) await new Promise((r) => setTimeout(r, left)); // the outage's length is the fault itself
      await pg.resume();
      const resumedAt = Date.now();
      for (const s of servers)
        await waitFor(async () => (await health(s.base)).body.status === 'ok', 'health ok', 60_000);
      const recoveredMs = Date.now() - resumedAt;
      // Lines resume: more are written than before the outage (the count is read once it answers again).
      const before = (await getBatch(a.base, batchId, KEY)).request_counts.completed;
      await waitFor(async () => {
        const now = await getBatch(a.base, batchId, KEY);
        return now.request_counts.completed > before || now.status === 'completed';
      }, 'lines to resume');
      const resumedMs = Date.now() - resumedAt;
      const during = (await Promise.all(load.map((l) => l.stop()))).flat();

      // Interactive requests never failed while the database was away.
      expect(during.filter((s) => s.status !== 200)).toEqual([]);
      expect(during.length).toBeGreaterThan(0);
      const results = await completedOnce(a.base, batchId, lines.length, KEY, 240_000);
      expect(new Set(results.map((r) => r.custom_id))).toEqual(new Set(lines.map((l) => l.custom_id)));
      // The same processes throughout: neither exited nor restarted.
      for (const s of servers) {
        expect(s.exitCode()).toBeUndefined();
        expect(s.out().match(/"msg":"ready"/g)).toHaveLength(1);
      }
      figures('postgres-outage', {
        outage_ms: OUTAGE_MS,
        lines: lines.length,
        lines_lost: lines.length - results.length,
        lines_repeated: results.length - new Set(results.map((r) => r.custom_id)).size,
        interactive_during: during.length,
        interactive_failed: during.filter((s) => s.status !== 200).length,
        p50_idle_ms: percentile(idleSamples, 50),
        p99_idle_ms: percentile(idleSamples, 99),
        p50_fault_ms: percentile(during, 50),
        p99_fault_ms: percentile(during, 99),
        health_ok_after_ms: recoveredMs,
        lines_resumed_after_ms: resumedMs,
      });
    } finally {
      for (const s of servers) await s.stop();
    }
  }, 600_000);

  it('a replica started while PostgreSQL is away takes batches once it is back, without a restart', async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const dir = mkdtempSync(join(tmpdir(), 'assay-fault-pg-start-'));
    const env = { ASSAY_API_KEYS: KEY, ASSAY_RATE_RPM: UNLIMITED_RPM, ASSAY_BATCH_QUEUE_URL: pg.url };
    const lines = batchLines(30, 10, 'start');
    await pg.halt();
    let halted = true;
    let s: ServeProcess | undefined;
    try {
      s = await startServe(tinyRegistryFile(dir, modelDir), ['--data-dir', join(dir, 'c'), '--replica-id', 'c'], env);
      // Away: the store's fault, with retry-after (not "batches are off" for the life of the process).
      const away = await submit(s.base, jsonl(lines), {}, KEY);
      const said = (await away.json()) as { detail: string };
      expect(away.status, said.detail).toBe(503);
      expect(said.detail).toMatch(/^The batch store cannot be reached now/);
      expect(Number(away.headers.get('retry-after'))).toBeGreaterThan(0);
      await waitFor(async () => (await health(s!.base)).body.batches === 'unreachable', '/healthz unreachable');

      await pg.resume();
      halted = false;
      let accepted: Response | undefined;
      await waitFor(
        async () => (accepted = await submit(s!.base, jsonl(lines), {}, KEY)).status === 200,
        'a batch accepted once PostgreSQL is back',
        60_000,
        500,
      );
      const id = ((await accepted!.json()) as { id: string }).id;
      const results = await completedOnce(s.base, id, lines.length, KEY);
      expect(new Set(results.map((r) => r.custom_id))).toEqual(new Set(lines.map((l) => l.custom_id)));
      expect(s.exitCode()).toBeUndefined();
    } finally {
      if (halted) await pg.resume();
      await s?.stop();
    }
  }, 300_000);
});
