// The three clients of the batch bench, all against a running `assay serve`: a batch through
// /v1/batches (submitted, then its results read a page at a time while it runs, following
// Link rel="next"), the same lines fanned out through the official TypeScript SDK at a fixed
// concurrency, and an open-loop interactive load (requests sent on a clock, whatever the answers'
// pace) timed per request.
import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from 'node:worker_threads';
import { TypeSafeClient, type Questions } from '@typesafe-ai/sdk';
import { workerEntry } from '../../src/internal.js';
import type { BenchServer } from '../lib/server.js';
import { jsonl, type Line } from './corpus.js';

export interface Answered {
  /** Wall time from the first byte sent to the last answer read, ms. */
  ms: number;
  ok: number;
  failed: number;
  /** The bodies of the sampled lines (model, answers, usage), by custom_id. */
  sample: Map<string, unknown>;
}

export interface BatchRun extends Answered {
  id: string;
  status: string;
  /** How long POST /v1/batches took to answer (the upload, stored before it is acknowledged), ms. */
  submitMs: number;
  pages: number;
  /** custom_ids seen more than once in the results (expected 0). */
  duplicates: number;
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** A line's body as the SDK takes it (the same JSON: the wire types are the SDK's own). */
const asSdk = (body: Line['body']) => body as unknown as { state: string; questions: Questions; model: string };

/** Submits `lines` as one batch and reads every result while it runs; `onSubmitted` is told its id. */
export async function runBatch(
  server: BenchServer,
  key: string,
  lines: Line[],
  sampled: Set<string>,
  onSubmitted?: () => void,
): Promise<BatchRun> {
  const body = jsonl(lines);
  const t0 = performance.now();
  const res = await fetch(`${server.url}/v1/batches`, {
    method: 'POST',
    headers: { ...auth(key), 'content-type': 'application/jsonl' },
    body,
  });
  if (res.status !== 200) throw new Error(`POST /v1/batches: HTTP ${res.status}: ${await res.text()}`);
  const submitMs = performance.now() - t0;
  const { id } = (await res.json()) as { id: string };
  onSubmitted?.();
  const seen = new Set<string>();
  const sample = new Map<string, unknown>();
  let ok = 0;
  let failed = 0;
  let duplicates = 0;
  const pages = await followResults(server.url, key, id, (text) => {
    for (const l of text.split('\n')) {
      if (!l) continue;
      const r = JSON.parse(l) as { custom_id: string; response?: { status_code: number; body: unknown } };
      if (seen.has(r.custom_id)) duplicates++;
      seen.add(r.custom_id);
      if (r.response?.status_code === 200) ok++;
      else failed++;
      if (sampled.has(r.custom_id) && r.response) sample.set(r.custom_id, r.response.body);
    }
  });
  const ms = performance.now() - t0;
  const batch = (await (await fetch(`${server.url}/v1/batches/${id}`, { headers: auth(key) })).json()) as {
    status: string;
  };
  return { id, status: batch.status, ms, submitMs, pages, ok, failed, duplicates, sample };
}

/**
 * Reads a batch's results a page at a time (10,000 lines a page) while it runs, following Link
 * rel="next" until the last page; each page's text goes to `onPage`. Returns the pages read.
 */
export async function followResults(
  base: string,
  key: string,
  id: string,
  onPage: (text: string) => void,
): Promise<number> {
  let pages = 0;
  let url: string | undefined = `${base}/v1/batches/${id}/results?limit=10000`;
  while (url) {
    const page: Response = await fetch(url, { headers: auth(key) });
    if (page.status !== 200) throw new Error(`results: HTTP ${page.status}: ${await page.text()}`);
    const text = await page.text();
    pages++;
    onPage(text);
    const next = /<([^>]+)>;\s*rel="next"/.exec(page.headers.get('link') ?? '')?.[1];
    if (next && text === '') await sleep(250); // as a plain client polls: no more than 4 reads a second while nothing is new
    url = next ? new URL(next, base).href : undefined;
  }
  return pages;
}

/**
 * runBatch in a worker thread of its own: the batch's client reads and parses its results on
 * another event loop than the interactive load's, as a separate client would, so the latencies the
 * interactive load times are not the batch reader's parsing.
 */
