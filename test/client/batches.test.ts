// The client's batch calls on a socket, against a stand-in server that fails on purpose: an upload
// answered 503 is sent again whole (the file streamed from its start), a 404 is not retried, and
// a results page gives its lines, the next page's cursor and whether it was the last.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AssayAPIError, AssayBatches } from '../../src/client/index.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

async function listen(handler: (req: IncomingMessage, body: string) => [number, Record<string, string>, string]) {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const [status, headers, body] = handler(req, Buffer.concat(chunks).toString());
      res.writeHead(status, headers).end(body);
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

const batch = (total: number) =>
  JSON.stringify({
    id: 'batch_1',
    object: 'batch',
    status: 'validating',
    created_at: 1,
    errors: null,
    request_counts: { total, completed: 0, failed: 0 },
  });

describe('AssayBatches', () => {
  it('an upload answered 503 is retried with the whole file, its Idempotency-Key and retry count', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'assay-client-batch-')), 'in.jsonl');
    const lines = Array.from({ length: 2000 }, (_, i) => JSON.stringify({ custom_id: `c${i}`, body: { i } }));
    writeFileSync(file, `${lines.join('\n')}\n`);
    const seen: Array<{ lines: number; retry: unknown; key: unknown; type: unknown }> = [];
    const base = await listen((req, body) => {
      seen.push({
        lines: body.split('\n').filter(Boolean).length,
        retry: req.headers['x-assay-retry-count'],
        key: req.headers['idempotency-key'],
        type: req.headers['content-type'],
      });
      return seen.length === 1
        ? [503, { 'content-type': 'application/json', 'retry-after-ms': '10' }, '{"detail":"busy"}']
        : [200, { 'content-type': 'application/json' }, batch(seen.at(-1)!.lines)];
    });
    const api = new AssayBatches({ baseUrl: base, apiKey: 'k', env: {} });
    const b = await api.create(file, { idempotencyKey: 'same-content' });
    expect(b.request_counts.total).toBe(2000);
    expect(seen).toEqual([
      { lines: 2000, retry: '0', key: 'same-content', type: 'application/jsonl' },
      { lines: 2000, retry: '1', key: 'same-content', type: 'application/jsonl' },
    ]);
  });

  it('404 is not retried: an AssayAPIError with its status and detail', async () => {
    let calls = 0;
    const base = await listen(() => {
      calls++;
      return [404, { 'content-type': 'application/json' }, '{"detail":"batch not found"}'];
    });
    const e = await new AssayBatches({ baseUrl: base, apiKey: 'k', env: {} }).get('batch_x').catch((x: unknown) => x);
    expect(e).toBeInstanceOf(AssayAPIError);
    expect(e).toMatchObject({ status: 404, detail: 'batch not found', attempts: 1 });
    expect(calls).toBe(1);
  });

  it('a results page: its lines, the next cursor from Link, done from x-assay-results-done', async () => {
    const base = await listen((req) =>
      req.url!.includes('after=2')
        ? [200, { 'x-assay-results-done': 'true' }, '{"custom_id":"c"}\n']
        : [
            200,
            { link: '</v1/batches/batch_1/results?after=2&limit=2>; rel="next"', 'x-assay-results-done': 'false' },
            '{"custom_id":"a"}\n{"custom_id":"b"}\n',
          ],
    );
    const api = new AssayBatches({ baseUrl: base, apiKey: 'k', env: {} });
    const first = await api.results('batch_1', { limit: 2 });
    expect(first).toMatchObject({ lines: ['{"custom_id":"a"}', '{"custom_id":"b"}'], cursor: '2', done: false });
    expect(first.next).toBe(`${base}/v1/batches/batch_1/results?after=2&limit=2`);
    const last = await api.results('batch_1', { after: first.cursor, limit: 2 });
    expect(last).toMatchObject({ lines: ['{"custom_id":"c"}'], next: undefined, done: true });
  });
});
