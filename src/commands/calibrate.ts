// assay calibrate --dataset FILE [--model M] [--holdout 0.3] [--write [--force]]: fits one temperature
// per question type (src/quality/calibration.ts) on a training split of a labeled dataset, reports log
// loss and expected calibration error on the held-out split before and after, and, only with
// --write, writes the temperatures into the model folder's assay.json (`answer_temperature`), which
// the engine applies at its next load. A temperature that makes the held-out split worse (its log
// loss or ECE rises) is not written unless --force says so. The fit multiplies the temperatures the model already has, so calibrating
// twice converges instead of starting over.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Answer, Question } from '../protocol/index.js';
import { fitTemperature, meanLogLoss, split, withTemperature, type CalibrationExample } from '../quality/index.js';
import { choiceMetrics } from '../quality/index.js';
import { loadRegistry, writeJsonAtomic } from '../registry/index.js';
import { commandFlags, commandHelp, COMMON_FLAGS } from '../config/index.js';
import { parseCommand, resolveIo, type CommandIo, type Io } from './common.js';
import { DatasetError, readDataset, type DatasetLine } from './dataset/read.js';
import { runDataset } from './dataset/run.js';
import { ArmError, openTarget } from './dataset/targets.js';

/** The split's defaults. */
const HOLDOUT = 0.3;
const SEED = 1;

const FLAGS = commandFlags({
  head: `Usage: assay calibrate --dataset FILE.jsonl [--model M] [--registry FILE] [--holdout ${HOLDOUT}] [--seed N] [--write [--force]]

Fits one temperature per question type (noul, choice, score) on a training split of a labeled
dataset (the format of assay eval --dataset), minimising log loss, and reports log loss and expected
calibration error (15 equal-mass bins) on the held-out split before and after: what it would change.
With --write it writes the temperatures into the model's assay.json ("answer_temperature"), which
the server applies at its next start; a temperature that makes the held-out split worse (log loss
or ECE up) is not written unless --force. A type with fewer than 10 training answers keeps its
temperature.
`,
  flags: {
    dataset: { arg: 'FILE', doc: 'labeled JSONL: one request a line plus "expected" per question' },
    model: COMMON_FLAGS.model("model name or alias (default: the registry's default)"),
    registry: COMMON_FLAGS.registry('model registry'),
    holdout: { arg: 'F', doc: `share of the lines held out for the report (default ${HOLDOUT}); split by line` },
    seed: { arg: 'N', doc: `seed of the split (default ${SEED})` },
    write: { doc: "write the temperatures that improve the held-out split into the model's assay.json" },
    force: { doc: 'with --write: write every fitted temperature, also one that makes the held-out split worse' },
    'dry-run': { doc: 'report only (the default without --write; kept for scripts that pass it)' },
  },
  column: 19,
  tail: 'Exit status: 0 done, 1 the evaluation failed, 2 bad arguments or input files.',
});

const TYPES = ['noul', 'choice', 'score'] as const;
type QuestionType = (typeof TYPES)[number];
const MIN_TRAIN = 10;

/** One answer's outcome probabilities (in the question's outcome order) and the labeled outcome's index. */
function example(q: Question, a: Answer, expected: unknown): CalibrationExample {
  if (a.type === 'noul') return { probs: [a.noul, 1 - a.noul], expected: expected === true ? 0 : 1 };
  const keys = q.type === 'choice' ? Object.keys(q.criteria) : Object.keys(a.probabilities);
  return { probs: keys.map((k) => a.probabilities[k] ?? 0), expected: keys.indexOf(String(expected)) };
}

/** Top-outcome ECE (15 equal-mass bins) of the examples at temperature t. */
function ece(examples: CalibrationExample[], t: number): number {
  return choiceMetrics(
    examples.map((e) => ({
      probabilities: Object.fromEntries(withTemperature(e.probs, t).map((p, i) => [String(i), p])),
      expected: String(e.expected),
    })),
  ).ece;
}

