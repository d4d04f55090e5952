// assay eval --dataset: the example dataset through the local engine (the registry's synthetic
// default), metrics per type and tag, the report files; a bad line is refused with its line number.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import type { AddressInfo } from 'node:net';
import { run as evalCmd } from '../../src/commands/eval.js';
import { KEY, startListening, startServer } from '../api/helpers.js';

async function run(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const sink = (into: string[]) => new Writable({ write: (c, _e, cb) => void (into.push(String(c)), cb()) });
  const code = await evalCmd(args, { stdout: sink(out), stderr: sink(err), env });
  return { code, out: out.join(''), err: err.join('') };
}

/** `assay eval` as a user runs it: bin/assay.js over dist/ (built by npm test first), its exit status and output. */
async function cli(args: string[], env: Record<string, string> = {}) {
  const { ASSAY_REGISTRY: _, ...base } = process.env;
  return promisify(execFile)(process.execPath, ['bin/assay.js', 'eval', ...args], {
    env: { ...base, ...env },
    maxBuffer: 64 << 20,
    timeout: 120_000,
  }).then(
    (r) => ({ code: 0, out: r.stdout, err: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout, err: e.stderr }),
  );
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
    expect(Object.keys(report.byTag).sort()).toEqual([
      'app',
      'billing',
      'defect',
      'delivery',
      'praise',
      'returns',
      'sales',
    ]);
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

  it('coverage at 5% error on the trained model: printed, the thresholds in report.json as the escalation loads them, the curve in report.html and SVG', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
    const r = await run([
      '--dataset',
      'examples/tiny-tasks-heldout.jsonl',
      '--model',
      'tiny-tasks-1',
      '--error-budget',
      '5%',
      '--error-budget',
      '0.01',
      '--out',
      dir,
    ]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('## Coverage at 5% error');
    expect(r.out).toContain('## Coverage at 1% error');
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    const c = report.coverage;
    expect(c.budgets).toEqual([0.05, 0.01]);
    // Every held-out answer is right: all kept, at the lowest certainty of the type.
    for (const type of ['noul', 'choice', 'score']) {
      const at5 = c.byType[type].atBudget[0];
      expect(at5).toMatchObject({ budget: 0.05, count: 90, coverage: 1, kept: 90, errors: 0, enough: true });
      expect(c.thresholds['0.05'][type]).toBe(at5.threshold);
      // All kept: the least certain answer's certainty.
      expect(at5.threshold).toBe(Math.min(...c.byType[type].curve.map((p: { threshold: number }) => p.threshold)));
      expect(r.out).toMatch(
        new RegExp(`\\| ${type} \\| [^|]+ \\| 90 \\| 1\\.000 \\| 90 \\(0\\) \\| ${at5.threshold.toFixed(3)} \\|`),
      );
      // 90 error-free answers cannot show 1% (299 needed).
      expect(c.byType[type].atBudget[1]).toMatchObject({ enough: false, keptNeeded: 299 });
    }
    expect(c.byType.choice.alternative.measure).toBe('chosen option probability');
    expect(Object.keys(c.byQuestion).sort()).toEqual(['fact', 'level', 'pick']);
    expect(c.byTag.refund.noul.count).toBe(32);
    expect(r.out).toContain('no: ~59 needed'); // a tag of 25–46 answers is too small for 5%
    const html = readFileSync(join(dir, 'report.html'), 'utf8');
    expect(html).toContain('Coverage at 5% error; thresholds: {&quot;noul&quot;:');
    const svg = readFileSync(join(dir, 'risk-coverage-choice.svg'), 'utf8');
    expect(svg).toContain('budget 5%');
    expect(html).toContain(svg.split('\n')[2]!); // the same curve inline
  });

  it('--compare v1,letters --fail-if-worse: the constructed regression exits 1 (bin/assay.js), with the intervals and the flipped answers before the tag tables', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
    const r = await cli([
      '--dataset',
      'examples/tiny-tasks-heldout.jsonl',
      '--model',
      'tiny-tasks-1',
      '--compare',
      'v1,letters',
      '--fail-if-worse',
      '--resamples',
      '500',
      '--out',
      dir,
    ]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(
      'letters is worse than v1 beyond the 95% interval: choice accuracy, choice coverage at 5% error',
    );
    expect(r.out).toContain('resampled with replacement 500 times (seed 1)');
    expect(r.out).toMatch(
      /\| choice \| accuracy \| 1\.000 \| 0\.356 \| −0\.644 \| \[−0\.\d{3}, −0\.\d{3}\] \| worse \|/,
    );
    expect(r.out).toMatch(
      /\| noul \| accuracy \| 1\.000 \| 1\.000 \| \+0\.000 \| \[\+0\.000, \+0\.000\] \| within the interval \|/,
    );
    expect(r.out).toContain('### Answers that flipped (58)');
    const report = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    expect(report.drift).toMatchObject({
      resamples: 500,
      seed: 1,
      worse: ['choice accuracy', 'choice coverage at 5% error'],
    });
    expect(report.drift.types.choice.accuracy.high).toBeLessThan(0);
    expect(report.changed).toHaveLength(58);
    const html = readFileSync(join(dir, 'report.html'), 'utf8');
    expect(html.indexOf('Answers that flipped (58)')).toBeGreaterThan(0);
    expect(html.indexOf('Answers that flipped')).toBeLessThan(html.indexOf('<caption>tag '));
    expect(html.indexOf('Differences with 95% intervals')).toBeLessThan(html.indexOf('Answers that flipped'));
  });

  it("an escalating model: accuracy against escalation rate on the trained model's held-out set, thresholds from a coverage report", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
    // The first model's coverage report: its thresholds at 5% go straight into the sweep.
    expect(
      (await run(['--dataset', 'examples/tiny-tasks-heldout.jsonl', '--model', 'svc-1.13.0', '--out', dir])).code,
    ).toBe(0);
    const r = await run([
      '--dataset',
      'examples/tiny-tasks-heldout.jsonl',
      '--model',
      'tiny-cascade-1',
      '--thresholds',
      `${join(dir, 'report.json')}#0.05`,
      '--out',
      join(dir, 'cascade'),
    ]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toContain('## Escalation: accuracy against escalation rate');
    expect(r.out).toContain('svc-1.13.0 answers; a question whose certainty');
    // The trained second model is right on every held-out question: escalating all gives 1.000.
    expect(r.out).toMatch(/\| second model only \| [^|]+ \| 270 of 270 \(100\.0%\) \| 1\.000 \|/);
    expect(r.out).toMatch(/\| first model only \| `\{\}` \| 0 of 270 \(0\.0%\) \| 0\.\d{3} \|/);
    expect(r.out).toContain('| coverage report, 5% budget |');
    const report = JSON.parse(readFileSync(join(dir, 'cascade', 'report.json'), 'utf8'));
    const rates = report.escalation.slice(0, 11).map((x: { rate: number }) => x.rate);
    expect(rates).toEqual([...rates].sort((a, b) => a - b)); // higher thresholds escalate more
    const own = report.escalation.find((x: { label: string }) => x.label === "tiny-cascade-1's own");
    // What the service really escalated is what its thresholds predict from the first answers.
    expect(r.out).toContain(
      `the entry re-asked ${own.escalated} of 270 questions (its thresholds predict ${own.escalated}`,
    );
    expect(report.model).toBe('tiny-cascade-1');
    // The coverage report's thresholds re-ask exactly the answers its coverage did not keep.
    const first = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8'));
    const keptAt5 = Object.values(
      first.coverage.byType as Record<string, { atBudget: Array<{ kept: number }> }>,
    ).reduce((n, g) => n + g.atBudget[0]!.kept, 0);
    const fromReport = report.escalation.find((x: { label: string }) => x.label === 'coverage report, 5% budget');
    expect(fromReport.escalated).toBe(270 - keptAt5);
    const html = readFileSync(join(dir, 'cascade', 'report.html'), 'utf8');
    expect(html).toContain('<h2>Escalation: accuracy against escalation rate</h2>');
    expect(html).toContain(
      '<th scope="row">second model only</th><td>{&quot;noul&quot;:null,&quot;choice&quot;:null,&quot;score&quot;:null}</td><td>270 of 270 (100.0%)</td><td>1.000</td>',
    );
  });

  it('an escalating model whose second model is another Assay server on loopback: the sweep asks it, the zero-data-retention warning is said once', async () => {
    const remote = await startListening();
    const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
    const registry = join(dir, 'registry.json');
    const second = { url: remote.base, model: 'svc-latest', api_key_env: 'ASSAY_TEST_SECOND_KEY' };
    const entry = (below: Record<string, number>) => ({
      escalate: { first: 'svc-1.13.0', second, below },
      description: 'escalates to a remote',
      release_date: '2026-11-25',
    });
    writeFileSync(
      registry,
      JSON.stringify({
        default: 'svc-1.13.0',
        models: {
          'svc-1.13.0': { path: remote.evaluator.modelDir, description: 'tiny', release_date: '2026-11-22' },
          'cascade-remote-1': entry({ noul: 0.7, choice: 0.5, score: 0.5 }),
          'other-remote-1': entry({ noul: 0.9 }),
        },
        aliases: {},
      }),
    );
    process.env.ASSAY_TEST_SECOND_KEY = KEY; // the service's re-asks read the process environment
    try {
      const r = await run(
        ['--dataset', 'examples/support-tickets.jsonl', '--registry', registry, '--model', 'cascade-remote-1'],
        { ASSAY_TEST_SECOND_KEY: KEY },
      );
      expect(r.code, r.err).toBe(0);
      // Said once, for the entry run (not for the other escalating entry, not again by the sweep's pools).
      expect(r.err.match(/ESCALATING TO A REMOTE MODEL/g)).toHaveLength(1);
      expect(r.out).toContain(`is re-asked to svc-latest at ${remote.base}.`);
      // The remote is the first model's own weights: escalating everything changes no accuracy.
      const row = (label: string) =>
        new RegExp(`^\\| ${label} \\| [^|]+ \\| [^|]+ \\| (\\d\\.\\d{3}) \\|`, 'm').exec(r.out)?.[1];
      expect(row('first model only')).toMatch(/^\d\.\d{3}$/);
      expect(row('second model only')).toBe(row('first model only'));
      const measured = /the entry re-asked (\d+) of 96 questions \(its thresholds predict (\d+) /.exec(r.out);
      expect(Number(measured?.[1])).toBeGreaterThan(0);
      expect(measured?.[1]).toBe(measured?.[2]);
    } finally {
      delete process.env.ASSAY_TEST_SECOND_KEY;
      await remote.close();
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
    // An empty state is valid (as the hosted service takes it); no questions is not.
    expect(empty.err).toContain(`${file}:2: questions: Dictionary should have at least 1 item after validation, not 0`);
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
    for (const file of ['reliability-int8-noul.svg', 'reliability-fp32-choice.svg'])
      expect(readFileSync(join(dir, file), 'utf8')).toContain('<svg');
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
    const budget = await run(['--dataset', 'examples/support-tickets.jsonl', '--error-budget', '5']);
    expect(budget.code).toBe(2);
    expect(budget.err).toContain('--error-budget takes a share between 0 and 1 (0.05) or a percentage (5%)');
    const alone = await run(['--dataset', 'examples/support-tickets.jsonl', '--fail-if-worse']);
    expect(alone.code).toBe(2);
    expect(alone.err).toContain('--fail-if-worse goes with --compare A,B');
    const missing = await run([
      '--dataset',
      'examples/support-tickets.jsonl',
      '--model',
      'tiny-cascade-1',
      '--thresholds',
      '/nonexistent/report.json',
    ]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('--thresholds /nonexistent/report.json: ENOENT');
  });

  it('--url --compare of two names of one model is a tie: intervals [0, 0], --fail-if-worse exits 0 (bin/assay.js)', async () => {
    const srv = await startServer();
    try {
      await srv.app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(srv.app.server.address() as AddressInfo).port}`;
      const r = await cli(
        [
          '--dataset',
          'examples/support-tickets.jsonl',
          '--url',
          url,
          '--compare',
          'svc-1.13.0,svc-latest',
          '--fail-if-worse',
        ],
        { ASSAY_API_KEY: KEY },
      );
      expect(r.code, r.err).toBe(0);
      expect(r.err).toContain('svc-latest is not worse than svc-1.13.0 beyond the 95% interval');
      for (const type of ['noul', 'choice', 'score'])
        expect(r.out).toMatch(
          new RegExp(
            `\\| ${type} \\| [a-z -]*accuracy \\| (\\d\\.\\d{3}) \\| \\1 \\| \\+0\\.000 \\| \\[\\+0\\.000, \\+0\\.000\\] \\| within the interval \\|`,
          ),
        );
      expect(r.out).toContain('No answer flipped between svc-1.13.0 and svc-latest.');
    } finally {
      await srv.close();
    }
  });

  it('--url runs the dataset through a real server, with the same metrics as the local engine', async () => {
    const srv = await startServer();
    try {
      await srv.app.listen({ port: 0, host: '127.0.0.1' });
      const url = `http://127.0.0.1:${(srv.app.server.address() as AddressInfo).port}`;
      const dir = mkdtempSync(join(tmpdir(), 'assay-dataset-'));
      const remote = await run(['--dataset', 'examples/support-tickets.jsonl', '--url', url, '--out', dir], {
        ASSAY_API_KEY: KEY,
      });
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
      // Which confidence formula the numbers come from: the local engine's is known, a server's is its own.
      expect([local.confidence, report.confidence]).toEqual(['entropy', null]);
      const html = (d: string) => readFileSync(join(d, 'report.html'), 'utf8');
      expect(html(localDir)).toContain('Choice and score confidence: entropy, 1 − H/ln N');
      expect(html(dir)).toContain('Choice and score confidence: as the server computes it');
    } finally {
      await srv.close();
    }
  });
});
