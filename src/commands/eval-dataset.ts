// assay eval --dataset FILE [--compare A,B]: every line of a labeled JSONL dataset (dataset/read.ts)
// through the local engine (the same service function the server runs) or a server (--url), then
// the quality metrics per question type and per tag (src/quality/metrics.ts), printed as markdown
// and, with --out DIR, written as report.md, report.json, report.html (one self-contained page:
// dataset/report-html.ts) and one reliability diagram per
// classification type. --compare runs two arms (dataset/targets.ts: models, variants, prompt
// versions, rotations) on the same lines and adds how many answers flipped between them.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Answer, Question } from '../protocol/index.js';
import { countFlips, decision, type FlipCounts } from '../quality/index.js';
import {
  choiceMetrics,
  noulMetrics,
  scoreMetrics,
  type ChoiceExample,
  type NoulExample,
  type ScoreExample,
} from '../quality/index.js';
import {
  DEFAULT_RESAMPLES,
  DEFAULT_SEED,
  drift,
  reliabilitySvg,
  riskCoverageSvg,
  worse,
  type TypeDrift,
} from '../quality/index.js';
import { loadRegistry, resolveModel, type Registry } from '../registry/index.js';
import { escalationCounts } from '../service/index.js';
import type { Io } from './common.js';
import { DatasetError, readDataset, type DatasetLine } from './dataset/read.js';
import {
  COVERAGE_HEAD,
  coverageMarkdown,
  coverageReport,
  coverageRows,
  DEFAULT_BUDGETS,
  DEFAULT_SCORE_TOLERANCE,
  enoughNote,
} from './dataset/coverage-report.js';
import { runEscalationSweep, thresholdsFromReport } from './dataset/escalation-sweep.js';
import { reportHtml, type ChangedAnswer, type HtmlArm, type HtmlTable } from './dataset/report-html.js';
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

interface Collected {
  noul: NoulExample[];
  choice: ChoiceExample[];
  score: ScoreExample[];
}

function collect(into: Collected, q: Question, a: Answer, expected: unknown): void {
  if (q.type === 'noul' && a.type === 'noul') into.noul.push({ p: a.noul, expected: expected as boolean });
  else if (q.type === 'choice' && a.type === 'choice')
    into.choice.push({ probabilities: a.probabilities, expected: expected as string });
  else if (q.type === 'score' && a.type === 'score')
    into.score.push({ probabilities: a.probabilities, expected: expected as number });
}

function metricsOf(c: Collected) {
  return {
    ...(c.noul.length ? { noul: noulMetrics(c.noul) } : {}),
    ...(c.choice.length ? { choice: choiceMetrics(c.choice) } : {}),
    ...(c.score.length ? { score: scoreMetrics(c.score) } : {}),
  };
}

type Metrics = ReturnType<typeof metricsOf>;

function buildReport(
  dataset: string,
  run: DatasetRun,
  lines: DatasetLine[],
  budgets: number[],
  scoreTolerance: number,
) {
  const all: Collected = { noul: [], choice: [], score: [] };
  const byTag = new Map<string, Collected>();
  lines.forEach((line, i) => {
    for (const [id, q] of Object.entries(line.questions)) {
      const a = run.responses[i]!.answers[id]!;
      collect(all, q, a, line.expected[id]);
      for (const t of line.tags) {
        if (!byTag.has(t)) byTag.set(t, { noul: [], choice: [], score: [] });
        collect(byTag.get(t)!, q, a, line.expected[id]);
      }
    }
  });
  return {
    dataset,
    arm: run.target.label,
    model: run.target.model,
    synthetic: run.target.synthetic,
    /** The confidence formula of its answers; null: a server's own, not reported by the API. */
    confidence: run.target.confidence ?? null,
    lines: lines.length,
    answers: all.noul.length + all.choice.length + all.score.length,
    usage: { input_tokens: run.inputTokens },
    seconds: Math.round(run.seconds * 10) / 10,
    metrics: metricsOf(all),
    byTag: Object.fromEntries([...byTag].map(([t, c]) => [t, metricsOf(c)])),
    coverage: coverageReport(
      lines,
      run.responses.map((r) => r.answers),
      budgets,
      scoreTolerance,
    ),
  };
}

type Report = ReturnType<typeof buildReport>;

const f3 = (x: number | undefined) => (x !== undefined && Number.isFinite(x) ? x.toFixed(3) : '–');

const SYNTHETIC_NOTE =
  '> **This model is synthetic (random weights): its answers, and so these metrics, mean nothing.** Register a real model to measure quality.';

