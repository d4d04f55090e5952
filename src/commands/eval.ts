// assay eval --state FILE|- --questions FILE [--url URL] [--model M] [--format json|table]
//
// Evaluates questions against a state, either on a local engine (the registry's model, loaded in
// this process) or on a running server (--url, through the client SDK), and prints the answers.
import { readFile } from 'node:fs/promises';
import { AssayClient } from '../client/index.js';
import { InvalidRequestError, ParsedBody, questionOrder, sentOrder, sentQuestionsOrder } from '../protocol/index.js';
import type { Answer, SentOrder, SystemOneRequest, SystemOneResponse, ValidationError } from '../protocol/index.js';
import { keysInOrder, requestErrors, writeResponse } from '../protocol/index.js';
import { DEFAULT_FAMILY, FAMILIES, FAMILY_NAMES } from '../engine/index.js';
import { evaluateRequest } from '../service/index.js';
import { loadRegistry, resolveModel } from '../registry/index.js';
import { openLocalModel } from './local-model.js';
import { commandFlags, COMMON_FLAGS } from '../config/index.js';
import { DEFAULT_RESAMPLES, DEFAULT_SEED } from '../quality/index.js';
import { DEFAULT_BUDGETS, DEFAULT_SCORE_TOLERANCE } from './dataset/coverage-report.js';
import {
  describeError,
  NO_KEY,
  parseCommand,
  parseFormat,
  resolveIo,
  serverTarget,
  table,
  type CommandIo,
  type Io,
} from './common.js';

/** A family with a prompt contract of its own, for --compare's example. */
const CONTRACT_FAMILY = FAMILIES.find((f) => f.contract)?.name ?? DEFAULT_FAMILY;

const FLAGS = commandFlags({
  head: `Usage: assay eval --state FILE|- --questions FILE [options]
       assay eval --dataset FILE.jsonl [--model M | --shape S | --url URL] [--error-budget P]...
                  [--compare A,B [--fail-if-worse]] [--out DIR]

Answers the questions about the state and prints one answer per question.
`,
  flags: {
    state: {
      arg: 'FILE|-',
      doc: `the state: a JSON file (string, object or array) or plain text; - reads stdin.
Text that is not JSON is sent as a string (one trailing newline removed).`,
    },
    questions: {
      arg: 'FILE',
      doc: `JSON: the questions map {"<id>": {"type": "noul"|"choice"|"score", ...}},
or a request body holding one under "questions"`,
    },
    url: COMMON_FLAGS.url('ask a running server instead of a local engine', 'the local engine'),
    key: COMMON_FLAGS.key(),
    model: COMMON_FLAGS.model("model name or alias (default: the registry's default; with --url, svc-latest)"),
    registry: COMMON_FLAGS.registry('local engine: model registry'),
    format: COMMON_FLAGS.format('json'),
    batch: {
      doc: `with --dataset --url: send the lines as one batch (POST /v1/batches)
instead of a request each; the same answers and reports`,
    },
    timeout: { arg: 'MS', doc: 'with --url: per-attempt timeout (default 180000)' },
    retries: { arg: 'N', doc: 'with --url: retries on 408/429/5xx/529 (default 2)' },
    dataset: {
      arg: 'FILE',
      doc: `a labeled JSONL dataset (one request a line, plus "expected" per question and
optional "tags"): quality metrics per type and tag, on the local engine or
a server (--url), and coverage at an error budget: the largest share of
answers kept (certainty >= a threshold) with the kept answers' error rate
within the budget, and that threshold, per type, tag and question id`,
    },
    'error-budget': {
      arg: 'P',
      multiple: true,
      doc: `with --dataset: an error budget, a share (0.05) or a percentage (5%);
repeatable (default ${DEFAULT_BUDGETS.map((b) => `${b * 100}%`).join(', ')})`,
    },
    'score-tolerance': {
      arg: 'L',
      doc: `with --dataset: a score answer counts as right when its score is within L
levels of the label (default ${DEFAULT_SCORE_TOLERANCE}: it rounds to the label)`,
    },
    compare: {
      arg: 'A,B',
      doc: `with --dataset: run two arms on the same lines: the answers that flip, and
the differences B - A in accuracy, coverage at the budget and ECE with paired
bootstrap 95% intervals. An arm is parts joined by "+": a registry model, a
variant (fp32, int8, q4, ...), a prompt version (v1 = option names, letters =
A, B, C...), rotN (choice options over N rotations, averaged) or a model family
(${FAMILY_NAMES.join(', ')}: the folder run as that family, e.g. a
prompt contract against ${DEFAULT_FAMILY}, Assay's generic prompt). e.g.
int8,fp32, v1,letters, ${CONTRACT_FAMILY},${DEFAULT_FAMILY}; with --url, two model names
(svc-1.13.0,svc-latest)`,
    },
    'fail-if-worse': {
      doc: `with --compare: exit 1 when B is worse than A beyond the interval (accuracy or
coverage at a budget, any type); 0 otherwise, a tie included`,
    },
    thresholds: {
      arg: 'FILE',
      doc: `with --dataset and an escalating --model: add the thresholds of a coverage
report (its report.json; FILE#0.05 for one budget) to the sweep of accuracy
against escalation rate that such a model prints`,
    },
    resamples: { arg: 'N', doc: `with --compare: bootstrap resamples (default ${DEFAULT_RESAMPLES})` },
    seed: { arg: 'N', doc: `with --compare: bootstrap seed (default ${DEFAULT_SEED})` },
    shape: {
      arg: 'S',
      doc: `with --dataset: a synthetic model of this shape (models/shapes.json) instead
of a registry model, e.g. --shape qwen2.5-0.5b --compare int8,fp32`,
    },
    out: {
      arg: 'DIR',
      doc: `with --dataset: also write report.md, report.json (coverage.thresholds: per
budget, per type, the threshold to load as is), report.html, the reliability
diagrams and the risk-coverage curves (SVG) there`,
    },
  },
  column: 22,
  tail: `Exit status: 0 answered, 1 the evaluation failed (or, with --fail-if-worse, B is worse than A),
2 bad arguments or input files.`,
});

