// assay batch against a real server on a real socket (the tiny model): a batch of 50 lines over
// five states completes through the command, its results file has each custom_id once and equals
// what the API serves; a run stopped after its first page (and a page appended but never recorded,
// as a crash leaves it) resumes without a line lost or written twice; a failed batch exits 1 with
// its reason; --local runs the same flow on a server in the process.
import { appendFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/commands/batch.js';
import { run as evalCmd } from '../../src/commands/eval.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { KEY, MODEL_ID, mixedRequest, withEvaluate } from '../api/helpers.js';
import { jsonl, readResults, startBatchServer, type ResultLine } from '../batches/helpers.js';

const STATES = [
  'The invoice was paid on time by the customer.',
  { ticket: 4411, text: 'Customer says the parcel arrived broken; wants a refund.' },
  ['first note', 'second note about a late delivery'],
  'Paid in cash at the counter, two days late.',
  { order: 'A-17', note: 'transfer received early' },
];

/** 50 lines: ten per state, each one of the three question types (`tag` keeps inputs apart). */
function input(tag: string, extra: unknown[] = []): string {
  const lines: unknown[] = [];
  const ids = ['paid', 'channel', 'punctuality'] as const;
  STATES.forEach((state, s) => {
    const all = mixedRequest(state);
    for (let k = 0; k < 10; k++) {
      const id = ids[k % 3]!;
      lines.push({ custom_id: `${tag}-s${s}-${k}`, body: { ...all, questions: { [id]: all.questions[id] } } });
    }
  });
  return jsonl([...lines, ...extra]);
}

function capture() {
  let err = '';
  let out = '';
  const stream = (add: (t: string) => void) =>
    new Writable({
      write(chunk, _e, cb) {
        add(String(chunk));
        cb();
      },
    });
  return {
    io: { stdout: stream((t) => (out += t)), stderr: stream((t) => (err += t)), env: {} },
    err: () => err,
    out: () => out,
  };
}

function resultsOf(file: string): ResultLine[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ResultLine);
}

function expectEachOnce(results: ResultLine[], tag: string, n = 50): void {
  const ids = results.map((r) => r.custom_id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(ids.filter((i) => i?.startsWith(`${tag}-`))).toHaveLength(n);
}

function close(a: unknown, b: unknown, tol: number): void {
  if (typeof a === 'number' && typeof b === 'number') {
    if (Number.isNaN(a) || Number.isNaN(b)) return expect(Number.isNaN(a)).toBe(Number.isNaN(b));
    return expect(Math.abs(a - b)).toBeLessThanOrEqual(tol);
  }
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    expect(Object.keys(a)).toEqual(Object.keys(b));
    for (const k of Object.keys(a)) close((a as never)[k], (b as never)[k], tol);
    return;
  }
  expect(a).toEqual(b);
}

const byId = (a: ResultLine, b: ResultLine) => String(a.custom_id).localeCompare(String(b.custom_id));