/** The metrics table's rows as cells: type (with a label), answers, accuracy, Brier, log loss, ECE, score MAE. */
function cells(m: Metrics, label = ''): string[][] {
  return [
    ...(m.noul
      ? [
          [
            `${label}noul`,
            String(m.noul.count),
            f3(m.noul.accuracy),
            f3(m.noul.brier),
            f3(m.noul.logLoss),
            f3(m.noul.ece),
            '–',
          ],
        ]
      : []),
    ...(m.choice
      ? [
          [
            `${label}choice`,
            String(m.choice.count),
            f3(m.choice.accuracy),
            f3(m.choice.brier),
            f3(m.choice.logLoss),
            f3(m.choice.ece),
            '–',
          ],
        ]
      : []),
    ...(m.score
      ? [[`${label}score`, String(m.score.count), f3(m.score.exactAccuracy), '–', '–', '–', f3(m.score.mae)]]
      : []),
  ];
}

const HEAD_CELLS = ['type', 'answers', 'accuracy', 'Brier', 'log loss', 'ECE (15 equal-mass bins)', 'score MAE'];

function rows(m: Metrics, label = ''): string[] {
  return cells(m, label).map((c) => `| ${c.join(' | ')} |`);
}

const HEAD = `| ${HEAD_CELLS.join(' | ')} |\n|${HEAD_CELLS.map(() => '---').join('|')}|`;

function summary(r: Report): string {
  return `Model ${r.model}; ${r.lines} lines, ${r.answers} labeled answers; ${r.usage.input_tokens} input tokens; ${r.seconds} s.`;
}

function markdown(report: Report): string {
  const parts = [
    `# assay eval --dataset ${report.dataset}`,
    '',
    ...(report.synthetic ? [SYNTHETIC_NOTE, ''] : []),
    summary(report),
    '',
    HEAD,
    ...rows(report.metrics),
    ...coverageMarkdown(report.coverage),
  ];
  for (const [tag, m] of Object.entries(report.byTag)) parts.push('', `## tag \`${tag}\``, '', HEAD, ...rows(m));
  return `${parts.join('\n')}\n`;
}

const FLIP_HEAD = [
  'type',
  'answers',
  'flipped',
  'fixed (wrong → right)',
  'broken (right → wrong)',
  'mean largest probability change',
];

function flipCells(flips: Record<string, FlipCounts>): string[][] {
  return Object.entries(flips).map(([type, c]) => [
    type,
    String(c.count),
    `${c.flipped} (${((100 * c.flipped) / c.count).toFixed(1)}%)`,
    String(c.fixed),
    String(c.broken),
    f3(c.meanMaxDelta),
  ]);
}

const DRIFT_HEAD = ['type', 'measure', 'A', 'B', 'B − A', '95% interval', 'B against A'];
const signed = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(3)}` : '–');

/** Per type and measure: A, B, the difference, its paired bootstrap interval and the verdict (higher is better but for ECE). */
function driftCells(d: Record<string, TypeDrift>): string[][] {
  const out: string[][] = [];
  const line = (
    type: string,
    name: string,
    i: { a: number; b: number; diff: number; low: number; high: number },
    lowerIsBetter = false,
  ) => {
    const better = lowerIsBetter ? i.high < 0 : i.low > 0;
    const worse = lowerIsBetter ? i.low > 0 : i.high < 0;
    out.push([
      type,
      name,
      f3(i.a),
      f3(i.b),
      signed(i.diff),
      `[${signed(i.low)}, ${signed(i.high)}]`,
      worse ? 'worse' : better ? 'better' : 'within the interval',
    ]);
  };
  for (const [type, t] of Object.entries(d)) {
    line(type, type === 'score' ? 'exact-level accuracy' : 'accuracy', t.accuracy);
    for (const c of t.coverage) line(type, `coverage at ${+(c.budget * 100).toFixed(2)}% error`, c);
    if (t.ece) line(type, 'ECE', t.ece, true);
  }
  return out;
}

const CHANGED_HEAD = (a: string, b: string) => ['line', 'question', 'type', 'label', a, b, 'verdict'];

function compareMarkdown(
  dataset: string,
  a: Report,
  b: Report,
  flips: Record<string, FlipCounts>,
  d: Record<string, TypeDrift>,
  changed: ChangedAnswer[],
  resamples: number,
  seed: number,
): string {
  const head = CHANGED_HEAD(a.arm, b.arm);
  const parts = [
    `# assay eval --dataset ${dataset} --compare ${a.arm},${b.arm}`,
    '',
    ...(a.synthetic || b.synthetic ? [SYNTHETIC_NOTE, ''] : []),
    `${a.lines} lines, ${a.answers} labeled answers each. ${a.arm}: model ${a.model}, ${a.usage.input_tokens} input tokens, ${a.seconds} s. ${b.arm}: model ${b.model}, ${b.usage.input_tokens} input tokens, ${b.seconds} s.`,
    '',
    HEAD.replace('| type |', '| arm · type |'),
    ...rows(a.metrics, `${a.arm} · `),
    ...rows(b.metrics, `${b.arm} · `),
    '',
    `## ${b.arm} against ${a.arm}`,
    '',
    `Paired bootstrap: the questions resampled with replacement ${resamples} times (seed ${seed}), both arms' answers to a question kept together; the interval holds the middle 95% of the resampled differences B − A. "worse" / "better": the whole interval is on one side of 0.`,
    '',
    `| ${DRIFT_HEAD.join(' | ')} |`,
    `|${DRIFT_HEAD.map(() => '---').join('|')}|`,
    ...driftCells(d).map((c) => `| ${c.join(' | ')} |`),
    '',
    `| ${FLIP_HEAD.join(' | ')} |`,
    `|${FLIP_HEAD.map(() => '---').join('|')}|`,
    ...flipCells(flips).map((c) => `| ${c.join(' | ')} |`),
    '',
    `### Answers that flipped (${changed.length})`,
    '',
    ...(changed.length
      ? [
          `| ${head.join(' | ')} |`,
          `|${head.map(() => '---').join('|')}|`,
          ...changed.map(
            (x) =>
              `| ${[x.line, x.question, x.type, x.expected, x.a, x.b, x.verdict || '–'].map((c) => String(c).replace(/\|/g, '\\|')).join(' | ')} |`,
          ),
        ]
      : [`No answer flipped between ${a.arm} and ${b.arm}.`]),
  ];
  return `${parts.join('\n')}\n`;
}