export function runBatchApart(
  ...[server, key, lines, sampled, onSubmitted]: Parameters<typeof runBatch>
): Promise<BatchRun> {
  const entry = workerEntry('batch-client-thread', import.meta.url, {
    url: server.url,
    key,
    lines,
    sampled: [...sampled],
  });
  const worker = new Worker(entry.filename, { workerData: entry.workerData });
  return new Promise<BatchRun>((resolve, reject) => {
    worker.on('message', (m: { submitted?: true; run?: BatchRun; error?: string }) => {
      if (m.submitted) onSubmitted?.();
      else if (m.run) resolve(m.run);
      else reject(new Error(m.error));
    });
    worker.on('error', reject);
    worker.on('exit', (code) => reject(new Error(`the batch client thread exited (${code})`)));
  }).finally(() => void worker.terminate());
}

export interface FanOutRun extends Answered {
  concurrency: number;
  /** Attempts the server refused (429, 529, …) that the SDK retried. */
  retried: number;
}

function sdkClient(server: BenchServer, key: string, seen?: (res: Response) => void): TypeSafeClient {
  const fetchCounting = async (input: string, init?: RequestInit) => {
    const res = await globalThis.fetch(input, init);
    seen?.(res);
    return res;
  };
  return new TypeSafeClient({
    apiKey: key,
    baseURL: server.url,
    defaultModel: server.model,
    logLevel: 'off',
    // As a careful fan-out loop configures it: refusals waited out (the server says how long), no
    // attempt cut short while it queues behind the others.
    retry: { maxRetries: 20 },
    timeout: 900_000,
    fetch: fetchCounting,
  });
}

/** Every line as its own request through the SDK, `concurrency` in flight, in the lines' order. */
export async function fanOut(
  server: BenchServer,
  key: string,
  lines: Line[],
  concurrency: number,
  sampled: Set<string>,
): Promise<FanOutRun> {
  let retried = 0;
  const client = sdkClient(server, key, (res) => {
    if (res.status !== 200) retried++;
  });
  const sample = new Map<string, unknown>();
  let next = 0;
  let ok = 0;
  let failed = 0;
  const t0 = performance.now();
  const worker = async () => {
    for (let i = next++; i < lines.length; i = next++) {
      const line = lines[i]!;
      try {
        const body = await client.systemOne(asSdk(line.body));
        ok++;
        if (sampled.has(line.custom_id)) sample.set(line.custom_id, body);
      } catch {
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { concurrency, ms: performance.now() - t0, ok, failed, retried: Math.max(0, retried - failed), sample };
}

export interface LoadRun {
  /** Latency of each answered request, ms. */
  latencies: number[];
  /** Server-Timing of each answer, where the server sends its engine part (queue wait + passes) and its total, ms. */
  engine: number[];
  server: number[];
  failed: number;
  seconds: number;
}

/**
 * An open loop: request i is sent at t0 + i / rps seconds whatever the earlier ones are doing,
 * until `stop()` says so (checked at each tick) or `maxMs` passes; then the ones in flight are awaited.
 */
export async function openLoop(
  server: BenchServer,
  key: string,
  request: (i: number) => Line['body'],
  o: { rps: number; maxMs: number; first: number; stop?: () => boolean },
): Promise<LoadRun> {
  const engine: number[] = [];
  const total: number[] = [];
  const client = sdkClient(server, key, (res) => {
    const timing = res.headers.get('server-timing') ?? '';
    const e = Number(/engine;dur=([\d.]+)/.exec(timing)?.[1]);
    const t = Number(/total;dur=([\d.]+)/.exec(timing)?.[1]);
    if (res.status === 200 && Number.isFinite(e) && Number.isFinite(t)) {
      engine.push(e);
      total.push(t);
    }
  });
  const latencies: number[] = [];
  const inFlight: Array<Promise<void>> = [];
  let failed = 0;
  const period = 1000 / o.rps;
  const t0 = performance.now();
  for (let i = 0; ; i++) {
    const at = t0 + i * period;
    if (at - t0 > o.maxMs || o.stop?.()) break;
    const body = request(o.first + i); // built before its time comes, never timed
    const wait = at - performance.now();
    if (wait > 0) await sleep(wait);
    const sent = performance.now();
    inFlight.push(
      client.systemOne(asSdk(body), { retry: { maxRetries: 0 } }).then(
        () => void latencies.push(performance.now() - sent),
        () => void failed++,
      ),
    );
  }
  await Promise.all(inFlight);
  return { latencies, engine, server: total, failed, seconds: (performance.now() - t0) / 1000 };
}

/** The largest |a − b| over the numbers of two answer bodies; Infinity where their shapes differ. */
export function maxDiff(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return Math.abs(a - b);
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length || ka.some((k) => !(k in b))) return Infinity;
    return Math.max(0, ...ka.map((k) => maxDiff((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])));
  }
  return a === b ? 0 : Infinity;
}
