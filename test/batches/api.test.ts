// The batch API over a real socket, on the real engine (the tiny model): a batch's lines are
// answered as the same requests sent one by one are; results are paged with Link while the batch
// runs, every custom_id once; invalid lines are reported with the single request's 422 entries
// and their line number; the Idempotency-Key, another key's batch, cancel, delete and the
// batch-level failures behave as docs/batches.md says.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { auth, KEY, mixedRequest, OTHER_KEY } from '../api/helpers.js';
import { getBatch, jsonl, readResults, startBatchServer, submit, waitEnded, type ResultLine } from './helpers.js';

const STATES = [
  'The invoice was paid on time by the customer.',
  { ticket: 4411, text: 'Customer says the parcel arrived broken; wants a refund.' },
  ['first note', 'second note about a late delivery'],
];

/** Lines over three states, each asking one or two of mixedRequest's questions (so lines share states). */
function lines(): Array<{ custom_id: string; body: ReturnType<typeof mixedRequest> }> {
  const out: Array<{ custom_id: string; body: ReturnType<typeof mixedRequest> }> = [];
  const ids = ['paid', 'channel', 'punctuality'] as const;
  STATES.forEach((state, s) => {
    const all = mixedRequest(state);
    ids.forEach((id, k) => {
      const questions: Record<string, unknown> = { [id]: all.questions[id] };
      if (k === 2) questions.paid = all.questions.paid; // a line of two questions
      out.push({ custom_id: `s${s}-${id}`, body: { ...all, questions } as ReturnType<typeof mixedRequest> });
    });
  });
  return out;
}

function close(a: unknown, b: unknown, tol: number): void {
  if (typeof a === 'number' && typeof b === 'number') return expect(Math.abs(a - b)).toBeLessThanOrEqual(tol);
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    expect(Object.keys(a)).toEqual(Object.keys(b));
    for (const k of Object.keys(a)) close((a as never)[k], (b as never)[k], tol);
    return;
  }
  expect(a).toEqual(b);
}

