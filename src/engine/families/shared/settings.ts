// The settings files a family's folder carries beside its tokenizer and graph, read one way:
// decision.json (the layout id, `layout`, and each family's own fields: its schema lives in the
// family's folder) and calibration.json (the head's temperature, one rule for every family that
// reads one), each a zod schema, checked when the model loads and documented in
// docs/file-formats.md by the same generator as the other files Assay reads. A problem stops the
// load as `<folder>/decision.json: field: expected …`. Also the readout every head shares:
// softmax(logits / T) in the answer builder's order.
import { join } from 'node:path';
import { z } from 'zod';
import { softmax } from '../../../common/index.js';
import { fileObject, fileProblem } from '../../../protocol/index.js';
import { ModelLoadError } from '../../errors.js';
import { DECISION_FILE, readJsonFile } from '../files.js';

/** The calibration file of every family that has one (the closest peer server's name). */
export const CALIBRATION_FILE = 'calibration.json';

/** Temperatures per question type. */
export interface TypeTemperatures {
  choice: number;
  score: number;
  noul: number;
}

const positive = 'expected a positive number';
/** A temperature: a positive, finite number. */
export const Temperature = z.number(positive).positive(positive).finite(positive);

/** An integer setting of at least `min`. */
export function intAtLeast(min: number) {
  const expected = `expected an integer ≥ ${min}`;
  return z.number(expected).int(expected).min(min, expected);
}

/** decision.json's `layout`, which every family's file carries. */
export const LayoutField = z
  .string()
  .optional()
  .describe(
    'The layout id, `<family>-v<N>` (a family’s name and a version): which family the folder is (docs/models.md#model-families). ' +
      'Read before any other file; the registry entry’s `family` wins.',
  );

/**
 * calibration.json, the one temperature rule: `temperature` is one number for every question type
 * or [t_choice, t_score, t_noul]; absent (or no file): 1 for each. What the families really differ
 * in is written beside their own files: the decider's score rows take decision.json's
 * `isolated_row_temperature`; Laya's temperatures live in rl_agent_config.json.
 */
export const CalibrationSchema = fileObject({
  temperature: z
    .union([Temperature, z.tuple([Temperature, Temperature, Temperature])], {
      error: 'expected a positive number or [t_choice, t_score, t_noul], each a positive number',
    })
    .optional()
    .describe(
      'The head’s temperature: one number for every question type, or `[t_choice, t_score, t_noul]`; absent: 1. ' +
        'Each answer’s probabilities are softmax(logits / T) of its type’s T.',
    ),
  temperature_by_options: z
    .unknown()
    .optional()
    .describe('Temperatures by option count, as some exports write them: not read (the load says so).'),
});

/** A settings file of the folder checked by its schema; absent: the schema applied to `{}`. */
export function readSettingsFile<S extends z.ZodType>(dir: string, file: string, schema: S): z.output<S> {
  const path = join(dir, file);
  const parsed = schema.safeParse(readJsonFile(path) ?? {});
  if (!parsed.success) throw new ModelLoadError(fileProblem(path, parsed.error));
  return parsed.data;
}

/** The folder's decision.json, checked by the family's schema. */
export function readDecisionFile<S extends z.ZodType>(dir: string, schema: S): z.output<S> {
  return readSettingsFile(dir, DECISION_FILE, schema);
}

/** The folder's temperatures per type (calibration.json) and the load's note on where they came from. */
export function readCalibration(dir: string): { temperatures: TypeTemperatures; notes: string[] } {
  if (readJsonFile(join(dir, CALIBRATION_FILE)) === undefined)
    return { temperatures: { choice: 1, score: 1, noul: 1 }, notes: [`no ${CALIBRATION_FILE}: temperature [1, 1, 1]`] };
  const c = readSettingsFile(dir, CALIBRATION_FILE, CalibrationSchema);
  const t = c.temperature;
  const [choice, score, noul] = t === undefined ? [1, 1, 1] : typeof t === 'number' ? [t, t, t] : t;
  const notes = [
    t === undefined
      ? `${CALIBRATION_FILE} has no temperature: [1, 1, 1]`
      : `temperature [${choice}, ${score}, ${noul}] from ${CALIBRATION_FILE}`,
  ];
  if (c.temperature_by_options !== undefined) notes.push(`${CALIBRATION_FILE}'s temperature_by_options is not read`);
  return { temperatures: { choice, score, noul }, notes };
}

/** The order a head gives noul's two options in. */
export type NoulOrder = 'false-true' | 'true-false';

/**
 * A head's logits of a question's options as its probabilities, softmax(logits / T), in the
 * answer builder's order: choice per option, score per level, noul [P(yes), P(no)].
 */
export function headProbabilities(
  type: 'noul' | 'choice' | 'score',
  logits: readonly number[],
  temperature: number,
  noul: NoulOrder,
): number[] {
  const p = softmax(logits, temperature);
  return type === 'noul' && noul === 'false-true' ? [p[1]!, p[0]!] : p;
}
