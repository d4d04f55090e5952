// How `assay eval --dataset`'s report reads: its tables as cells (the metrics, the drift and flips of
// --compare), the markdown printed and written as report.md, and an arm's part of report.html
// (report-html.ts lays the page out). The numbers are report.ts's.
import type { Answer } from '../../protocol/index.js';
import { decision, type FlipCounts, type TypeDrift } from '../../quality/index.js';
import { COVERAGE_HEAD, coverageMarkdown, coverageRows, enoughNote } from './coverage-report.js';
import type { ChangedAnswer, HtmlArm, HtmlTable } from './report-html.js';
import { plotsOf, type Metrics, type Report } from './report.js';

const f3 = (x: number | undefined) => (x !== undefined && Number.isFinite(x) ? x.toFixed(3) : '–');

const SYNTHETIC_NOTE =
  '> **This model is synthetic (random weights): its answers, and so these metrics, mean nothing.** Register a real model to measure quality.';

/** The metrics table's rows as cells: type (with a label), answers, accuracy, Brier, log loss, ECE, score MAE. */
export function cells(m: Metrics, label = ''): string[][] {
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

export const HEAD_CELLS = ['type', 'answers', 'accuracy', 'Brier', 'log loss', 'ECE (15 equal-mass bins)', 'score MAE'];

function rows(m: Metrics, label = ''): string[] {
  return cells(m, label).map((c) => `| ${c.join(' | ')} |`);
}

const HEAD = `| ${HEAD_CELLS.join(' | ')} |\n|${HEAD_CELLS.map(() => '---').join('|')}|`;

export function summary(r: Report): string {
  return `Model ${r.model}; ${r.lines} lines, ${r.answers} labeled answers; ${r.usage.input_tokens} input tokens; ${r.seconds} s.`;
}

export function markdown(report: Report): string {
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

export const FLIP_HEAD = [
  'type',
  'answers',
  'flipped',
  'fixed (wrong → right)',
  'broken (right → wrong)',
  'mean largest probability change',
];

export function flipCells(flips: Record<string, FlipCounts>): string[][] {
  return Object.entries(flips).map(([type, c]) => [
    type,
    String(c.count),
    `${c.flipped} (${((100 * c.flipped) / c.count).toFixed(1)}%)`,
    String(c.fixed),
    String(c.broken),
    f3(c.meanMaxDelta),
  ]);
}

export const DRIFT_HEAD = ['type', 'measure', 'A', 'B', 'B − A', '95% interval', 'B against A'];
const signed = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : '−'}${Math.abs(x).toFixed(3)}` : '–');

/** Per type and measure: A, B, the difference, its paired bootstrap interval and the verdict (higher is better but for ECE). */
export function driftCells(d: Record<string, TypeDrift>): string[][] {
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

export function compareMarkdown(
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
    `${a.lines} lines, ${a.answers} labeled answers each. ${a.arm}: model ${a.model}, ` +
      `${a.usage.input_tokens} input tokens, ${a.seconds} s. ${b.arm}: model ${b.model}, ` +
      `${b.usage.input_tokens} input tokens, ${b.seconds} s.`,
    '',
    HEAD.replace('| type |', '| arm · type |'),
    ...rows(a.metrics, `${a.arm} · `),
    ...rows(b.metrics, `${b.arm} · `),
    '',
    `## ${b.arm} against ${a.arm}`,
    '',
    `Paired bootstrap: the questions resampled with replacement ${resamples} times (seed ` +
      `${seed}), both arms' answers to a question kept together; the interval holds the middle ` +
      `95% of the resampled differences B − A. "worse" / "better": the whole interval is on one ` +
      `side of 0.`,
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

/** An arm's part of report.html: the same tables as cells, its coverage and plots. */
export function htmlArm(r: Report): HtmlArm {
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
export function shown(a: Answer): string {
  if (a.type === 'noul') return `${a.noul >= 0.5 ? 'yes' : 'no'} (P(yes) ${a.noul.toFixed(3)})`;
  if (a.type === 'choice') return `${a.choice} (${(a.probabilities[a.choice] ?? 0).toFixed(3)})`;
  const level = String(decision(a));
  return `${level} (${(a.probabilities[level] ?? 0).toFixed(3)}; score ${a.score.toFixed(2)})`;
}
