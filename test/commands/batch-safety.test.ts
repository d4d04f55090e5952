// assay batch's defaults that protect an operator: a file that is not a batch input is refused
// before anything is sent, saying what it is and how to convert it; the README's example input
// ships; the same input gets the same batch only while the server's models are the same, and
// --new always gets a new one.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/commands/batch.js';
import { checkLine } from '../../src/service/batches/lines.js';
import { KEY, mixedRequest, testRegistry } from '../api/helpers.js';
import { jsonl, startBatchServer } from '../batches/helpers.js';

function capture() {
  let err = '';
  const sink = new Writable({
    write(chunk, _e, cb) {
      err += String(chunk);
      cb();
    },
  });
  return { io: { stdout: sink, stderr: sink, env: {} }, err: () => err };
}

async function batchesOf(base: string): Promise<string[]> {
  const res = await fetch(`${base}/v1/batches`, { headers: { authorization: `Bearer ${KEY}` } });
  return ((await res.json()) as { data: { id: string }[] }).data.map((b) => b.id);
}

const batchId = (err: string) => /batch (batch_\w+) completed/.exec(err)?.[1];

describe('assay batch: what it sends', () => {
  let s: Awaited<ReturnType<typeof startBatchServer>>;
  let dir: string;
  beforeAll(async () => {
    s = await startBatchServer();
    dir = mkdtempSync(join(tmpdir(), 'assay-batch-safety-'));
  });
  afterAll(async () => s?.close());
  const flags = () => ['--url', s.base, '--key', KEY, '--poll', '20'];

  it("a labeled dataset (assay eval --dataset's shape) is refused before upload, naming the shape and the conversion", async () => {
    const file = join(dir, 'dataset.jsonl');
    writeFileSync(file, jsonl([{ ...mixedRequest(), expected: { paid: true } }]));
    const c = capture();
    expect(await run([file, ...flags()], c.io)).toBe(2);
    expect(c.err()).toContain(`${file} line 1 is a labeled dataset line ({"state", "questions", "expected"}`);
    expect(c.err()).toContain(`assay eval --dataset ${file} --url URL --batch`);
    expect(c.err()).toContain(`jq -c '{custom_id: "line-\\(input_line_number)", body: (del(.expected, .tags))}'`);
    expect(await batchesOf(s.base)).toEqual([]);
  });

  it('a file that is not JSON, or lines without custom_id / body, are refused with the line and the shape', async () => {
    const text = join(dir, 'text.jsonl');
    writeFileSync(text, '\nhello world\n');
    const c = capture();
    expect(await run([text, ...flags()], c.io)).toBe(2);
    expect(c.err()).toMatch(/text\.jsonl line 2 is not JSON \(.*\): a batch input line is \{"custom_id"/);
    const other = join(dir, 'other.jsonl');
    writeFileSync(other, jsonl([{ id: 1, prompt: 'x' }]));
    const d = capture();
    expect(await run([other, ...flags()], d.io)).toBe(2);
    expect(d.err()).toContain('line 1 has no custom_id and no body (it has id, prompt)');
  });

  it('the same input gets the same batch; --new a new one', async () => {
    const file = join(dir, 'same.jsonl');
    writeFileSync(file, jsonl([{ custom_id: 'a', body: mixedRequest() }]));
    const first = capture();
    expect(await run([file, ...flags()], first.io)).toBe(0);
    const again = capture();
    expect(await run([file, ...flags()], again.io)).toBe(0);
    expect(batchId(again.err())).toBe(batchId(first.err()));
    const fresh = capture();
    expect(await run([file, ...flags(), '--new'], fresh.io)).toBe(0);
    expect(batchId(fresh.err())).toBeDefined();
    expect(batchId(fresh.err())).not.toBe(batchId(first.err()));
  });

  it('the same input on a server whose models changed (another registry, the same store) gets a new batch', async () => {
    const file = join(dir, 'models.jsonl');
    writeFileSync(file, jsonl([{ custom_id: 'a', body: mixedRequest() }]));
    const before = capture();
    expect(await run([file, ...flags()], before.io)).toBe(0);
    // The same data directory (the same batches; one server at a time holds it), another registry.
    const { dataDir } = s;
    const modelDir = s.evaluator.modelDir;
    await s.close();
    s = await startBatchServer({ dataDir }, { registry: testRegistry(modelDir, { 'svc-next': 'svc-0.9.0' }) });
    const after = capture();
    expect(await run([file, ...flags()], after.io)).toBe(0);
    expect(batchId(after.err())).toBeDefined();
    expect(batchId(after.err())).not.toBe(batchId(before.err()));
  });
});

describe("examples/tickets.jsonl (the README's batch input)", () => {
  it('ships, and every line is a valid batch input line', () => {
    const lines = readFileSync(new URL('../../examples/tickets.jsonl', import.meta.url), 'utf8')
      .trim()
      .split('\n');
    expect(lines.length).toBeGreaterThanOrEqual(10);
    lines.forEach((l, i) => expect(checkLine(l, i + 1).kind, l).toBe('item'));
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(readme).toContain('examples/tickets.jsonl');
  });
});