/** An error budget: a share in (0, 1) or a percentage ("5%"). */
function parseBudget(text: string): number | undefined {
  const pct = text.endsWith('%');
  const v = Number(pct ? text.slice(0, -1) : text) / (pct ? 100 : 1);
  return text.trim() !== '' && v > 0 && v < 1 ? v : undefined;
}

export async function run(argv: string[], ioOptions?: CommandIo): Promise<number> {
  const io = resolveIo(ioOptions);
  const parsed = parseCommand('eval', FLAGS, argv, io);
  if (typeof parsed === 'number') return parsed;
  const { values } = parsed;
  const format = parseFormat(values.format, 'json');
  if (!format) return usage(io, `--format must be json or table, not "${values.format}"`);
  const { url, key } = serverTarget(values, io.env);
  if (url && !key) return usage(io, NO_KEY);
  const timeoutMs = optionalNumber(values.timeout);
  const retries = optionalNumber(values.retries);
  if (Number.isNaN(timeoutMs) || Number.isNaN(retries)) return usage(io, '--timeout and --retries take numbers');
  if (values.dataset) {
    if (values.shape && url) return usage(io, '--shape runs a local synthetic model: not with --url');
    if (values.batch && !url) return usage(io, '--batch sends the dataset to a server: it goes with --url');
    const budgets = (values['error-budget'] ?? []).map(parseBudget);
    if (budgets.some((b) => b === undefined))
      return usage(io, '--error-budget takes a share between 0 and 1 (0.05) or a percentage (5%)');
    const scoreTolerance = optionalNumber(values['score-tolerance']);
    if (scoreTolerance !== undefined && !(scoreTolerance >= 0))
      return usage(io, '--score-tolerance takes a number of levels ≥ 0, e.g. 0.5');
    const resamples = optionalNumber(values.resamples);
    const seed = optionalNumber(values.seed);
    if (
      (resamples !== undefined && !(Number.isInteger(resamples) && resamples >= 1)) ||
      (seed !== undefined && !Number.isInteger(seed))
    ) {
      return usage(io, '--resamples and --seed take whole numbers (resamples ≥ 1)');
    }
    if (values['fail-if-worse'] && !values.compare) return usage(io, '--fail-if-worse goes with --compare A,B');
    const { evalDataset } = await import('./eval-dataset.js');
    return evalDataset(
      {
        file: values.dataset,
        model: values.model,
        registryFile: parsed.registry,
        out: values.out,
        url,
        batch: values.batch,
        compare: values.compare,
        shape: values.shape,
        timeoutMs,
        retries,
        budgets: budgets as number[],
        scoreTolerance,
        failIfWorse: values['fail-if-worse'],
        thresholdsFile: values.thresholds,
        resamples,
        seed,
      },
      // The server's clients read the key the command resolved (--key, else ASSAY_API_KEY).
      { ...io, env: { ...io.env, ASSAY_API_KEY: key } },
    );
  }
  if (values.compare || values.shape || values['error-budget'] || values['fail-if-worse'] || values.batch)
    return usage(io, '--compare, --shape, --error-budget, --fail-if-worse and --batch go with --dataset');
  if (!values.state || !values.questions) return usage(io, 'both --state and --questions are required');

  let state: unknown;
  let questions: unknown;
  let sent: SentOrder | undefined;
  try {
    state = await readState(values.state, io);
    ({ questions, sent } = await readQuestions(values.questions));
  } catch (e) {
    io.err(`assay eval: ${(e as Error).message}\n`);
    return 2;
  }

  let response: SystemOneResponse;
  let order: SentOrder | undefined;
  try {
    if (url) {
      const client = new AssayClient({ baseUrl: url, apiKey: key, timeoutMs, maxRetries: retries });
      const body = { state, questions, ...(values.model ? { model: values.model } : {}) } as SystemOneRequest;
      // Sent as the file lists them (a valid request's order; the server checks the rest).
      order = requestErrors({ ...body, model: '' }).length ? undefined : questionOrder(body.questions, sent);
      response = await client.evaluate(body, { order });
    } else {
      const local = await evaluateLocally(state, questions, sent, values.model, parsed.registry, io);
      if (typeof local === 'number') return local;
      ({ response, order } = local);
    }
  } catch (e) {
    io.err(`assay eval: ${describeError(e)}\n`);
    return 1;
  }
  // In the order the file listed the questions and options (a parsed object lists "1" before "3").
  io.out(format === 'json' ? `${indentJson(writeResponse(response, order))}\n` : `${answersTable(response, order)}\n`);
  return 0;
}

