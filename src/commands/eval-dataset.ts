// assay eval --dataset FILE [--compare A,B]: every line of a labeled JSONL dataset (dataset/read.ts)
// through the local engine (the same service function the server runs) or a server (--url), then
// the quality metrics per question type and per tag (dataset/report.ts over src/quality/), printed
// as markdown (dataset/report-markdown.ts) and, with --out DIR, written as report.md, report.json,
// report.html (one self-contained page: dataset/report-html.ts) and one reliability diagram per
// classification type. --compare runs two arms (dataset/targets.ts: models, variants, prompt
// versions, rotations) on the same lines and adds how many answers flipped between them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { countFlips, decision, DEFAULT_RESAMPLES, DEFAULT_SEED, drift, worse } from '../quality/index.js';
import { loadRegistry, resolveModel, type Registry } from '../registry/index.js';
import { escalationCounts } from '../service/index.js';
import type { Io } from './common.js';
import { DEFAULT_BUDGETS, DEFAULT_SCORE_TOLERANCE } from './dataset/coverage-report.js';
import { DatasetError, readDataset, type DatasetLine } from './dataset/read.js';
import { runEscalationSweep, thresholdsFromReport } from './dataset/escalation-sweep.js';
import { reportHtml, type ChangedAnswer } from './dataset/report-html.js';
import {
  compareMarkdown,
  DRIFT_HEAD,
  driftCells,
  FLIP_HEAD,
  flipCells,
  htmlArm,
  markdown,
  shown,
} from './dataset/report-markdown.js';
import { buildReport, pairAnswers, plotsOf, type Report } from './dataset/report.js';
import { runDataset, type DatasetRun } from './dataset/run.js';
import { ArmError, openTarget, parseArm, syntheticShapeRegistry, type TargetContext } from './dataset/targets.js';

export interface DatasetOptions {
  file: string;
  model?: string;
  registryFile: string;
  out?: string;
  url?: string;
  /** With url: the lines as one batch instead of a request each. */
  batch?: boolean;
  /** Two arms, comma-separated (dataset/targets.ts). */
  compare?: string;
  /** A synthetic model of this shape instead of a registry model. */
  shape?: string;
  timeoutMs?: number;
  retries?: number;
  /** Error budgets of the coverage report (shares; default 5%). */
  budgets?: number[];
  /** A score answer is right within this many levels of the label (default 0.5). */
  scoreTolerance?: number;
  /** --compare: exit 1 when B is worse than A beyond the bootstrap interval. */
  failIfWorse?: boolean;
  /** With an escalating --model: thresholds from a coverage report.json (FILE or FILE#0.05) for the sweep. */
  thresholdsFile?: string;
  /** --compare: bootstrap resamples and seed. */
  resamples?: number;
  seed?: number;
}

function writePlots(out: string, report: Report, prefix = ''): string[] {
  return plotsOf(report).map((p) => {
    const file = p.file.replace(/^(reliability|risk-coverage)-/, `$1-${prefix}`);
    writeFileSync(join(out, file), p.svg);
    return file;
  });
}

/** The arm file-name prefix: safe characters only. */
const slug = (arm: string) => `${arm.replace(/[^A-Za-z0-9._-]+/g, '_')}-`;

