// Residency through the real `assay serve` process (bin/assay.js over dist/): four registered
// models (the tiny synthetic folder under four versioned ids, each its own evaluator) and room for
// the default plus two, concurrent clients on real sockets, the operator endpoint and `assay ps`
// watching the resident set move as predicted, a long request never losing its model, and the
// registry reloaded under load (`assay reload` and SIGHUP) without a failed request.
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { startServe, type ServeProcess } from '../serve-process.js';
import { buildServer } from '../../src/api/server.js';
import { keysFromList } from '../../src/api/auth.js';
import { createModelPool } from '../../src/service/model-pool.js';
import { checkRegistry } from '../../src/registry/registry.js';
import { mixedRequest } from './helpers.js';

const OPERATOR = 'op-key-1';
const CALLER = 'caller-key-2';
let dir: string;
let modelDir: string;
let registryFile: string;
let s: ServeProcess;

function writeRegistry(ids: string[], extra: object = {}): void {
  const entry = { path: modelDir, variant: 'fp32', description: 'tiny', release_date: '2026-11-22' };
  writeFileSync(
    registryFile,
    JSON.stringify({
      default: ids[0],
      models: Object.fromEntries(ids.map((id) => [id, entry])),
      aliases: {},
      ...extra,
    }),
  );
}

/** Runs bin/assay.js with the operator key; its exit status, stdout and stderr. */
async function assay(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return promisify(execFile)(process.execPath, ['bin/assay.js', ...args], {
    env: { ...process.env, ASSAY_API_KEY: OPERATOR },
    timeout: 120_000,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, stdout: e.stdout, stderr: e.stderr }),
  );
}

const headers = (key: string) => ({ authorization: `Bearer ${key}`, 'content-type': 'application/json' });

async function ask(model: string, questions = mixedRequest().questions) {
  const res = await fetch(`${s.base}/v1/systemone`, {
    method: 'POST',
    headers: headers(CALLER),
    body: JSON.stringify({ ...mixedRequest(), model, questions }),
  });
  const body = (await res.json()) as { model?: string; answers?: object; detail?: unknown };
  return { status: res.status, body, retryAfter: res.headers.get('retry-after') };
}

async function residentIds(): Promise<string[]> {
  const res = await fetch(`${s.base}/admin/models`, { headers: headers(OPERATOR) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { models: Array<{ model: string }> }).models.map((m) => m.model).sort();
}

/** The names `assay ps` lists, one line per resident model (its table's first column). */
async function psNames(): Promise<string[]> {
  const ps = await assay('ps', '--url', s.base);
  expect(ps.code).toBe(0);
  const lines = ps.stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^NAME\s+FAMILY\s+SIZE\s+LAST USED\s+UNTIL\s+IN FLIGHT\s+LOAD$/);
  // Each resident model says its family (these are all decoders; "-" while one loads).
  return lines
    .slice(1)
    .filter((l) => /^\S+\s+(decoder|-)\s+[\d.]+ [MG]iB\s/.test(l))
    .map((l) => l.split(/\s+/)[0]!)
    .sort();
}

beforeAll(async () => {
  modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  dir = mkdtempSync(join(tmpdir(), 'assay-residency-'));
  registryFile = join(dir, 'registry.json');
  writeRegistry(['svc-a', 'm-b', 'm-c', 'm-d']);
  // The default stays; the three others share the two places left.
  s = await startServe(registryFile, ['--max-loaded-models', '3', '--keep-alive=-1', '--deadline-ms', '90000'], {
    ASSAY_API_KEYS: `${OPERATOR},${CALLER}`,
  });
});

afterAll(async () => {
  expect(await s?.stop()).toBe(0);
});