describe('batch API', () => {
  let s: Awaited<ReturnType<typeof startBatchServer>>;
  beforeAll(async () => {
    s = await startBatchServer({ maxLines: 40, maxBytes: 256 * 1024 });
  });
  afterAll(async () => s?.close());

  it('answers every line as the same request sent alone, each custom_id once, invalid lines reported with their 422 entries', async () => {
    const valid = lines();
    const input = jsonl([
      ...valid.slice(0, 4),
      { custom_id: 'bad-body', body: { state: 'x', questions: {} } },
      '',
      { custom_id: 'bad-url', url: '/v1/chat/completions', body: valid[0]!.body },
      '{"custom_id": "not json',
      ...valid.slice(4),
    ]);
    const res = await submit(s.base, input);
    expect(res.status).toBe(200);
    const created = (await res.json()) as { id: string; object: string; status: string; endpoint: string };
    expect(created).toMatchObject({ object: 'batch', endpoint: '/v1/systemone' });
    expect(['validating', 'in_progress', 'completed']).toContain(created.status);

    const ended = await waitEnded(s.base, created.id);
    expect(ended.status).toBe('completed');
    expect(ended.request_counts).toEqual({ total: valid.length + 3, completed: valid.length, failed: 3 });

    const { lines: results } = await readResults(s.base, created.id, 4);
    const byId = new Map<string | null, ResultLine[]>();
    for (const r of results) byId.set(r.custom_id, [...(byId.get(r.custom_id) ?? []), r]);
    for (const l of valid) expect(byId.get(l.custom_id)).toHaveLength(1);
    expect(results).toHaveLength(valid.length + 3);

    // Each valid line: the answers and usage of the same request sent alone. The tolerance: the
    // merged request runs the state once and its questions in shared passes; fp32 sums in another
    // order differ by a few ulps of a probability (1e-7), far under 1e-6.
    for (const l of valid) {
      const alone = await fetch(`${s.base}/v1/systemone`, {
        method: 'POST',
        headers: auth(),
        body: JSON.stringify(l.body),
      });
      expect(alone.status).toBe(200);
      const expected = (await alone.json()) as { answers: unknown; usage: unknown; model: string };
      const got = byId.get(l.custom_id)![0]!.response!;
      expect(got.status_code).toBe(200);
      expect(got.body.model).toBe(expected.model);
      expect(got.body.usage).toEqual(expected.usage);
      expect(Object.keys(got.body.answers as object)).toEqual(Object.keys(l.body.questions));
      close(got.body.answers, expected.answers, 1e-6);
    }

    // The invalid body: the same 422 entries a single request gets, with its line number.
    const single = await fetch(`${s.base}/v1/systemone`, {
      method: 'POST',
      headers: auth(),
      body: JSON.stringify({ state: 'x', questions: {} }),
    });
    const detail = ((await single.json()) as { detail: unknown[] }).detail;
    const bad = byId.get('bad-body')![0]!;
    expect(bad.error).toMatchObject({ code: 'invalid_request', line: 5, detail });
    expect(byId.get('bad-url')![0]!.error).toMatchObject({ code: 'invalid_request', line: 7 });
    expect(byId.get(null)![0]!.error).toMatchObject({ code: 'invalid_request', line: 8 });
  });

  it('pages results with Link rel="next" and a cursor a plain client resumes from', async () => {
    const input = jsonl(lines());
    const { id } = (await (await submit(s.base, input)).json()) as { id: string };
    await waitEnded(s.base, id);
    const all = await readResults(s.base, id, 1000);
    const paged = await readResults(s.base, id, 2);
    expect(paged.pages).toBeGreaterThanOrEqual(5);
    expect(paged.lines.map((l) => l.custom_id).sort()).toEqual(all.lines.map((l) => l.custom_id).sort());
    expect(new Set(paged.lines.map((l) => l.custom_id)).size).toBe(lines().length);
  });

  it('answers the same batch for the same Idempotency-Key and content, 409 for other content', async () => {
    const input = jsonl(lines().slice(0, 3));
    const first = await submit(s.base, input, { 'idempotency-key': 'job-7' });
    const again = await submit(s.base, input, { 'idempotency-key': 'job-7' });
    const a = (await first.json()) as { id: string };
    const b = (await again.json()) as { id: string };
    expect(again.status).toBe(200);
    expect(b.id).toBe(a.id);
    const other = await submit(s.base, jsonl(lines().slice(0, 2)), { 'idempotency-key': 'job-7' });
    expect(other.status).toBe(409);
    expect(((await other.json()) as { detail: string }).detail).toContain(a.id);
    // Another key's Idempotency-Key space is its own.
    const theirs = await submit(s.base, input, { 'idempotency-key': 'job-7' }, OTHER_KEY);
    expect(theirs.status).toBe(200);
    expect(((await theirs.json()) as { id: string }).id).not.toBe(a.id);
    await waitEnded(s.base, a.id);
  });

  it('hides a batch from another key: 404 on every route, absent from its list', async () => {
    const { id } = (await (await submit(s.base, jsonl(lines().slice(0, 2)))).json()) as { id: string };
    const h = { authorization: `Bearer ${OTHER_KEY}` };
    for (const [method, path] of [
      ['GET', `/v1/batches/${id}`],
      ['GET', `/v1/batches/${id}/results`],
      ['POST', `/v1/batches/${id}/cancel`],
      ['DELETE', `/v1/batches/${id}`],
    ] as const) {
      const r = await fetch(`${s.base}${path}`, { method, headers: h });
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    const list = (await (await fetch(`${s.base}/v1/batches?limit=100`, { headers: h })).json()) as {
      data: Array<{ id: string }>;
    };
    expect(list.data.map((b) => b.id)).not.toContain(id);
    const mine = (await (
      await fetch(`${s.base}/v1/batches?limit=100`, { headers: { authorization: `Bearer ${KEY}` } })
    ).json()) as {
      object: string;
      data: Array<{ id: string }>;
    };
    expect(mine.object).toBe('list');
    expect(mine.data.map((b) => b.id)).toContain(id);
    await waitEnded(s.base, id);
  });

  it('fails a batch at validating for a repeated custom_id, too many lines, or no valid line', async () => {
    const l = lines();
    const cases: Array<[string, string]> = [
      [jsonl([l[0], l[1], { ...l[2], custom_id: l[0]!.custom_id }]), 'duplicate_custom_id'],
      [jsonl(Array.from({ length: 41 }, (_, i) => ({ ...l[i % l.length], custom_id: `n${i}` }))), 'too_many_lines'],
      [jsonl([{ custom_id: 'a', body: {} }, 'not json']), 'no_valid_line'],
      ['\n\n', 'empty_file'],
    ];
    for (const [input, code] of cases) {
      const res = await submit(s.base, input);
      expect(res.status).toBe(200);
      const { id } = (await res.json()) as { id: string };
      const b = await waitEnded(s.base, id);
      expect(b.status, code).toBe('failed');
      expect(b.errors?.data[0]?.code).toBe(code);
    }
  });

  it('refuses an input over the size limit (413) and one that is not JSONL (415)', async () => {
    const big = jsonl(
      Array.from({ length: 30 }, (_, i) => ({ custom_id: `b${i}`, body: mixedRequest('x'.repeat(10_000)) })),
    );
    expect((await submit(s.base, big)).status).toBe(413);
    const json = await fetch(`${s.base}/v1/batches`, { method: 'POST', headers: auth(), body: '{}' });
    expect(json.status).toBe(415);
    // Nothing of a refused upload stays in the data directory.
    expect(readdirSync(join(s.dataDir, 'uploads'))).toEqual([]);
  });

  it('cancels: lines not yet answered get batch_cancelled, every custom_id still once', async () => {
    const many = Array.from({ length: 40 }, (_, i) => ({
      custom_id: `c${i}`,
      body: mixedRequest(`state number ${i}: ${'words '.repeat(50)}`),
    }));
    const { id } = (await (await submit(s.base, jsonl(many))).json()) as { id: string };
    const cancel = await fetch(`${s.base}/v1/batches/${id}/cancel`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(cancel.status).toBe(200);
    expect(['cancelling', 'cancelled', 'completed']).toContain(((await cancel.json()) as { status: string }).status);
    const b = await waitEnded(s.base, id);
    expect(['cancelled', 'completed']).toContain(b.status);
    const { lines: results } = await readResults(s.base, id);
    expect(results.map((r) => r.custom_id).sort()).toEqual(many.map((m) => m.custom_id).sort());
    for (const r of results) if (r.error) expect(r.error.code).toBe('batch_cancelled');
    expect(b.request_counts.completed + b.request_counts.failed).toBe(40);
  });

  it('deletes a batch with its input and results: nothing of its content stays in the data directory', async () => {
    const canary = `canary-${Math.random().toString(36).slice(2)}`;
    const input = jsonl([{ custom_id: 'z1', body: mixedRequest(`${canary} is the state`) }]);
    const { id } = (await (await submit(s.base, input)).json()) as { id: string };
    await waitEnded(s.base, id);
    const del = await fetch(`${s.base}/v1/batches/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${KEY}` },
    });
    expect(del.status).toBe(200);
    expect(await del.json()).toEqual({ id, object: 'batch', deleted: true });
    expect((await fetch(`${s.base}/v1/batches/${id}`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(
      404,
    );
    for (const f of readdirSync(s.dataDir, { recursive: true }) as string[]) {
      const p = join(s.dataDir, f);
      let bytes: Buffer;
      try {
        bytes = readFileSync(p);
      } catch {
        continue; // a directory
      }
      expect(bytes.includes(canary), f).toBe(false);
    }
    // The logs never carry content either.
    expect(s.logs.join('').includes(canary)).toBe(false);
  });

  it('counts batch lines and their tokens on /metrics', async () => {
    const text = await (await fetch(`${s.base}/metrics`)).text();
    expect(text).toMatch(/assay_batch_lines_total\{result="completed"\} [1-9]/);
    expect(text).toMatch(/assay_batch_input_tokens_total [1-9]/);
    expect(text).toMatch(/assay_batches\{status="completed"\} [1-9]/);
    await getBatch(s.base, ((await (await submit(s.base, jsonl(lines().slice(0, 1)))).json()) as { id: string }).id);
  });
});

describe('batch retention', () => {
  it('expires a batch past its window (unanswered lines batch_expired), then deletes it and its content', async () => {
    const s = await startBatchServer({ windowMs: 1000, keepMs: 2000, keepReadMs: 2000 });
    try {
      const canary = `canary-${Math.random().toString(36).slice(2)}`;
      const input = jsonl(
        Array.from({ length: 1500 }, (_, i) => ({
          custom_id: `e${i}`,
          body: mixedRequest(`${canary} ticket ${i}: ${'text '.repeat(30)}`),
        })),
      );
      const { id } = (await (await submit(s.base, input)).json()) as { id: string };
      // Its window (1 s) runs from its creation; a batch still being read in expires once it is in.
      while ((await getBatch(s.base, id)).status === 'validating') await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 1100));
      await s.app.assay.batches!.sweepNow();
      const b = await getBatch(s.base, id);
      expect(b.status).toBe('expired');
      const { lines: results } = await readResults(s.base, id, 5000);
      expect(new Set(results.map((r) => r.custom_id)).size).toBe(1500);
      expect(results).toHaveLength(1500);
      expect(results.some((r) => r.error?.code === 'batch_expired')).toBe(true);
      for (const r of results) if (r.error) expect(r.error.code).toBe('batch_expired');

      await new Promise((r) => setTimeout(r, 2100));
      await s.app.assay.batches!.sweepNow();
      expect((await fetch(`${s.base}/v1/batches/${id}`, { headers: { authorization: `Bearer ${KEY}` } })).status).toBe(
        404,
      );
      for (const f of readdirSync(s.dataDir, { recursive: true }) as string[]) {
        let bytes: Buffer;
        try {
          bytes = readFileSync(join(s.dataDir, f));
        } catch {
          continue;
        }
        expect(bytes.includes(canary), f).toBe(false);
      }
      expect(s.logs.join('').includes(canary)).toBe(false);
    } finally {
      await s.close();
    }
  });
});
