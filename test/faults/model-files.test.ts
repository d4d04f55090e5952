// Fault: a model's folder changes under the server: its graph truncated, a file deleted, a file
// replaced by other bytes, while the model is loaded and at its next load. The other models keep
// answering; the loaded model keeps answering from what it loaded; its next load fails and every
// request for it gets a 503 naming the file (never a 500, never a half-loaded model's answer); once
// the files are fixed, `assay reload` (POST /admin/registry/reload) or SIGHUP brings it back at once.
import { copyFileSync, cpSync, mkdtempSync, rmSync, truncateSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { mixedRequest } from '../api/helpers.js';
import { startServe, type ServeProcess } from '../serve-process.js';
import { figures, interactiveLoad, percentile, waitFor, UNLIMITED_RPM } from './helpers.js';

const KEY = 'fault-files-key';
const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' };

async function ask(base: string, model: string): Promise<{ status: number; detail?: string; retryAfterMs?: number }> {
  const res = await fetch(`${base}/v1/systemone`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ ...mixedRequest(), model }),
  });
  const body = (await res.json()) as { detail?: string };
  const ms = res.headers.get('retry-after-ms');
  return { status: res.status, detail: body.detail, ...(ms ? { retryAfterMs: Number(ms) } : {}) };
}

async function admin(base: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${base}${path}`, { method: 'POST', headers, body: JSON.stringify(body ?? {}) });
}

/** What clients were told, by fault (the figures show them). */
const told: string[] = [];

/** The model fails to load, naming `file`, on each of `attempts` loads in a row (its backoff grows with them). */
async function failsNaming(s: ServeProcess, model: string, file: string, attempts: number): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    const r = await ask(s.base, model);
    expect(r.status, JSON.stringify(r)).toBe(503);
    expect(r.detail).toContain(file);
    expect(r.retryAfterMs).toBeGreaterThan(0);
    if (i === 0) told.push(r.detail!);
    // Waiting out the backoff the 503 names, the next request tries the load again.
    if (i < attempts - 1) await new Promise((ok) => setTimeout(ok, r.retryAfterMs));
  }
}

describe('fault: a model folder changes under the server', () => {
  it('keeps the other models answering, names the broken file in a 503, and comes back on reload or SIGHUP', async () => {
    const source = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const dir = mkdtempSync(join(tmpdir(), 'assay-fault-files-'));
    const folder = join(dir, 'm-b');
    cpSync(source, folder, { recursive: true });
    const graph = join(folder, 'onnx', 'model.onnx');
    const tokenizer = join(folder, 'tokenizer.json');
    const registry = join(dir, 'registry.json');
    writeFileSync(
      registry,
      JSON.stringify({
        default: 'svc-1.13.0',
        models: {
          'svc-1.13.0': { path: source, description: 'tiny', release_date: '2026-11-22' },
          'm-b': { path: folder, description: 'tiny, a copy that is broken and fixed', release_date: '2026-11-22' },
        },
        aliases: { 'svc-latest': 'svc-1.13.0' },
      }),
    );
    const s = await startServe(registry, [], { ASSAY_API_KEYS: KEY, ASSAY_RATE_RPM: UNLIMITED_RPM });
    // The default model's latency idle first (after a warm-up), for the figures.
    await interactiveLoad(s.base, KEY, 1).stop();
    const idle = interactiveLoad(s.base, KEY, 1);
    await waitFor(() => idle.samples.length >= 100, '100 idle requests', 120_000);
    const idleSamples = await idle.stop();
    const load = interactiveLoad(s.base, KEY, 1);
    const fixes: Record<string, number> = {};
    try {
      expect((await ask(s.base, 'm-b')).status).toBe(200);

      // 1. The graph truncated while the model is loaded: what it loaded still answers.
      const saved = join(dir, 'model.onnx.good');
      copyFileSync(graph, saved);
      truncateSync(graph, Math.floor(statSync(graph).size / 2));
      expect((await ask(s.base, 'm-b')).status).toBe(200);
      // Its next load fails, naming the file; three failed loads in a row (its backoff grows).
      expect((await admin(s.base, '/admin/models/unload', { model: 'm-b' })).status).toBe(200);
      await failsNaming(s, 'm-b', graph, 3);
      // Fixed, then `assay reload`: back at once, not after the backoff.
      copyFileSync(saved, graph);
      let fixedAt = Date.now();
      expect((await admin(s.base, '/admin/registry/reload')).status).toBe(200);
      expect(await ask(s.base, 'm-b')).toMatchObject({ status: 200 });
      fixes.truncated_graph_ms = Date.now() - fixedAt;

      // 2. A file deleted: the tokenizer.
      const savedTokenizer = join(dir, 'tokenizer.json.good');
      copyFileSync(tokenizer, savedTokenizer);
      rmSync(tokenizer);
      expect((await admin(s.base, '/admin/models/unload', { model: 'm-b' })).status).toBe(200);
      await failsNaming(s, 'm-b', tokenizer, 2);
      copyFileSync(savedTokenizer, tokenizer);
      fixedAt = Date.now();
      process.kill(s.pid, 'SIGHUP');
      await waitFor(async () => (await ask(s.base, 'm-b')).status === 200, 'm-b back after SIGHUP', 30_000);
      fixes.deleted_tokenizer_ms = Date.now() - fixedAt;

      // 3. The graph replaced by other bytes while loaded (cp over it), then loaded again.
      writeFileSync(graph, '{"not": "an onnx graph"}\n');
      expect((await ask(s.base, 'm-b')).status).toBe(200);
      expect((await admin(s.base, '/admin/models/unload', { model: 'm-b' })).status).toBe(200);
      await failsNaming(s, 'm-b', graph, 2);
      // No half-loaded model: the operator view does not list it as ready.
      const view = (await (await fetch(`${s.base}/admin/models`, { headers })).json()) as {
        models: Array<{ model: string; state: string }>;
      };
      expect(view.models.find((m) => m.model === 'm-b')).toBeUndefined();
      copyFileSync(saved, graph);
      fixedAt = Date.now();
      expect((await admin(s.base, '/admin/registry/reload')).status).toBe(200);
      expect(await ask(s.base, 'm-b')).toMatchObject({ status: 200 });
      fixes.replaced_graph_ms = Date.now() - fixedAt;

      // The default model answered throughout, and the process never restarted.
      const samples = await load.stop();
      expect(samples.filter((x) => x.status !== 200)).toEqual([]);
      expect(samples.length).toBeGreaterThan(0);
      expect(s.exitCode()).toBeUndefined();
      figures('model-files', {
        other_model_requests: samples.length,
        other_model_failed: samples.filter((x) => x.status !== 200).length,
        other_model_p50_idle_ms: percentile(idleSamples, 50),
        other_model_p99_idle_ms: percentile(idleSamples, 99),
        other_model_p50_ms: percentile(samples, 50),
        other_model_p99_ms: percentile(samples, 99),
        back_after_fix_ms: fixes,
        told,
      });
    } finally {
      await load.stop();
      await s.stop();
    }
  }, 300_000);
});