/** Compact JSON (as JSON.stringify writes it) laid out as JSON.stringify(value, null, 2) would, keys in the order written. */
export function indentJson(compact: string): string {
  let out = '';
  let depth = 0;
  const newline = () => `\n${'  '.repeat(depth)}`;
  for (let i = 0; i < compact.length; i++) {
    const c = compact[i]!;
    if (c === '"') {
      let j = i + 1;
      while (compact[j] !== '"') j += compact[j] === '\\' ? 2 : 1;
      out += compact.slice(i, j + 1);
      i = j;
    } else if (c === '{' || c === '[') {
      if (compact[i + 1] === (c === '{' ? '}' : ']')) {
        out += compact.slice(i, i + 2);
        i++;
      } else {
        depth++;
        out += c + newline();
      }
    } else if (c === '}' || c === ']') {
      depth--;
      out += newline() + c;
    } else if (c === ',') out += `,${newline()}`;
    else if (c === ':') out += ': ';
    else out += c;
  }
  return out;
}

async function evaluateLocally(
  state: unknown,
  questions: unknown,
  sent: SentOrder | undefined,
  model: string | undefined,
  file: string,
  io: Io,
): Promise<{ response: SystemOneResponse; order: SentOrder } | number> {
  const registry = loadRegistry(file);
  const name = model ?? registry.default;
  const resolved = resolveModel(registry, name);
  if (!resolved) return usage(io, `model "${name}" is not in the registry ${registry.file}`);
  // The same validation the server does, reported the way it reports it (422 detail entries),
  // before any model is loaded.
  const body = { state, model: name, questions };
  const invalid = requestErrors(body);
  if (invalid.length) return invalidRequest(io, invalid);
  const pool = await openLocalModel(registry, resolved, io);
  try {
    // The server's own service function: validate, resolve, evaluate, check the answers; the
    // questions and options in the order the file lists them.
    const { response, order } = await evaluateRequest({ registry, models: pool }, new ParsedBody(body, sent));
    return { response, order };
  } catch (e) {
    if (e instanceof InvalidRequestError) return invalidRequest(io, e.detail);
    throw e;
  } finally {
    await pool.close();
  }
}

