// Keeps the benchmark suite from rotting: one tiny bench (shared prefix vs independent on the tiny
// model, a 64-token state, 1 round) and the report writer. Timings are never asserted.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createContext } from '../../bench/lib/context.js';
import { measureShared, sharedResult } from '../../bench/engine/shared.js';
import { writeReport } from '../../bench/report.js';
import { cpuKernels } from '../../src/engine/index.js';

const out = mkdtempSync(join(tmpdir(), 'assay-bench-smoke-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('bench smoke', () => {
  it('runs the shared-prefix bench on the tiny model and writes a result file with the expected fields', async () => {
    const ctx = createContext({ quick: true, threads: 2, log: () => {} });
    const started = performance.now();
    const rows = await measureShared(ctx, 'tiny', 'fp32', [
      { stateTokens: 64, questionCounts: [1, 4], independentQuestions: 4, rounds: 1 },
    ]);
    const section = sharedResult(ctx, rows, [], started);
    const written = writeReport(
      { quick: true, command: 'smoke', threads: 2, kernels: await cpuKernels(), started: new Date(), seconds: 1 },
      [section],
      [],
      out,
    );
    expect(written.latest).toBeUndefined(); // quick runs never replace latest.md
    // Nor do --only runs, full or not: they write files named after their sections.
    const only = writeReport(
      {
        quick: false,
        command: 'smoke',
        threads: 2,
        kernels: await cpuKernels(),
        started: new Date(),
        seconds: 1,
        only: ['shared'],
      },
      [section],
      [],
      out,
    );
    expect([only.latest, only.mdPath.endsWith('-only-shared.md')]).toEqual([undefined, true]);

    const json = JSON.parse(readFileSync(written.jsonPath, 'utf8'));
    expect(json).toMatchObject({ command: 'smoke', quick: true, threads: 2, failures: [] });
    expect(typeof json.date).toBe('string');
    expect(json.machine).toEqual(
      expect.objectContaining({
        cpu: expect.any(String),
        cores: expect.any(Number),
        onnxruntimeNode: expect.any(String),
      }),
    );
    // The report names the int8 path it ran on, in the JSON and in the markdown header.
    expect(json.kernels).toEqual(
      expect.objectContaining({ int8: expect.stringMatching(/\(exact/), q4: expect.any(String), int8Exact: true }),
    );
    expect(readFileSync(written.mdPath, 'utf8')).toMatch(/^- CPU kernels: int8 .+; 4-bit .+; flags .+$/m);
    expect(json.sections).toHaveLength(1);
    const [s] = json.sections;
    expect(s.id).toBe('shared');
    expect(s.results).toHaveLength(2);
    for (const row of s.results) {
      expect(row).toEqual(
        expect.objectContaining({
          model: 'tiny-fp32',
          stateTokens: 64,
          inputTokens: expect.any(Number),
          shared: expect.objectContaining({
            n: 1,
            median: expect.any(Number),
            min: expect.any(Number),
            max: expect.any(Number),
          }),
          independent: expect.objectContaining({ median: expect.any(Number) }),
          speedup: expect.objectContaining({
            median: expect.any(Number),
            p10: expect.any(Number),
            p90: expect.any(Number),
          }),
        }),
      );
      expect(row.inputTokens).toBeGreaterThan(64);
    }
    expect(s.results.map((r: { questions: number }) => r.questions)).toEqual([1, 4]);
    const md = readFileSync(written.mdPath, 'utf8');
    expect(md).toContain('## 1. Shared prefix vs independent evaluation');
    expect(md).toContain('| model | state tokens |');
  });
});
