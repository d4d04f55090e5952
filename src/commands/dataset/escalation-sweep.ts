// `assay eval --dataset … --model ESCALATING`: besides the entry's own run, its first and second
// models answer every line, and the accuracy an escalation would give is computed for a sweep of
// thresholds (the same for every type), the entry's own and any loaded from a coverage report, next
// to the share of questions it would re-ask: the trade-off an operator picks a threshold from.
import { readFileSync } from 'node:fs';
import type { Answer } from '../../protocol/index.js';
import { answerCorrect } from '../../quality/index.js';
import type { EscalationSpec } from '../../registry/index.js';
import { shouldEscalate } from '../../service/index.js';
import type { Io } from '../common.js';
import { DatasetError, type DatasetLine } from './read.js';
import { runDataset } from './run.js';
import { openTarget, type TargetContext } from './targets.js';

type Below = EscalationSpec['below'];
const TYPES = ['noul', 'choice', 'score'] as const;

export interface SweepRow {
  label: string;
  below: Below;
  questions: number;
  escalated: number;
  /** Share of the questions re-asked. */
  rate: number;
  /** Share right (noul and choice: the decision; score: within the tolerance of the label). */
  accuracy: number;
  byType: Partial<Record<(typeof TYPES)[number], { questions: number; escalated: number; accuracy: number }>>;
}

/** The sweep's thresholds: none escalated, 0.1 … 0.9 for every type, all escalated. */
export function uniformRows(): Array<{ label: string; below: Below }> {
  const rows: Array<{ label: string; below: Below }> = [{ label: 'first model only', below: {} }];
  for (let t = 1; t <= 9; t++)
    rows.push({ label: `certainty < ${t / 10}`, below: { noul: t / 10, choice: t / 10, score: t / 10 } });
  rows.push({ label: 'second model only', below: { noul: null, choice: null, score: null } });
  return rows;
}

/** Thresholds from a coverage report's report.json (`coverage.thresholds`), one row per budget; FILE#0.05 picks one. */
export function thresholdsFromReport(spec: string): Array<{ label: string; below: Below }> {
  const [file, budget] = spec.split('#') as [string, string | undefined];
  let report: { coverage?: { thresholds?: Record<string, Below> } };
  try {
    report = JSON.parse(readFileSync(file, 'utf8')) as typeof report;
  } catch (e) {
    throw new DatasetError(`--thresholds ${file}: ${(e as Error).message}`);
  }
  const all = report.coverage?.thresholds;
  if (!all)
    throw new DatasetError(`${file} holds no coverage.thresholds (write it with assay eval --dataset … --out DIR)`);
  const picked = budget === undefined ? Object.entries(all) : all[budget] ? [[budget, all[budget]] as const] : [];
  if (!picked.length)
    throw new DatasetError(`${file}: no thresholds for budget ${budget} (it has ${Object.keys(all).join(', ')})`);
  return picked.map(([b, below]) => ({ label: `coverage report, ${+(Number(b) * 100).toFixed(2)}% budget`, below }));
}

/** The answers an escalation with `below` would give, scored against the labels. */
export function sweep(
  lines: DatasetLine[],
  first: Array<Record<string, Answer>>,
  second: Array<Record<string, Answer>>,
  rows: Array<{ label: string; below: Below }>,
  scoreTolerance: number,
): SweepRow[] {
  return rows.map(({ label, below }) => {
    const byType: SweepRow['byType'] = {};
    let [questions, escalated, right] = [0, 0, 0];
    lines.forEach((line, i) => {
      for (const id of Object.keys(line.questions)) {
        const a = first[i]![id]!;
        const up = shouldEscalate(a, below);
        const ok = answerCorrect(up ? second[i]![id]! : a, line.expected[id], scoreTolerance);
        const t = (byType[a.type] ??= { questions: 0, escalated: 0, accuracy: 0 });
        t.questions++;
        t.escalated += Number(up);
        t.accuracy += Number(ok);
        questions++;
        escalated += Number(up);
        right += Number(ok);
      }
    });
    for (const t of Object.values(byType)) t.accuracy /= t.questions;
    return { label, below, questions, escalated, rate: escalated / questions, accuracy: right / questions, byType };
  });
}

