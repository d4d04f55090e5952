// assay eval --dataset FILE: every line of a labeled JSONL dataset through the local engine (the
// same service function the server runs), then the quality metrics per question type and per tag
// (src/quality/metrics.ts), printed as markdown and, with --out DIR, written as report.md and
// report.json.
//
// A line: {"state": ..., "questions": {...} (exactly as the API takes them), "expected": {"<id>":
// true|false (noul) | "<option>" (choice) | <level> (score)}, "tags": ["..."] (optional)}.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Answer, Question } from '../protocol/schemas.js';
import { requestErrors } from '../protocol/validate.js';
import { choiceMetrics, noulMetrics, scoreMetrics, type ChoiceExample, type NoulExample, type ScoreExample } from '../quality/metrics.js';
import { reliabilitySvg } from '../quality/reliability-svg.js';
import { loadRegistry, resolveModel } from '../registry.js';
import { evaluateRequest } from '../service/evaluate.js';
import type { Io } from './common.js';
import { openLocalModel } from './local-model.js';

interface DatasetLine {
  state: unknown;
  questions: Record<string, Question>;
  expected: Record<string, unknown>;
  tags: string[];
}

class DatasetError extends Error {}

/** Parses and checks every line (request shape, one label per question of the right kind). */
export function readDataset(file: string, model: string): DatasetLine[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new DatasetError(`cannot read --dataset ${file}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  const out: DatasetLine[] = [];
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return;
    const where = `${file}:${i + 1}`;
    let v: { state?: unknown; questions?: unknown; expected?: unknown; tags?: unknown };
    try {
      v = JSON.parse(raw) as typeof v;
    } catch (e) {
      throw new DatasetError(`${where}: not JSON (${(e as Error).message})`);
    }
    const invalid = requestErrors({ state: v.state, model, questions: v.questions });
    if (invalid.length) throw new DatasetError(`${where}: ${invalid.map((d) => `${d.loc.slice(1).join('.')}: ${d.msg}`).join('; ')}`);
    const questions = v.questions as Record<string, Question>;
    const expected = (v.expected ?? {}) as Record<string, unknown>;
    for (const [id, q] of Object.entries(questions)) {
      const e = expected[id];
      const ok =
        q.type === 'noul'
          ? typeof e === 'boolean'
          : q.type === 'choice'
            ? typeof e === 'string' && Object.prototype.hasOwnProperty.call(q.criteria, e)
            : Number.isInteger(e) && (e as number) >= 0 && (e as number) < q.criteria.length;
      if (!ok) throw new DatasetError(`${where}: expected.${id} must be ${q.type === 'noul' ? 'true or false' : q.type === 'choice' ? 'one of the option names' : `a level from 0 to ${q.criteria.length - 1}`}`);
    }
    const tags = Array.isArray(v.tags) ? v.tags.map(String) : [];
    out.push({ state: v.state, questions, expected, tags });
  });
  if (out.length === 0) throw new DatasetError(`${file}: no lines`);
  return out;
}

interface Collected {
  noul: NoulExample[];
  choice: ChoiceExample[];
  score: ScoreExample[];
}

function collect(into: Collected, q: Question, a: Answer, expected: unknown): void {
  if (q.type === 'noul' && a.type === 'noul') into.noul.push({ p: a.noul, expected: expected as boolean });
  else if (q.type === 'choice' && a.type === 'choice') into.choice.push({ probabilities: a.probabilities, expected: expected as string });
  else if (q.type === 'score' && a.type === 'score') into.score.push({ probabilities: a.probabilities, expected: expected as number });
}

function metricsOf(c: Collected) {
  return {
    ...(c.noul.length ? { noul: noulMetrics(c.noul) } : {}),
    ...(c.choice.length ? { choice: choiceMetrics(c.choice) } : {}),
    ...(c.score.length ? { score: scoreMetrics(c.score) } : {}),
  };
}

const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '–');

function markdown(report: ReturnType<typeof buildReport>): string {
  const rows = (m: ReturnType<typeof metricsOf>) => [
    ...(m.noul ? [`| noul | ${m.noul.count} | ${f3(m.noul.accuracy)} | ${f3(m.noul.brier)} | ${f3(m.noul.logLoss)} | ${f3(m.noul.ece)} | – |`] : []),
    ...(m.choice ? [`| choice | ${m.choice.count} | ${f3(m.choice.accuracy)} | ${f3(m.choice.brier)} | ${f3(m.choice.logLoss)} | ${f3(m.choice.ece)} | – |`] : []),
    ...(m.score ? [`| score | ${m.score.count} | ${f3(m.score.exactAccuracy)} | – | – | – | ${f3(m.score.mae)} |`] : []),
  ];
  const head = '| type | answers | accuracy | Brier | log loss | ECE (15 equal-mass bins) | score MAE |\n|---|---|---|---|---|---|---|';
  const parts = [
    `# assay eval --dataset ${report.dataset}`,
    '',
    ...(report.synthetic ? ['> **This model is synthetic (random weights): its answers, and so these metrics, mean nothing.** Register a real model to measure quality.', ''] : []),
    `Model ${report.model}; ${report.lines} lines, ${report.answers} labeled answers; ${report.usage.input_tokens} input tokens; ${report.seconds} s.`,
    '',
    head,
    ...rows(report.metrics),
  ];
  for (const [tag, m] of Object.entries(report.byTag)) parts.push('', `## tag \`${tag}\``, '', head, ...rows(m));
  return `${parts.join('\n')}\n`;
}

