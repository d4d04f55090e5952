// assay eval --dataset: the example dataset through the local engine (the registry's synthetic
// default), metrics per type and tag, the report files; a bad line is refused with its line number.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { run as evalCmd } from '../../src/commands/eval.js';
import { KEY, startServer } from '../api/helpers.js';

async function run(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) => new Writable({ write: (c, _e, cb) => void (into.push(String(c)), cb()) });
  const code = await evalCmd(args, { stdout: sink(out), stderr: sink(err), env });
  return { code, out: out.join(''), err: err.join('') };
}

describe('assay eval --dataset', () => {
  it('reports every type and tag of the example dataset, loudly marked synthetic, and writes report.md and report.json', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
    const r = await run(['--dataset', 'examples/support-tickets.jsonl', '--out', dir]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('synthetic (random weights)');
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    expect(report).toMatchObject({ lines: 32, answers: 96, synthetic: true, model: 'svc-1.13.0' });
    expect([report.metrics.noul.count, report.metrics.choice.count, report.metrics.score.count]).toEqual([32, 32, 32]);
    for (const m of [report.metrics.noul, report.metrics.choice]) {
      expect(m.accuracy).toBeGreaterThanOrEqual(0);
      expect(m.accuracy).toBeLessThanOrEqual(1);
      expect(m.reliability.reduce((n: number, b: { count: number }) => n + b.count, 0)).toBe(32);
    }
    expect(Object.keys(report.byTag).sort()).toEqual(['app', 'billing', 'defect', 'delivery', 'praise', 'returns', 'sales']);
    expect(report.byTag.billing.noul.count).toBe(9);
    expect(readFileSync(join(dir, 'report.md'), 'utf8')).toBe(r.out);
    // The reliability diagrams: one SVG per classification type, a dot per non-empty bin of the JSON's data.
    for (const type of ['noul', 'choice']) {
      const svg = readFileSync(join(dir, `reliability-${type}.svg`), 'utf8');
      expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
      const bins = report.metrics[type].reliability.filter((b: { count: number }) => b.count > 0);
      expect(svg.match(/<circle /g)).toHaveLength(bins.length);
      expect(svg).toContain(`ECE ${report.metrics[type].ece.toFixed(3)}`);
    }
  });

  it('refuses a line whose label does not fit its question, naming the line', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
    const file = join(dir, 'bad.jsonl');
    const good = readFileSync('examples/support-tickets.jsonl', 'utf8').split('\n')[0]!;
    const bad = JSON.parse(good);
    bad.expected.topic = 'weather';
    writeFileSync(file, `${good}\n${JSON.stringify(bad)}\n`);
    const r = await run(['--dataset', file]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${file}:2: expected.topic must be one of the option names`);
    writeFileSync(file, `${good}\n{"state": "", "questions": {}}\n`);
    const empty = await run(['--dataset', file]);
    expect(empty.code).toBe(2);
    expect(empty.err).toContain(`${file}:2: state: String should have at least 1 character`);
  });

  it('--compare int8,fp32 runs both variants on the same lines and counts the answers int8 changes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
    const r = await run(['--dataset', 'examples/support-tickets.jsonl', '--compare', 'int8,fp32', '--out', dir]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('--compare int8,fp32');
    expect(r.out).toContain('synthetic (random weights)');
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    expect(report.arms.map((a: { arm: string }) => a.arm)).toEqual(['int8', 'fp32']);
    for (const type of ['noul', 'choice', 'score']) {
      const f = report.flips[type];
      expect(f.count).toBe(32);
      expect(f.flipped).toBeGreaterThanOrEqual(f.fixed + f.broken - Math.min(f.fixed, f.broken));
      // Quantization moves the probabilities a little, not a lot.
      expect(f.meanMaxDelta).toBeGreaterThan(0);
      expect(f.meanMaxDelta).toBeLessThan(0.1);
      expect(r.out).toMatch(new RegExp(`\\| ${type} \\| 32 \\| ${f.flipped} \\(`));
    }
    for (const file of ['reliability-int8-noul.svg', 'reliability-fp32-choice.svg']) expect(readFileSync(join(dir, file), 'utf8')).toContain('<svg');
  });

  it('--compare v1,letters+rot3: the label strategy changes choice answers only', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
    const r = await run(['--dataset', 'examples/support-tickets.jsonl', '--compare', 'v1,letters+rot3', '--out', dir]);
    expect(r.code, r.err).toBe(0);
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    // (noul and score read as before: only float noise of another packed layout.)
    for (const type of ['noul', 'score']) {
      expect(report.flips[type].flipped).toBe(0);
      expect(report.flips[type].meanMaxDelta).toBeLessThan(1e-4);
    }
    expect(report.flips.choice.meanMaxDelta).toBeGreaterThan(0.01);
    // Three rotations of the four options: more tokens read.
    expect(report.arms[1].usage.input_tokens).toBeGreaterThan(report.arms[0].usage.input_tokens);
  });

  it('names what it does not understand in --compare', async () => {
    const r = await run(['--dataset', 'examples/support-tickets.jsonl', '--compare', 'int8,nonsense']);
    expect(r.code).toBe(2);
    expect(r.err).toContain('"nonsense" (in "nonsense") is not a model of the registry, a variant');
    const one = await run(['--dataset', 'examples/support-tickets.jsonl', '--compare', 'int8']);
    expect(one.code).toBe(2);
    expect(one.err).toContain('--compare takes two arms');
  });

  it('--url runs the dataset through a real server, with the same metrics as the local engine', async () => {
    const srv = await startServer();
    try {
      await srv.app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(srv.app.server.address() as AddressInfo).port}`;
      const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
      const remote = await run(['--dataset', 'examples/support-tickets.jsonl', '--url', url, '--out', dir], { ASSAY_API_KEY: KEY });
      expect(remote.code, remote.err).toBe(0);
      const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
      expect(report).toMatchObject({ lines: 32, answers: 96, model: 'svc-1.13.0' });
      const localDir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
      expect((await run(['--dataset', 'examples/support-tickets.jsonl', '--out', localDir])).code).toBe(0);
      const local = JSON.parse(readFileSync(join(localDir, 'report.json'), 'utf8'));
      for (const type of ['noul', 'choice']) {
        expect(report.metrics[type].accuracy).toBe(local.metrics[type].accuracy);
        expect(report.metrics[type].logLoss).toBeCloseTo(local.metrics[type].logLoss, 5);
      }
      expect(report.usage.input_tokens).toBe(local.usage.input_tokens);
    } finally {
      await srv.close();
    }
  });
});
