// The numbers of `assay eval --dataset`'s report: per arm, the quality metrics per question type and
// per tag (src/quality/metrics.ts), the coverage section (coverage-report.ts) and the plots; for two
// arms (--compare), the answers paired by line and question. Printed by report-markdown.ts and
// report-html.ts; the command is commands/eval-dataset.ts.
import type { Answer, Question } from '../../protocol/index.js';
import {
  choiceMetrics,
  noulMetrics,
  reliabilitySvg,
  riskCoverageSvg,
  scoreMetrics,
  type ChoiceExample,
  type NoulExample,
  type ScoreExample,
} from '../../quality/index.js';
import { coverageReport } from './coverage-report.js';
import type { DatasetLine } from './read.js';
import type { DatasetRun } from './run.js';

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

export type Metrics = ReturnType<typeof metricsOf>;

export function buildReport(
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

export type Report = ReturnType<typeof buildReport>;

/** The report's plots: a reliability diagram per classification type, a risk–coverage curve per type. */
export function plotsOf(report: Report): Array<{ file: string; title: string; svg: string }> {
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

/** Both arms' answers to each labeled question, by line (1-based) and question id. */
export function pairAnswers(lines: DatasetLine[], runs: [DatasetRun, DatasetRun]) {
  return lines.flatMap((line, i) =>
    Object.keys(line.questions).map((id) => ({
      line: i + 1,
      id,
      a: runs[0].responses[i]!.answers[id]!,
      b: runs[1].responses[i]!.answers[id]!,
      expected: line.expected[id],
    })),
  );
}