function invalidRequest(io: Io, detail: ValidationError[]): number {
  const lines = detail.map((d) => `  ${d.loc.join('.')}: ${d.msg} (${d.type})`);
  io.err(`assay eval: the request is not valid:\n${lines.join('\n')}\n`);
  return 2;
}

async function readState(source: string, io: Io): Promise<unknown> {
  const text =
    source === '-'
      ? await readAll(io.stdin)
      : await readFile(source, 'utf8').catch((e: NodeJS.ErrnoException) => {
          throw new Error(`cannot read --state ${source}: ${e.code ?? e.message}`);
        });
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v === 'string' || (typeof v === 'object' && v !== null)) return v;
  } catch {
    // not JSON: plain text
  }
  return text.replace(/\r?\n$/, '');
}

/** The questions of a file, and the order it lists them and their options in (protocol/order.ts). */
async function readQuestions(file: string): Promise<{ questions: unknown; sent: SentOrder | undefined }> {
  const text = await readFile(file, 'utf8').catch((e: NodeJS.ErrnoException) => {
    throw new Error(`cannot read --questions ${file}: ${e.code ?? e.message}`);
  });
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new Error(`--questions ${file} is not JSON: ${(e as Error).message}`, { cause: e });
  }
  // A whole request body: take its questions (a question keyed "questions" has a "type").
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    const q = (v as Record<string, unknown>).questions;
    if (q && typeof q === 'object' && !Array.isArray(q) && !('type' in q))
      return { questions: q, sent: sentOrder(text) };
  }
  return { questions: v, sent: sentQuestionsOrder(text) };
}

async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(typeof c === 'string' ? Buffer.from(c) : (c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/** QUESTION TYPE ANSWER CONFIDENCE DISTRIBUTION, one row per question, in the request's order. */
export function answersTable(r: SystemOneResponse, order?: SentOrder): string {
  const rows = [['QUESTION', 'TYPE', 'ANSWER', 'CONFIDENCE', 'PROBABILITIES']];
  // Questions and options in the request's order (an object lists "1" before "3" whatever was sent).
  const options = new Map(order?.map((q) => [q.id, q.options]));
  for (const id of keysInOrder(
    r.answers,
    order?.map((q) => q.id),
  )) {
    const a = r.answers[id]!;
    rows.push([id, a.type, answerText(a), confidenceText(a), distribution(a, options.get(id))]);
  }
  const head = `model ${r.model}   input_tokens ${r.usage.input_tokens}   output_tokens ${r.usage.output_tokens}`;
  return `${head}\n${table(rows)}`;
}

function answerText(a: Answer): string {
  if (a.type === 'noul') return `${a.noul >= 0.5 ? 'yes' : 'no'} (p_yes ${a.noul.toFixed(3)})`;
  if (a.type === 'choice') return a.choice;
  return `${a.score.toFixed(2)} of ${Object.keys(a.legend).length - 1}`;
}

function confidenceText(a: Answer): string {
  return a.type === 'noul' ? '-' : a.confidence.toFixed(3);
}

function distribution(a: Answer, options: string[] | undefined): string {
  if (a.type === 'noul') return `yes ${a.noul.toFixed(3)}  no ${(1 - a.noul).toFixed(3)}`;
  return keysInOrder(a.probabilities, a.type === 'choice' ? options : undefined)
    .map((k) => `${k} ${a.probabilities[k]!.toFixed(3)}`)
    .join('  ');
}

function optionalNumber(v: string | undefined): number | undefined {
  return v === undefined ? undefined : Number(v);
}

function usage(io: Io, message: string): number {
  io.err(`assay eval: ${message}\n\nRun assay eval --help for usage.\n`);
  return 2;
}
