// The coverage section of `assay eval --dataset`: per question type, per tag and per question id
// asked on several lines, the largest share of answers kept within each error budget and the
// certainty threshold that keeps them (src/quality/coverage.ts), and the thresholds in the shape an
// escalating registry entry's `below` takes as is.
import type { Answer, Question } from '../../protocol/index.js';
import {
  answerCorrect,
  certainty,
  coverageAtBudget,
  defaultMeasure,
  MEASURE_TEXT,
  minKeptForBudget,
  riskCoverage,
} from '../../quality/index.js';
import type { CertaintyMeasure, CoverageAtBudget, RiskPoint, Scored } from '../../quality/index.js';
import type { DatasetLine } from './read.js';

export const DEFAULT_BUDGETS = [0.05];
/** A score answer is right when its expected score is within this many levels of the label: rounds to it. */
export const DEFAULT_SCORE_TOLERANCE = 0.5;

type QuestionType = Question['type'];
const TYPES: QuestionType[] = ['noul', 'choice', 'score'];

export interface GroupCoverage {
  type: QuestionType;
  /** What the threshold compares (max(p, 1 − p), confidence, chosen option probability). */
  measure: string;
  count: number;
  atBudget: CoverageAtBudget[];
}

export interface TypeCoverage extends GroupCoverage {
  curve: RiskPoint[];
  /** choice: the same with the chosen option's probability as the certainty. */
  alternative?: GroupCoverage;
}

export interface CoverageReport {
  budgets: number[];
  scoreTolerance: number;
  byType: Partial<Record<QuestionType, TypeCoverage>>;
  byTag: Record<string, Partial<Record<QuestionType, GroupCoverage>>>;
  /** Question ids asked on two lines or more. */
  byQuestion: Record<string, GroupCoverage>;
  /**
   * Per budget ("0.05"), per type: keep answers whose certainty is ≥ the value (null: none meets
   * the budget). The shape of an escalating registry entry's `below`, loadable as is.
   */
  thresholds: Record<string, Partial<Record<QuestionType, number | null>>>;
}

interface Item {
  line: DatasetLine;
  id: string;
  answer: Answer;
}

function group(
  items: Item[],
  type: QuestionType,
  budgets: number[],
  tolerance: number,
  measure: CertaintyMeasure = defaultMeasure(type),
): GroupCoverage & { points: Scored[] } {
  const points = items.map((x) => ({
    certainty: certainty(x.answer, measure),
    correct: answerCorrect(x.answer, x.line.expected[x.id], tolerance),
  }));
  return {
    type,
    measure: MEASURE_TEXT[measure],
    count: points.length,
    atBudget: budgets.map((b) => coverageAtBudget(points, b)),
    points,
  };
}

const plain = ({ points: _points, ...g }: GroupCoverage & { points: Scored[] }): GroupCoverage => g;

export function coverageReport(
  lines: DatasetLine[],
  answers: Array<Record<string, Answer>>,
  budgets: number[],
  scoreTolerance: number,
): CoverageReport {
  const items: Item[] = lines.flatMap((line, i) =>
    Object.keys(line.questions).map((id) => ({ line, id, answer: answers[i]![id]! })),
  );
  const byType: CoverageReport['byType'] = {};
  for (const type of TYPES) {
    const of = items.filter((x) => x.answer.type === type);
    if (!of.length) continue;
    const g = group(of, type, budgets, scoreTolerance);
    byType[type] = {
      ...plain(g),
      curve: riskCoverage(g.points),
      ...(type === 'choice'
        ? { alternative: plain(group(of, type, budgets, scoreTolerance, 'option-probability')) }
        : {}),
    };
  }
  const byTag: CoverageReport['byTag'] = {};
  for (const tag of [...new Set(lines.flatMap((l) => l.tags))]) {
    const of = items.filter((x) => x.line.tags.includes(tag));
    byTag[tag] = Object.fromEntries(
      TYPES.filter((t) => of.some((x) => x.answer.type === t)).map((t) => [
        t,
        plain(
          group(
            of.filter((x) => x.answer.type === t),
            t,
            budgets,
            scoreTolerance,
          ),
        ),
      ]),
    );
  }
  const byQuestion: CoverageReport['byQuestion'] = {};
  const ids = new Map<string, Item[]>();
  for (const x of items)
    ids.set(`${x.id}\u0000${x.answer.type}`, [...(ids.get(`${x.id}\u0000${x.answer.type}`) ?? []), x]);
  for (const [key, of] of ids) {
    if (of.length < 2) continue;
    const id = key.split('\u0000')[0]!;
    byQuestion[byQuestion[id] ? key.replace('\u0000', ' · ') : id] = plain(
      group(of, of[0]!.answer.type, budgets, scoreTolerance),
    );
  }
  const thresholds = Object.fromEntries(
    budgets.map((b, i) => [
      String(b),
      Object.fromEntries(Object.entries(byType).map(([t, c]) => [t, c.atBudget[i]!.threshold])),
    ]),
  );
  return { budgets, scoreTolerance, byType, byTag, byQuestion, thresholds };
}

