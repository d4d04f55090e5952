// assay eval --dataset: the example dataset through the local engine (the registry's synthetic
// default), metrics per type and tag, the report files; a bad line is refused with its line number.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { run as evalCmd } from '../../src/commands/eval.js';

async function run(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) => new Writable({ write: (c, _e, cb) => void (into.push(String(c)), cb()) });
  const code = await evalCmd(args, { stdout: sink(out), stderr: sink(err), env: {} });
  return { code, out: out.join(''), err: err.join('') };
}

describe('assay eval --dataset', () => {
  it('reports every type and tag of the example dataset, loudly marked synthetic, and writes report.md and report.json', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
    const r = await run(['--dataset', 'examples/support-tickets.jsonl', '--out', dir]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('synthetic (random weights)');
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    expect(report).toMatchObject({ lines: 20, answers: 60, synthetic: true, model: 'svc-1.13.0' });
    expect([report.metrics.noul.count, report.metrics.choice.count, report.metrics.score.count]).toEqual([20, 20, 20]);
    for (const m of [report.metrics.noul, report.metrics.choice]) {
      expect(m.accuracy).toBeGreaterThanOrEqual(0);
      expect(m.accuracy).toBeLessThanOrEqual(1);
      expect(m.reliability.reduce((n: number, b: { count: number }) => n + b.count, 0)).toBe(20);
    }
    expect(Object.keys(report.byTag).sort()).toEqual(['app', 'billing', 'defect', 'delivery', 'praise', 'returns', 'sales']);
    expect(report.byTag.billing.noul.count).toBe(5);
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
});