const f3 = (x: number) => x.toFixed(3);

/** The sweep as a table (header and cells) and the sentences around it, for report.md and report.html. */
export function sweepTable(
  rows: SweepRow[],
  firstName: string,
  secondName: string,
  measured?: { escalated: number; questions: number; predicted: number },
) {
  const types = TYPES.filter((t) => rows[0]?.byType[t]);
  return {
    intro:
      `${firstName} answers; a question whose certainty (noul max(p, 1 − p), choice and score ` +
      `confidence) is under its type's threshold is re-asked to ${secondName}. Both answered ` +
      `every line; each row scores the answers that escalation would return.`,
    head: ['thresholds', 'below', 'escalated', 'accuracy', ...types.map((t) => `${t} accuracy (escalated)`)],
    rows: rows.map((r) => [
      r.label,
      JSON.stringify(r.below),
      `${r.escalated} of ${r.questions} (${(100 * r.rate).toFixed(1)}%)`,
      f3(r.accuracy),
      ...types.map((t) => `${f3(r.byType[t]!.accuracy)} (${r.byType[t]!.escalated})`),
    ]),
    note: measured
      ? `Through the service, the entry re-asked ${measured.escalated} of ${measured.questions} ` +
        `questions (its thresholds predict ${measured.predicted} from the first model's answers).`
      : '',
  };
}

/** The sweep as markdown. */
export function sweepMarkdown(t: ReturnType<typeof sweepTable>): string[] {
  return [
    '',
    `## Escalation: accuracy against escalation rate`,
    '',
    t.intro,
    '',
    `| ${t.head.join(' | ')} |`,
    `|${t.head.map(() => '---').join('|')}|`,
    ...t.rows.map((r) => `| ${r.map((c, i) => (i === 1 ? `\`${c}\`` : c)).join(' | ')} |`),
    ...(t.note ? ['', t.note] : []),
  ];
}

/**
 * Runs the entry's first and second models on every line (the second: a registered model on the
 * local engine, or the remote endpoint with its key from the environment) and sweeps thresholds.
 */
export async function runEscalationSweep(
  o: {
    id: string;
    spec: EscalationSpec;
    lines: DatasetLine[];
    scoreTolerance: number;
    thresholdsFile?: string;
    measured?: { escalated: number; questions: number };
  },
  ctx: TargetContext,
  io: Io,
): Promise<{ markdown: string[]; table: ReturnType<typeof sweepTable>; rows: SweepRow[] }> {
  const rows = [
    ...uniformRows(),
    { label: `${o.id}'s own`, below: o.spec.below },
    ...(o.thresholdsFile ? thresholdsFromReport(o.thresholdsFile) : []),
  ];
  const answers: Array<Array<Record<string, Answer>>> = [];
  const names: string[] = [];
  for (const model of [o.spec.first, o.spec.second]) {
    const remote = typeof model === 'string' ? undefined : model;
    const target = remote
      ? await openTarget(
          { label: remote.model, model: remote.model },
          {
            ...ctx,
            url: remote.url,
            io: { ...io, env: { ...io.env, ASSAY_API_KEY: remote.api_key_env ? io.env[remote.api_key_env] : 'none' } },
          },
        )
      : await openTarget({ label: model as string, model: model as string }, { ...ctx, url: undefined });
    try {
      answers.push((await runDataset(target, o.lines, io, remote ? 4 : 1)).responses.map((r) => r.answers));
      names.push(remote ? `${remote.model} at ${remote.url}` : target.model);
    } finally {
      await target.close();
    }
  }
  const swept = sweep(o.lines, answers[0]!, answers[1]!, rows, o.scoreTolerance);
  const own = swept.find((r) => r.label === `${o.id}'s own`)!;
  const measured = o.measured ? { ...o.measured, predicted: own.escalated } : undefined;
  const table = sweepTable(swept, names[0]!, names[1]!, measured);
  return { markdown: sweepMarkdown(table), table, rows: swept };
}