describe('residency in assay serve', () => {
  it('the operator view needs the operator key (the first of ASSAY_API_KEYS), never a caller key; at startup only the default is resident', async () => {
    expect((await fetch(`${s.base}/admin/models`)).status).toBe(401);
    const caller = await fetch(`${s.base}/admin/models`, { headers: headers(CALLER) });
    expect(caller.status).toBe(403);
    expect(await caller.json()).toEqual({ detail: 'This endpoint needs an operator key' });
    const view = (await (await fetch(`${s.base}/admin/models`, { headers: headers(OPERATOR) })).json()) as Record<
      string,
      unknown
    >;
    expect(view).toMatchObject({ max_loaded_models: 3, keep_alive_ms: -1 });
    expect(await residentIds()).toEqual(['svc-a']);
    expect(await psNames()).toEqual(['svc-a']);
    // A caller's key cannot steer residency either.
    const unload = await fetch(`${s.base}/admin/models/unload`, {
      method: 'POST',
      headers: headers(CALLER),
      body: JSON.stringify({ model: 'svc-a' }),
    });
    expect(unload.status).toBe(403);
  });

  it('a mixed workload from several clients completes (200, or a documented 503 under a full budget); the resident set then moves as LRU predicts', async () => {
    const order = ['m-b', 'm-c', 'svc-a', 'm-d', 'm-c', 'm-b', 'm-d', 'svc-a', 'm-b', 'm-d'];
    const results = await Promise.all(
      [0, 1, 2, 3].map(async (client) => {
        const out: Array<{ status: number; model?: string; detail?: unknown; retryAfter: string | null }> = [];
        for (let i = 0; i < order.length; i++) {
          const model = order[(i + client * 3) % order.length]!;
          const r = await ask(model);
          out.push({ status: r.status, model: r.body.model, detail: r.body.detail, retryAfter: r.retryAfter });
          if (r.status === 200) expect(r.body.model).toBe(model);
        }
        return out;
      }),
    );
    const all = results.flat();
    for (const r of all.filter((x) => x.status !== 200)) {
      // The only refusal allowed: no room within the deadline, with a reason and a retry-after.
      expect(r.status).toBe(503);
      expect(String(r.detail)).toMatch(/cannot be loaded now: .* and each has requests in flight/);
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    expect(all.filter((x) => x.status === 200).length).toBeGreaterThan(all.length / 2);

    // Then one by one: m-b, m-c, m-d. Loading m-d must unload m-b, the least recently used idle one.
    for (const m of ['m-b', 'm-c']) expect((await ask(m)).status).toBe(200);
    expect(await residentIds()).toEqual(['m-b', 'm-c', 'svc-a']);
    expect((await ask('m-d')).status).toBe(200);
    expect(await residentIds()).toEqual(['m-c', 'm-d', 'svc-a']);
    expect(await psNames()).toEqual(['m-c', 'm-d', 'svc-a']);
    expect((await ask('m-c')).status).toBe(200);
    expect((await ask('m-b')).status).toBe(200); // m-d is now the least recently used
    expect(await psNames()).toEqual(['m-b', 'm-c', 'svc-a']);

    const metrics = await (await fetch(`${s.base}/metrics`)).text();
    expect(metrics).toMatch(/^assay_model_resident_bytes\{model="m-b"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^assay_model_unloads_total\{model="m-d",cause="evicted"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^assay_model_loads_total\{model="m-b"\} [1-9]\d*$/m);
    expect(metrics).toMatch(/^assay_model_load_seconds_total\{model="m-b"\} [\d.e-]+$/m);
    expect(metrics).toMatch(/^assay_max_loaded_models 3$/m);
  });

  it('never unloads a model under a request: a long request on m-b while m-c and m-d are asked for again and again', async () => {
    const questions = Object.fromEntries(
      Array.from({ length: 200 }, (_, i) => [
        `q${i}`,
        { type: 'choice', instructions: `Aspect ${i}?`, criteria: { yes: null, no: null, unclear: 'not said' } },
      ]),
    );
    let longDone = false;
    const long = ask('m-b', questions as never).finally(() => (longDone = true));
    const seen: string[][] = [];
    let churned = 0;
    while (!longDone || churned < 4) {
      const r = await ask(churned % 2 === 0 ? 'm-c' : 'm-d');
      expect(r.status).toBe(200);
      churned++;
      if (!longDone) seen.push(await residentIds());
    }
    const answer = await long;
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body.answers!)).toHaveLength(200);
    // Whenever it was looked at during the long request, m-b was resident.
    for (const ids of seen) expect(ids).toContain('m-b');
  });

  it('loads and unloads by hand through the operator key: assay unload, assay load', async () => {
    const unload = await assay('unload', 'm-c', '--url', s.base);
    expect(unload.code).toBe(0);
    expect(JSON.parse(unload.stdout)).toEqual({ status: 'unloaded', model: 'm-c' });
    expect(await psNames()).not.toContain('m-c');
    const load = await assay('load', 'm-c', '--url', s.base);
    expect(load.code).toBe(0);
    expect(JSON.parse(load.stdout)).toMatchObject({ status: 'loaded', model: { model: 'm-c', state: 'ready' } });
    expect(await psNames()).toContain('m-c');
    const unknown = await assay('load', 'no-such-model', '--url', s.base);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^assay load: 422: .*Input should be a model with a folder of its own/);
  });

  it('a registry reload under load adds a model and removes another without a failed request; a bad file is refused and nothing changes', async () => {
    let stop = false;
    const statuses: number[] = [];
    const load = Promise.all(
      ['svc-a', 'm-b', 'm-c'].map(async (model) => {
        while (!stop) statuses.push((await ask(model)).status);
      }),
    );
    try {
      // assay reload: m-e added, m-d removed.
      writeRegistry(['svc-a', 'm-b', 'm-c', 'm-e']);
      const reload = await assay('reload', '--url', s.base);
      expect(reload.code).toBe(0);
      expect(JSON.parse(reload.stdout)).toMatchObject({
        status: 'reloaded',
        added: ['m-e'],
        removed: ['m-d'],
        changed: [],
      });
      expect((await ask('m-e')).status).toBe(200);
      const gone = await ask('m-d');
      expect(gone.status).toBe(422);
      expect(JSON.stringify(gone.body.detail)).toContain("'m-e'");

      // A bad file: refused naming the file, the path and what was expected; the set stays.
      writeFileSync(registryFile, JSON.stringify({ default: 'svc-a', models: { 'svc-a': { path: 7 } }, aliases: {} }));
      const bad = await assay('reload', '--url', s.base);
      expect(bad.code).toBe(1);
      expect(bad.stderr).toContain(
        `assay reload: 422: Registry not reloaded (the models stay as they were): model registry ${registryFile}: models["svc-a"].path: Invalid input: expected string`,
      );
      expect((await ask('m-e')).status).toBe(200);

      // SIGHUP: m-f added, m-e removed.
      writeRegistry(['svc-a', 'm-b', 'm-c', 'm-f']);
      process.kill(s.pid, 'SIGHUP');
      for (let i = 0; !s.out().includes('"added":["m-f"]'); i++) {
        expect(i).toBeLessThan(600);
        await new Promise((r) => setTimeout(r, 50));
      }
      expect((await ask('m-f')).status).toBe(200);
      expect((await ask('m-e')).status).toBe(422);
    } finally {
      stop = true;
      await load;
    }
    expect(statuses.length).toBeGreaterThan(3);
    expect(statuses.filter((x) => x !== 200)).toEqual([]);
  });
});

