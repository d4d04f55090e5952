// Shared setup of the batch tests: a server on the tiny model with batch jobs in a fresh data
// directory, and the client side of the batch API over a real socket.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { openBatches, type OpenBatchesOptions } from '../../src/service/index.js';
import { KEY, startListening, type TestServer } from '../api/helpers.js';

export const JSONL = 'application/jsonl';

export async function startBatchServer(
  o: Partial<OpenBatchesOptions> & { dataDir?: string } = {},
  server: Parameters<typeof startListening>[0] = {},
): Promise<TestServer & { base: string; dataDir: string }> {
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), 'assay-batches-'));
  const opened = await openBatches({
    dataDir,
    maxLines: 50_000,
    maxBytes: 200 * 1024 * 1024,
    windowMs: 24 * 3600_000,
    keepMs: 24 * 3600_000,
    keepReadMs: 3600_000,
    leaseMs: 120_000,
    ...o,
  });
  if (!('batches' in opened)) throw new Error(opened.unavailable);
  const s = await startListening({ ...server, batches: opened.batches });
  return { ...s, dataDir };
}

export function jsonl(lines: unknown[]): string {
  return lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n';
}

export async function submit(
  base: string,
  body: string,
  headers: Record<string, string> = {},
  key = KEY,
): Promise<Response> {
  return fetch(`${base}/v1/batches`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': JSONL, ...headers },
    body,
  });
}

export interface BatchObject {
  id: string;
  status: string;
  request_counts: { total: number; completed: number; failed: number };
  errors: { data: Array<{ code: string; message: string; line?: number }> } | null;
}

export async function getBatch(base: string, id: string, key = KEY): Promise<BatchObject> {
  const res = await fetch(`${base}/v1/batches/${id}`, { headers: { authorization: `Bearer ${key}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as BatchObject;
}

const ENDED = ['completed', 'failed', 'expired', 'cancelled'];

/** Polls the batch until it has ended (or `timeoutMs` passes: the test fails). */
export async function waitEnded(base: string, id: string, timeoutMs = 60_000, key = KEY): Promise<BatchObject> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const b = await getBatch(base, id, key);
    if (ENDED.includes(b.status)) return b;
    if (Date.now() > until) throw new Error(`batch ${id} still ${b.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface ResultLine {
  custom_id: string | null;
  response?: { status_code: number; body: Record<string, unknown> };
  error?: { code: string; message: string; line?: number; detail?: unknown[] };
}

/** Reads every page of a batch's results, following Link rel="next" while the batch is not done. */
export async function readResults(
  base: string,
  id: string,
  limit = 1000,
  key = KEY,
): Promise<{ lines: ResultLine[]; pages: number }> {
  let url: string | undefined = `${base}/v1/batches/${id}/results?limit=${limit}`;
  const lines: ResultLine[] = [];
  let pages = 0;
  while (url) {
    const res: Response = await fetch(url, { headers: { authorization: `Bearer ${key}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    pages++;
    for (const l of text.split('\n')) if (l) lines.push(JSON.parse(l) as ResultLine);
    const link = res.headers.get('link');
    const next = link ? /<([^>]+)>;\s*rel="next"/.exec(link)?.[1] : undefined;
    if (next && text === '') await new Promise((r) => setTimeout(r, 50));
    url = next ? new URL(next, base).href : undefined;
  }
  return { lines, pages };
}

/** Waits for the batch to complete with `total` lines, all answered; reads its results and checks each custom_id is there once. */
export async function completedOnce(
  base: string,
  id: string,
  total: number,
  key = KEY,
  timeoutMs = 180_000,
): Promise<ResultLine[]> {
  const ended = await waitEnded(base, id, timeoutMs, key);
  expect(ended.status).toBe('completed');
  expect(ended.request_counts).toEqual({ total, completed: total, failed: 0 });
  const { lines: results } = await readResults(base, id, 5000, key);
  const seen = results.map((r) => r.custom_id);
  expect(seen).toHaveLength(total);
  expect(new Set(seen).size).toBe(total);
  return results;
}