/** Runs the dataset (or two arms of it); returns the exit status. */
export async function evalDataset(o: DatasetOptions, io: Io): Promise<number> {
  let registry: Registry | undefined;
  let lines: DatasetLine[];
  let arms;
  try {
    if (o.url === undefined) {
      registry = loadRegistry(o.registryFile);
      if (o.shape !== undefined) registry = await syntheticShapeRegistry(o.shape, registry);
    }
    lines = readDataset(o.file, o.model ?? registry?.default ?? 'svc-latest');
    const names = o.compare === undefined ? [o.model ?? ''] : o.compare.split(',');
    if (o.compare !== undefined && names.length !== 2)
      throw new ArmError('--compare takes two arms, comma-separated (e.g. int8,fp32)');
    arms = names.map((n) => (n === '' ? { label: o.model ?? registry?.default ?? 'default' } : parseArm(n, registry)));
    if (o.thresholdsFile !== undefined) thresholdsFromReport(o.thresholdsFile); // refused before anything runs
  } catch (e) {
    if (!(e instanceof DatasetError || e instanceof ArmError)) throw e;
    io.err(`assay eval: ${e.message}\n`);
    return 2;
  }
  const budgets = o.budgets?.length ? o.budgets : DEFAULT_BUDGETS;
  const scoreTolerance = o.scoreTolerance ?? DEFAULT_SCORE_TOLERANCE;
  const ctx: TargetContext = {
    io,
    registry,
    model: o.model,
    url: o.url,
    timeoutMs: o.timeoutMs,
    retries: o.retries,
    batch: o.batch,
  };
  const reports: Report[] = [];
  const runs: DatasetRun[] = [];
  // An escalating model (local engine, no --compare): its accuracy against escalation rate too.
  const escalating =
    registry && o.compare === undefined ? resolveModel(registry, o.model ?? registry.default) : undefined;
  const countsBefore = escalationCounts()[escalating?.id ?? ''];
  for (const arm of arms) {
    let target;
    try {
      target = await openTarget(arm, ctx);
    } catch (e) {
      if (!(e instanceof ArmError)) throw e;
      io.err(`assay eval: ${e.message}\n`);
      return 2;
    }
    try {
      await target.prepare?.(lines);
      const run = await runDataset(target, lines, io, o.url === undefined ? 1 : 4);
      runs.push(run);
      reports.push(buildReport(o.file, run, lines, budgets, scoreTolerance));
    } finally {
      await target.close();
    }
  }
  const files: string[] = [];
  let status = 0;
  if (o.out) mkdirSync(o.out, { recursive: true });
  if (reports.length === 1) {
    const report = reports[0]!;
    let escalation;
    if (escalating?.entry.escalate) {
      const after = escalationCounts()[escalating.id];
      const measured = after && {
        escalated: after.escalated - (countsBefore?.escalated ?? 0),
        questions: after.questions - (countsBefore?.questions ?? 0),
      };
      try {
        escalation = await runEscalationSweep(
          {
            id: escalating.id,
            spec: escalating.entry.escalate,
            lines,
            scoreTolerance,
            thresholdsFile: o.thresholdsFile,
            measured,
          },
          ctx,
          io,
        );
      } catch (e) {
        if (!(e instanceof ArmError || e instanceof DatasetError)) throw e;
        io.err(`assay eval: ${(e as Error).message}\n`);
        return 2;
      }
    }
    const md = `${markdown(report)}${escalation ? `${escalation.markdown.join('\n')}\n` : ''}`;
    io.out(md);
    if (o.out) {
      writeFileSync(join(o.out, 'report.md'), md);
      writeFileSync(
        join(o.out, 'report.json'),
        `${JSON.stringify(escalation ? { ...report, escalation: escalation.rows } : report, null, 2)}\n`,
      );
      writeFileSync(
        join(o.out, 'report.html'),
        reportHtml(`assay eval --dataset ${o.file}`, report.synthetic, [
          { ...htmlArm(report), ...(escalation ? { escalation: escalation.table } : {}) },
        ]),
      );
      files.push('report.md', 'report.json', 'report.html', ...writePlots(o.out, report));
    }
  } else {
    const [a, b] = reports as [Report, Report];
    const pairs = pairAnswers(lines, runs as [DatasetRun, DatasetRun]);
    const flips = countFlips(pairs);
    const resamples = o.resamples ?? DEFAULT_RESAMPLES;
    const seed = o.seed ?? DEFAULT_SEED;
    const d = drift(pairs, { budgets, scoreTolerance, resamples, seed });
    const changed: ChangedAnswer[] = pairs
      .filter((p) => decision(p.a) !== decision(p.b))
      .map((p) => ({
        line: p.line,
        question: p.id,
        type: p.a.type,
        expected: JSON.stringify(p.expected ?? null),
        a: shown(p.a),
        b: shown(p.b),
        verdict: decision(p.b) === p.expected ? 'fixed' : decision(p.a) === p.expected ? 'broken' : '',
      }));
    const worseOn = worse(d);
    const md = compareMarkdown(o.file, a, b, flips, d, changed, resamples, seed);
    io.out(md);
    if (o.failIfWorse) {
      if (worseOn.length) {
        io.err(`assay eval: ${b.arm} is worse than ${a.arm} beyond the 95% interval: ${worseOn.join(', ')}\n`);
        status = 1;
      } else
        io.err(
          `assay eval: ${b.arm} is not worse than ${a.arm} beyond the 95% interval (accuracy and coverage per type)\n`,
        );
    }
    if (o.out) {
      writeFileSync(join(o.out, 'report.md'), md);
      writeFileSync(
        join(o.out, 'report.json'),
        `${JSON.stringify({ dataset: o.file, arms: [a, b], flips, drift: { resamples, seed, interval: 0.95, types: d, worse: worseOn }, changed }, null, 2)}\n`,
      );
      const compare = {
        a: a.arm,
        b: b.arm,
        drift: { head: DRIFT_HEAD, rows: driftCells(d) },
        driftNote: `Paired bootstrap, ${resamples} resamples of the questions (seed ${seed}); the interval holds the middle 95% of the differences B − A.`,
        flips: { head: FLIP_HEAD, rows: flipCells(flips) },
        changed,
      };
      writeFileSync(
        join(o.out, 'report.html'),
        reportHtml(
          `assay eval --dataset ${o.file} --compare ${a.arm},${b.arm}`,
          a.synthetic || b.synthetic,
          [htmlArm(a), htmlArm(b)],
          compare,
        ),
      );
      files.push(
        'report.md',
        'report.json',
        'report.html',
        ...writePlots(o.out, a, slug(a.arm)),
        ...writePlots(o.out, b, slug(b.arm)),
      );
    }
  }
  if (o.out) io.err(`assay eval: wrote ${files.map((f) => join(o.out!, f)).join(', ')}\n`);
  return status;
}