function plotsOf(report: Report): Array<{ file: string; title: string; svg: string }> {
  const plots = [];
  const who = report.arm === report.model ? report.model : `${report.arm} (${report.model})`;
  for (const type of ['noul', 'choice'] as const) {
    const m = report.metrics[type];
    if (!m) continue;
    const title = `${type}: ${who}`;
    plots.push({ file: `reliability-${type}.svg`, title, svg: reliabilitySvg(title, m.reliability, m.ece) });
  }
  for (const [type, c] of Object.entries(report.coverage.byType)) {
    const title = `risk–coverage, ${type} (${c.measure}): ${who}`;
    plots.push({ file: `risk-coverage-${type}.svg`, title, svg: riskCoverageSvg(title, c.curve, c.atBudget) });
  }
  return plots;
}

function writePlots(out: string, report: Report, prefix = ''): string[] {
  return plotsOf(report).map((p) => {
    const file = p.file.replace(/^(reliability|risk-coverage)-/, `$1-${prefix}`);
    writeFileSync(join(out, file), p.svg);
    return file;
  });
}

function htmlArm(r: Report): HtmlArm {
  const coverage: Array<{ caption: string; table: HtmlTable; note: string }> = r.coverage.budgets.map((b, i) => ({
    caption: `Coverage at ${+(b * 100).toFixed(2)}% error; thresholds: ${JSON.stringify(r.coverage.thresholds[String(b)])}`,
    table: { head: COVERAGE_HEAD, rows: coverageRows(r.coverage, i) },
    note: enoughNote(b),
  }));
  return {
    arm: r.arm,
    confidence: r.confidence,
    summary: summary(r),
    metrics: { head: HEAD_CELLS, rows: cells(r.metrics) },
    coverage,
    byTag: Object.entries(r.byTag).map(([tag, m]) => ({ tag, table: { head: HEAD_CELLS, rows: cells(m) } })),
    plots: plotsOf(r).map(({ title, svg }) => ({ title, svg })),
  };
}

/** How an answer reads in the flips table: the decision and its probability. */
function shown(a: Answer): string {
  if (a.type === 'noul') return `${a.noul >= 0.5 ? 'yes' : 'no'} (P(yes) ${a.noul.toFixed(3)})`;
  if (a.type === 'choice') return `${a.choice} (${(a.probabilities[a.choice] ?? 0).toFixed(3)})`;
  const level = String(decision(a));
  return `${level} (${(a.probabilities[level] ?? 0).toFixed(3)}; score ${a.score.toFixed(2)})`;
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
    const pairs = lines.flatMap((line, i) =>
      Object.keys(line.questions).map((id) => ({
        line: i + 1,
        id,
        a: runs[0]!.responses[i]!.answers[id]!,
        b: runs[1]!.responses[i]!.answers[id]!,
        expected: line.expected[id],
      })),
    );
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