const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '–');
const pct = (b: number) => `${+(b * 100).toFixed(2)}%`;

export const COVERAGE_HEAD = [
  'group',
  'certainty',
  'answers',
  'coverage',
  'kept (wrong)',
  'threshold',
  'error of kept (95% upper)',
  'enough answers?',
];

function row(name: string, g: GroupCoverage, i: number): string[] {
  const c = g.atBudget[i]!;
  const enough = c.enough
    ? 'yes'
    : c.labeledNeeded === null
      ? `no: none kept (≥ ${c.keptNeeded} needed)`
      : `no: ~${c.labeledNeeded} needed`;
  return [
    name,
    g.measure,
    String(g.count),
    f3(c.coverage),
    `${c.kept} (${c.errors})`,
    c.threshold === null ? '–' : f3(c.threshold),
    `${f3(c.risk)} (${f3(c.riskUpper95)})`,
    enough,
  ];
}

/** The table rows of one budget (index `i`): the types, then the tags, then the question ids. */
export function coverageRows(r: CoverageReport, i: number): string[][] {
  const rows: string[][] = [];
  for (const [t, g] of Object.entries(r.byType)) {
    rows.push(row(t, g, i));
    if (g.alternative) rows.push(row(t, g.alternative, i));
  }
  for (const [tag, types] of Object.entries(r.byTag))
    for (const [t, g] of Object.entries(types)) rows.push(row(`tag ${tag} · ${t}`, g, i));
  for (const [id, g] of Object.entries(r.byQuestion)) rows.push(row(`question ${id} (${g.type})`, g, i));
  return rows;
}

/** Why "enough answers?" says no, and how many would do, for one budget. */
export function enoughNote(budget: number): string {
  return (
    `A coverage figure means something when the kept answers' error rate is shown within ` +
    `${pct(budget)}: its one-sided 95% (Clopper–Pearson) upper bound must be ≤ ${pct(budget)}. ` +
    (`Even with no error that takes ${minKeptForBudget(budget)} kept answers (⌈ln 0.05 / ln(1 − ` +
      `${budget})⌉), so about ${minKeptForBudget(budget)} ÷ coverage labeled answers of the ` +
      `group ("~N needed"; at least ${minKeptForBudget(budget)} where none is kept).`)
  );
}

/** The coverage section as markdown. */
export function coverageMarkdown(r: CoverageReport): string[] {
  const parts: string[] = [];
  r.budgets.forEach((b, i) => {
    parts.push(
      '',
      `## Coverage at ${pct(b)} error`,
      '',
      `The largest share of answers kept (certainty ≥ threshold) with at most ${pct(b)} of the ` +
        `kept answers wrong (score: right within ${r.scoreTolerance} of the labeled level).`,
      '',
      `| ${COVERAGE_HEAD.join(' | ')} |`,
      `|${COVERAGE_HEAD.map(() => '---').join('|')}|`,
      ...coverageRows(r, i).map((c) => `| ${c.join(' | ')} |`),
      '',
      enoughNote(b),
      '',
      `Thresholds (report.json \`coverage.thresholds["${b}"]\`, an escalating model's \`below\` as is): \`${JSON.stringify(r.thresholds[String(b)])}\``,
    );
  });
  return parts;
}
