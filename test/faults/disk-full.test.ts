// Fault: the data directory's disk fills up in the middle of a batch (a small tmpfs under the
// test's control, filled to its last byte). A new batch gets a clear 507 naming the cause, with
// retry-after; the batch already accepted keeps every line; results already written stay readable;
// /healthz says degraded and why; interactive requests keep answering. Once space is freed, the
// same process writes again: the batch finishes with every custom_id once, new batches are
// accepted, and the SQLite file passes PRAGMA integrity_check.
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { mountTmpfs, tmpfsMissing } from '../helpers/tmpfs.js';
import { startServe, tinyRegistryFile } from '../serve-process.js';
import { completedOnce, getBatch, jsonl, submit } from '../batches/helpers.js';
import { batchLines, figures, health, interactiveLoad, percentile, waitFor, UNLIMITED_RPM } from './helpers.js';

const KEY = 'fault-disk-key';
/** How long the disk stays full: the fault's length (interactive requests are measured meanwhile). */
const FULL_MS = 10_000;

/** The first page of a batch's results (one page: readResults would follow the pages to the batch's end). */
async function firstPage(base: string, id: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${base}/v1/batches/${id}/results?limit=50`, { headers: { authorization: `Bearer ${KEY}` } });
  return { status: res.status, text: await res.text() };
}
const missing = tmpfsMissing();
if (missing) console.log(`disk-full fault skipped: ${missing}`);

describe.skipIf(missing)('fault: the data directory disk fills up mid-batch', () => {
  it('refuses new batches with 507, keeps every accepted line, stays readable and intact, resumes once space is freed', async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const dir = mkdtempSync(join(tmpdir(), 'assay-fault-disk-'));
    const registry = tinyRegistryFile(dir, modelDir);
    const disk = mountTmpfs(16 * 1024 * 1024);
    const lines = batchLines(1500, 10, 'disk');
    const server = await startServe(registry, ['--data-dir', disk.dir], {
      ASSAY_API_KEYS: KEY,
      ASSAY_RATE_RPM: UNLIMITED_RPM,
    });
    try {
      await interactiveLoad(server.base, KEY, 1).stop(); // warm-up
      const idle = interactiveLoad(server.base, KEY, 1);
      await waitFor(() => idle.samples.length >= 100, '100 idle requests', 120_000);
      const idleSamples = await idle.stop();

      const res = await submit(server.base, jsonl(lines), {}, KEY);
      expect(res.status).toBe(200);
      const batchId = ((await res.json()) as { id: string }).id;
      await waitFor(
        async () => (await getBatch(server.base, batchId, KEY)).request_counts.completed >= 100,
        '100 lines',
      );
      const early = await firstPage(server.base, batchId);
      expect(early.text.split('\n').filter(Boolean)).toHaveLength(50);

      const load = interactiveLoad(server.base, KEY, 1);
      const filler = disk.fill();
      const fullAt = Date.now();
      // A new batch: 507 naming the cause, with retry-after; never a bare 500.
      const refused = await submit(server.base, jsonl(batchLines(20, 10, 'late')), {}, KEY);
      expect(refused.status).toBe(507);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      const detail = ((await refused.json()) as { detail: string }).detail;
      expect(detail).toMatch(/No space left/);
      expect(detail).toContain(disk.dir);
      // The store's next write finds the disk full: /healthz says so (200: single requests are served).
      await waitFor(async () => (await health(server.base)).body.batches === 'full', 'health to say full', 120_000);
      const said = await health(server.base);
      expect(said).toMatchObject({ code: 200, body: { status: 'degraded', batches: 'full' } });
      expect(String(said.body.reason)).toContain(disk.dir);
      expect(await (await fetch(`${server.base}/metrics`)).text()).toMatch(/assay_batch_store_fault\{fault="full"\} 1/);
      // Still ready (/readyz): a full disk refuses new batches only; reads, results and single requests go on.
      const ready = await fetch(`${server.base}/readyz`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ready', checks: { batch_store: 'full' } });

      // What is written stays readable: the batch, and the results already there.
      const during = await getBatch(server.base, batchId, KEY);
      expect(during.status).toBe('in_progress');
      expect(await firstPage(server.base, batchId)).toEqual(early);

      const left = FULL_MS - (Date.now() - fullAt);
      if (left > 0) await new Promise((r) => setTimeout(r, left)); // the fault's length, not a wait for an event
      // Space is freed: the same process goes on.
      rmSync(filler);
      const freedAt = Date.now();
      await waitFor(async () => (await health(server.base)).body.status === 'ok', 'health ok', 120_000);
      const recoveredMs = Date.now() - freedAt;
      const faultSamples = await load.stop();
      expect(faultSamples.filter((s) => s.status !== 200)).toEqual([]);

      const results = await completedOnce(server.base, batchId, lines.length, KEY);
      expect(new Set(results.map((r) => r.custom_id))).toEqual(new Set(lines.map((l) => l.custom_id)));
      const late = await submit(server.base, jsonl(batchLines(20, 10, 'late')), {}, KEY);
      expect(late.status).toBe(200);
      await completedOnce(server.base, ((await late.json()) as { id: string }).id, 20, KEY);
      expect(server.exitCode()).toBeUndefined();
      figures('disk-full', {
        disk_bytes: 16 * 1024 * 1024,
        lines: lines.length,
        lines_lost: lines.length - results.length,
        lines_repeated: results.length - new Set(results.map((r) => r.custom_id)).size,
        full_for_ms: freedAt - fullAt,
        interactive_during: faultSamples.length,
        interactive_failed: faultSamples.filter((s) => s.status !== 200).length,
        p50_idle_ms: percentile(idleSamples, 50),
        p99_idle_ms: percentile(idleSamples, 99),
        p50_fault_ms: percentile(faultSamples, 50),
        p99_fault_ms: percentile(faultSamples, 99),
        health_ok_after_ms: recoveredMs,
      });
      expect(await server.stop()).toBe(0);
      // The store is intact.
      const db = new Database(join(disk.dir, 'batches.sqlite'));
      try {
        expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      } finally {
        db.close();
      }
    } finally {
      await server.stop();
      disk.unmount();
    }
  }, 400_000);
});