function buildReport(dataset: string, model: string, synthetic: boolean, all: Collected, byTag: Map<string, Collected>, lines: number, inputTokens: number, seconds: number) {
  return {
    dataset,
    model,
    synthetic,
    lines,
    answers: all.noul.length + all.choice.length + all.score.length,
    usage: { input_tokens: inputTokens },
    seconds: Math.round(seconds * 10) / 10,
    metrics: metricsOf(all),
    byTag: Object.fromEntries([...byTag].map(([t, c]) => [t, metricsOf(c)])),
  };
}

/** Runs the dataset on the local engine; returns the exit status. */
export async function evalDataset(file: string, modelName: string | undefined, registryFile: string, out: string | undefined, io: Io): Promise<number> {
  const registry = loadRegistry(registryFile);
  const name = modelName ?? registry.default;
  const resolved = resolveModel(registry, name);
  if (!resolved) {
    io.err(`assay eval: model "${name}" is not in the registry ${registry.file}\n`);
    return 2;
  }
  let lines: DatasetLine[];
  try {
    lines = readDataset(file, name);
  } catch (e) {
    if (!(e instanceof DatasetError)) throw e;
    io.err(`assay eval: ${(e as Error).message}\n`);
    return 2;
  }
  const started = performance.now();
  const pool = await openLocalModel(registry, resolved, io);
  try {
    const evaluator = await pool.load(resolved.id);
    const all: Collected = { noul: [], choice: [], score: [] };
    const byTag = new Map<string, Collected>();
    let inputTokens = 0;
    for (const [i, line] of lines.entries()) {
      const { response } = await evaluateRequest({ registry, models: pool }, { state: line.state, model: name, questions: line.questions });
      inputTokens += response.usage.input_tokens;
      for (const [id, q] of Object.entries(line.questions)) {
        const a = response.answers[id]!;
        collect(all, q, a, line.expected[id]);
        for (const t of line.tags) {
          if (!byTag.has(t)) byTag.set(t, { noul: [], choice: [], score: [] });
          collect(byTag.get(t)!, q, a, line.expected[id]);
        }
      }
      io.err(`\rassay eval: ${i + 1}/${lines.length} lines`);
    }
    io.err('\n');
    const report = buildReport(file, resolved.id, evaluator.synthetic === true, all, byTag, lines.length, inputTokens, (performance.now() - started) / 1000);
    const md = markdown(report);
    io.out(md);
    if (out) {
      mkdirSync(out, { recursive: true });
      writeFileSync(join(out, 'report.md'), md);
      writeFileSync(join(out, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
      const plots: string[] = [];
      for (const type of ['noul', 'choice'] as const) {
        const m = report.metrics[type];
        if (!m) continue;
        writeFileSync(join(out, `reliability-${type}.svg`), reliabilitySvg(`${type}: ${report.model}`, m.reliability, m.ece));
        plots.push(`reliability-${type}.svg`);
      }
      io.err(`assay eval: wrote ${join(out, 'report.md')}, report.json${plots.map((p) => `, ${p}`).join('')}\n`);
    }
    return 0;
  } finally {
    await pool.close();
  }
}
