// Fault: SIGTERM (a deploy, `docker stop`, a scale-down) while a batch drains and interactive
// requests are in flight. The requests in flight finish (200), the batch stops at a line boundary
// (every line done with its result or pending again, none left leased), the process exits 0 within
// its drain deadline (--deadline-ms + 10 s), and a restart on the same data directory finishes the
// batch with every custom_id in its results exactly once.
import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { mixedRequest } from '../api/helpers.js';
import { startServe, tinyRegistryFile } from '../serve-process.js';
import { completedOnce, getBatch, jsonl, submit } from '../batches/helpers.js';
import { batchLines, figures, waitFor, UNLIMITED_RPM } from './helpers.js';

const KEY = 'fault-term-key';
/** The drain deadline under test: --deadline-ms, plus the 10 s the server adds before it cuts connections. */
const DEADLINE_MS = 20_000;

/** A request that keeps the engine busy a while: 24 questions about one long state. */
function heavyRequest(i: number) {
  const base = mixedRequest(`Ticket ${i}: ${'the parcel was late and the box was damaged; '.repeat(40)}`);
  const questions = Object.fromEntries(
    Array.from({ length: 24 }, (_, q) => [
      `q${q}`,
      { ...base.questions.paid, instructions: `Question ${q}: was it paid?` },
    ]),
  );
  return { ...base, questions };
}

async function inFlight(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  return Number(/assay_http_requests_in_flight\{route="\/v1\/systemone"\} (\d+)/.exec(text)?.[1] ?? 0);
}

describe('fault: SIGTERM during a batch and interactive load', () => {
  it('finishes in-flight requests, stops the batch at a line boundary, exits in time, resumes on restart', async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const dir = mkdtempSync(join(tmpdir(), 'assay-fault-term-'));
    const registry = tinyRegistryFile(dir, modelDir);
    const dataDir = join(dir, 'data');
    const flags = ['--data-dir', dataDir, '--deadline-ms', String(DEADLINE_MS)];
    const env = { ASSAY_API_KEYS: KEY, ASSAY_RATE_RPM: UNLIMITED_RPM };
    const lines = batchLines(1000, 10, 'term');

    const first = await startServe(registry, flags, env);
    const res = await submit(first.base, jsonl(lines), {}, KEY);
    expect(res.status).toBe(200);
    const batchId = ((await res.json()) as { id: string }).id;
    await waitFor(async () => (await getBatch(first.base, batchId, KEY)).request_counts.completed >= 100, '100 lines');

    // Three heavy interactive requests in flight (the server counts them), then SIGTERM.
    const requests = Array.from({ length: 3 }, (_, i) =>
      fetch(`${first.base}/v1/systemone`, {
        method: 'POST',
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify(heavyRequest(i)),
      }).then(
        async (r) => ({ status: r.status, body: await r.text() }),
        (e: unknown) => ({ status: 0, body: String((e as Error).cause ?? e) }),
      ),
    );
    await waitFor(async () => (await inFlight(first.base)) >= 3, 'three requests in flight');
    const termAt = Date.now();
    process.kill(first.pid, 'SIGTERM');
    const code = await first.exited;
    const exitMs = Date.now() - termAt;

    // The requests in flight were answered, not cut.
    for (const r of await Promise.all(requests)) expect(r.status, r.body).toBe(200);
    expect(code).toBe(0);
    expect(exitMs).toBeLessThan(DEADLINE_MS + 10_000);
    expect(first.out()).toMatch(/shutdown complete/);

    // A line boundary: every line is done with its one result, or pending again (none held by a lease).
    const db = new Database(join(dataDir, 'batches.sqlite'), { readonly: true });
    const states = db.prepare('SELECT state, COUNT(*) AS n FROM items GROUP BY state').all() as Array<{
      state: string;
      n: number;
    }>;
    const done = db.prepare(`SELECT COUNT(*) AS n FROM items WHERE state = 'done'`).get() as { n: number };
    const written = db.prepare('SELECT COUNT(*) AS n FROM results').get() as { n: number };
    db.close();
    expect(states.map((s) => s.state).sort()).toEqual(['done', 'pending']);
    expect(written.n).toBe(done.n);

    const second = await startServe(registry, flags, env);
    try {
      const results = await completedOnce(second.base, batchId, lines.length, KEY);
      expect(new Set(results.map((r) => r.custom_id))).toEqual(new Set(lines.map((l) => l.custom_id)));
      figures('sigterm', {
        lines: lines.length,
        lines_lost: lines.length - results.length,
        lines_repeated: results.length - new Set(results.map((r) => r.custom_id)).size,
        in_flight_finished: requests.length,
        exit_ms: exitMs,
        drain_deadline_ms: DEADLINE_MS + 10_000,
        lines_done_at_exit: done.n,
      });
    } finally {
      await second.stop();
    }
  }, 300_000);
});