export interface TypeCalibration {
  type: QuestionType;
  train: number;
  heldOut: number;
  /** The fitted factor on the temperature the model had. */
  fitted: number;
  /** The model's temperature for the type before and after. */
  before: number;
  after: number;
  heldOutLogLoss: [number, number];
  heldOutEce: [number, number];
  applied: boolean;
}

/** Whether the fitted temperature makes the held-out split worse: its log loss or its ECE rises. */
export const worseHeldOut = (r: TypeCalibration) =>
  r.heldOutLogLoss[1] > r.heldOutLogLoss[0] || r.heldOutEce[1] > r.heldOutEce[0];

export function calibrateRuns(
  lines: DatasetLine[],
  answers: Array<Record<string, Answer>>,
  heldOutShare: number,
  seed: number,
  current: Partial<Record<QuestionType, number>>,
): TypeCalibration[] {
  const { train, heldOut } = split(lines.length, heldOutShare, seed);
  const byType = (indices: number[], type: QuestionType) =>
    indices.flatMap((i) =>
      Object.entries(lines[i]!.questions)
        .filter(([, q]) => q.type === type)
        .map(([id, q]) => example(q, answers[i]![id]!, lines[i]!.expected[id])),
    );
  return TYPES.flatMap((type) => {
    const tr = byType(train, type);
    const ho = byType(heldOut, type);
    if (tr.length + ho.length === 0) return [];
    const applied = tr.length >= MIN_TRAIN;
    const fitted = applied ? fitTemperature(tr) : 1;
    const before = current[type] ?? 1;
    return [
      {
        type,
        train: tr.length,
        heldOut: ho.length,
        fitted,
        before,
        after: before * fitted,
        heldOutLogLoss: [meanLogLoss(ho, 1), meanLogLoss(ho, fitted)],
        heldOutEce: [ece(ho, 1), ece(ho, fitted)],
        applied,
      },
    ];
  });
}

const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '–');

function markdown(
  file: string,
  model: string,
  synthetic: boolean,
  results: TypeCalibration[],
  written: string | undefined,
  mode: { write: boolean; force: boolean; manifest: string },
): string {
  const worse = results.filter((r) => r.applied && worseHeldOut(r));
  const kept = mode.force ? [] : worse;
  const status = written
    ? `Wrote answer_temperature (${results
        .filter((r) => r.applied && !kept.includes(r))
        .map((r) => r.type)
        .join(', ')}) to ${written}; the server applies it at its next start.`
    : mode.write
      ? `Nothing written to ${mode.manifest}.`
      : `Nothing written: run again with --write to write these temperatures into ${mode.manifest}.`;
  return [
    `# assay calibrate --dataset ${file}`,
    '',
    ...(synthetic
      ? [
          '> This model is synthetic (random weights): its answers mean nothing; calibrating it only exercises the path.',
          '',
        ]
      : []),
    `Model ${model}. Temperature per type fitted on the training split (log loss); held-out split before → after.`,
    '',
    '| type | train | held out | temperature before → after | held-out log loss | held-out ECE (15 equal-mass bins) |',
    '|---|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.type} | ${r.train} | ${r.heldOut} | ` +
        `${r.applied ? `${f3(r.before)} → ${f3(r.after)}` : `${f3(r.before)} (kept: under ${MIN_TRAIN} training answers)`} ` +
        `| ${f3(r.heldOutLogLoss[0])} → ${f3(r.heldOutLogLoss[1])} | ${f3(r.heldOutEce[0])} → ` +
        `${f3(r.heldOutEce[1])} |`,
    ),
    '',
    ...(results.some((r) => r.applied && (r.fitted > 49 || r.fitted < 1 / 49))
      ? [
          'A fit at the search bound (1/50 or 50) means the answers of that type carry (almost) no ' +
            'information about the labels: a near-uniform answer fits them best.',
          '',
        ]
      : []),
    ...kept.map(
      (r) =>
        `Not ${mode.write ? 'written' : 'to be written'}: ${r.type}'s temperature ${f3(r.after)} ` +
        `makes the held-out split worse (log loss ${f3(r.heldOutLogLoss[0])} → ` +
        `${f3(r.heldOutLogLoss[1])}, ECE ${f3(r.heldOutEce[0])} → ${f3(r.heldOutEce[1])}); it ` +
        `keeps ${f3(r.before)}. --write --force writes it anyway.`,
    ),
    ...(kept.length ? [''] : []),
    status,
    '',
  ].join('\n');
}