describe('assay batch', () => {
  let s: Awaited<ReturnType<typeof startBatchServer>>;
  let dir: string;
  beforeAll(async () => {
    s = await startBatchServer();
    dir = mkdtempSync(join(tmpdir(), 'assay-batch-cli-'));
  });
  afterAll(async () => s?.close());

  const flags = () => ['--url', s.base, '--key', KEY, '--page-size', '7', '--poll', '20'];

  it('completes a batch: exit 0, each custom_id once, the results the API serves', async () => {
    const file = join(dir, 'plain.jsonl');
    writeFileSync(file, input('plain'));
    const c = capture();
    expect(await run([file, ...flags()], c.io)).toBe(0);
    const id = /batch (batch_\S+|\S+) completed/.exec(c.err())?.[1];
    expect(id, c.err()).toBeDefined();
    const written = resultsOf(`${file}.results.jsonl`);
    expectEachOnce(written, 'plain');
    expect(written.every((r) => r.response?.status_code === 200)).toBe(true);
    const served = await readResults(s.base, id!, 1000);
    expect([...written].sort(byId)).toEqual([...served.lines].sort(byId));
    expect(c.err()).toMatch(/50 completed, 0 failed.*; 50 result lines written/);
    expect(existsSync(`${file}.results.jsonl.batch.json`)).toBe(false);
  });

  it('resumes after a stop and after a page appended but never recorded: no line lost or written twice', async () => {
    const file = join(dir, 'resume.jsonl');
    const out = join(dir, 'resume.out.jsonl');
    writeFileSync(file, input('resume'));
    const stop = new AbortController();
    const c1 = capture();
    const code = await run([file, ...flags(), '--out', out], c1.io, {
      signal: stop.signal,
      onPage: (n) => n > 0 && stop.abort(),
    });
    expect(code, c1.err()).toBe(130);
    expect(c1.err()).toContain('run the same command again to resume');
    const state = JSON.parse(readFileSync(`${out}.batch.json`, 'utf8')) as { bytes: number; batchId: string };
    const firstRun = resultsOf(out);
    expect(firstRun.length).toBeGreaterThan(0);
    expect(firstRun.length).toBeLessThan(50);
    expect(state.bytes).toBe(readFileSync(out).length);
    // A crash between appending a page and recording it leaves lines the state does not count.
    appendFileSync(out, `${JSON.stringify(firstRun[0])}\n{"custom_id": "torn`);

    const c2 = capture();
    expect(await run([file, ...flags(), '--out', out], c2.io), c2.err()).toBe(0);
    expect(c2.err()).toContain(`resuming batch ${state.batchId}`);
    const all = resultsOf(out);
    expectEachOnce(all, 'resume');
    expect(all).toHaveLength(50);
    expect(all.slice(0, firstRun.length)).toEqual(firstRun);
  });

  it('--cancel on a second run cancels the batch the first left, writes its results and exits 1', async () => {
    // Each pass of the real engine held 400 ms, so the batch is still running when it is cancelled.
    const slow = await startBatchServer(
      {},
      {
        wrap: (e) =>
          withEvaluate(e, async (req, o, real) => {
            await new Promise((r) => setTimeout(r, 400));
            return real.evaluate(req, o);
          }),
      },
    );
    try {
      const file = join(dir, 'cancel.jsonl');
      writeFileSync(file, input('cancel'));
      const args = [file, '--url', slow.base, '--key', KEY, '--page-size', '3', '--poll', '20'];
      const stop = new AbortController();
      const c1 = capture();
      expect(await run(args, c1.io, { signal: stop.signal, onPage: (n) => n > 0 && stop.abort() })).toBe(130);
      const c2 = capture();
      expect(await run([...args, '--cancel'], c2.io), c2.err()).toBe(1);
      expect(c2.err()).toMatch(/the batch ended cancelled, not completed/);
      const all = resultsOf(`${file}.results.jsonl`);
      expectEachOnce(all, 'cancel');
      expect(all.some((r) => r.error !== undefined)).toBe(true);
    } finally {
      await slow.close();
    }
  });

  it('a failed batch (a custom_id twice) exits 1 with the reason', async () => {
    const file = join(dir, 'dup.jsonl');
    writeFileSync(file, input('dup', [{ custom_id: 'dup-s0-0', body: mixedRequest('again') }]));
    const c = capture();
    expect(await run([file, ...flags()], c.io)).toBe(1);
    expect(c.err()).toMatch(/the batch ended failed, not completed:\n\s+duplicate_custom_id: /);
  });

  it('refuses bad arguments with exit 2', async () => {
    const c = capture();
    expect(await run([join(dir, 'missing.jsonl'), ...flags()], c.io)).toBe(2);
    expect(c.err()).toContain('cannot read');
    expect(await run([join(dir, 'plain.jsonl'), '--local', '--url', s.base], c.io)).toBe(2);
  });

  it('assay eval --dataset --url --batch: the same report as request by request', async () => {
    const report = async (extra: string[]) => {
      const out = mkdtempSync(join(tmpdir(), 'assay-batch-eval-'));
      const c = capture();
      const args = ['--dataset', 'examples/support-tickets.jsonl', '--url', s.base, '--out', out, ...extra];
      const code = await evalCmd(args, { ...c.io, env: { ASSAY_API_KEY: KEY } });
      expect(code, c.err()).toBe(0);
      if (extra.includes('--batch')) expect(c.err()).toMatch(/32\/32 lines \S+ batch/);
      return JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as {
        lines: number;
        metrics: Record<string, unknown>;
        usage: { input_tokens: number };
      };
    };
    const batched = await report(['--batch']);
    const alone = await report([]);
    expect(batched.lines).toBe(32);
    expect(batched.usage).toEqual(alone.usage);
    // Every metric of every type and tag, to 1e-6 (the batch merges the lines that share a state).
    close(batched.metrics, alone.metrics, 1e-6);
  });

  it('--local: the server in the process, on the tiny model', async () => {
    const model = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const registry = join(dir, 'registry.json');
    writeFileSync(
      registry,
      JSON.stringify({
        default: MODEL_ID,
        models: { [MODEL_ID]: { path: model, description: 'tiny synthetic', release_date: '2026-11-22' } },
        aliases: { 'svc-latest': MODEL_ID },
      }),
    );
    const file = join(dir, 'local.jsonl');
    writeFileSync(file, input('local'));
    const c = capture();
    const code = await run([file, '--local', '--registry', registry, '--data-dir', join(dir, 'data')], c.io);
    expect(code, c.err()).toBe(0);
    const written = resultsOf(`${file}.results.jsonl`);
    expectEachOnce(written, 'local');
    expect(written.every((r) => r.response?.status_code === 200)).toBe(true);
  });
});