describe('residency over HTTP, server in-process', () => {
  it('no room within the deadline: 503 with jittered retry-after and the reason; the playground marks warm models', async () => {
    const reg = checkRegistry(
      {
        default: 'svc-a',
        models: Object.fromEntries(
          ['svc-a', 'm-b', 'm-c'].map((id) => [
            id,
            { path: modelDir, description: 'tiny', release_date: '2026-11-22' },
          ]),
        ),
        aliases: { 'svc-latest': 'svc-a', 'b-latest': 'm-b', 'c-latest': 'm-c' },
      },
      join(dir, 'inproc-registry.json'),
    );
    const pool = createModelPool(reg, { threads: 1 }, { info: () => {}, warn: () => {} }, Date.now, {
      maxLoadedModels: 2,
    });
    await pool.preload();
    const app = await buildServer({
      registry: reg,
      models: pool,
      keys: keysFromList(CALLER),
      logging: false,
      deadlineMs: 1500,
    });
    try {
      const held = await pool.acquire('m-b'); // the one place left, in use
      const res = await app.inject({
        method: 'POST',
        url: '/v1/systemone',
        headers: headers(CALLER),
        payload: JSON.stringify({ ...mixedRequest(), model: 'm-c' }),
      });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toEqual({
        detail:
          'Model m-c cannot be loaded now: 2 of 2 models are resident (--max-loaded-models) and each has requests in flight; retry later',
      });
      expect(Number(res.headers['retry-after-ms'])).toBeGreaterThanOrEqual(2000);
      expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(2);
      const warm = await app.inject({ method: 'GET', url: '/playground/models', headers: headers(CALLER) });
      const listed = (warm.json() as { models: Array<{ name: string; warm: boolean }> }).models;
      expect(Object.fromEntries(listed.map((m) => [m.name, m.warm]))).toEqual({
        'svc-latest': true,
        'b-latest': true,
        'c-latest': false,
      });
      held.release();
    } finally {
      await app.close();
      await pool.close();
    }
  });
});