export async function run(argv: string[], ioOptions?: CommandIo): Promise<number> {
  const io = resolveIo(ioOptions);
  const parsed = parseCommand('calibrate', FLAGS, argv, io);
  if (typeof parsed === 'number') return parsed;
  const o = parsed.values;
  const holdout = o.holdout === undefined ? HOLDOUT : Number(o.holdout);
  const seed = o.seed === undefined ? SEED : Number(o.seed);
  if (!o.dataset) return usage(io, '--dataset is required');
  if (!(holdout > 0 && holdout < 1)) return usage(io, '--holdout takes a share between 0 and 1, e.g. 0.3');
  if (!Number.isInteger(seed)) return usage(io, '--seed takes a whole number');
  if (o.force && !o.write) return usage(io, '--force goes with --write');
  if (o.write && o['dry-run']) return usage(io, '--write and --dry-run say opposite things');
  const registry = loadRegistry(parsed.registry);
  let lines: DatasetLine[];
  let target;
  try {
    lines = readDataset(o.dataset, o.model ?? registry.default);
    target = await openTarget(
      { label: o.model ?? registry.default, ...(o.model ? { model: o.model } : {}) },
      { io, registry, command: 'calibrate' },
    );
  } catch (e) {
    if (!(e instanceof DatasetError || e instanceof ArmError)) throw e;
    io.err(`assay calibrate: ${e.message}\n`);
    return 2;
  }
  const manifestFile = join(target.dir!, 'assay.json');
  const manifest = (existsSync(manifestFile) ? JSON.parse(readFileSync(manifestFile, 'utf8')) : {}) as Record<
    string,
    unknown
  >;
  let results: TypeCalibration[];
  try {
    const ran = await runDataset(target, lines, io);
    const current = (manifest.answer_temperature ?? {}) as Partial<Record<QuestionType, number>>;
    results = calibrateRuns(
      lines,
      ran.responses.map((r) => r.answers),
      holdout,
      seed,
      current,
    );
  } finally {
    await target.close();
  }
  let written: string | undefined;
  // Written: the fitted types, less those that make the held-out split worse (unless forced).
  const writable = results.filter((r) => r.applied && (o.force || !worseHeldOut(r)));
  if (o.write && writable.length > 0) {
    const temperatures = { ...((manifest.answer_temperature ?? {}) as object) } as Record<string, number>;
    for (const r of writable) temperatures[r.type] = Number(r.after.toPrecision(6));
    const next = {
      ...manifest,
      answer_temperature: temperatures,
      calibration: {
        dataset: o.dataset,
        lines: lines.length,
        holdout,
        seed,
        held_out: Object.fromEntries(results.map((r) => [r.type, { log_loss: r.heldOutLogLoss, ece: r.heldOutEce }])),
      },
    };
    // Whole or not at all: the server may read the manifest while this writes.
    writeJsonAtomic(manifestFile, next);
    written = manifestFile;
  }
  io.out(
    markdown(o.dataset, target.model, target.synthetic, results, written, {
      write: Boolean(o.write),
      force: Boolean(o.force),
      manifest: manifestFile,
    }),
  );
  return 0;
}

function usage(io: Io, why: string): number {
  io.err(`assay calibrate: ${why}\n\n${commandHelp(FLAGS)}\n`);
  return 2;
}
