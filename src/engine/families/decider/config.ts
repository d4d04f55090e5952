// A decider-labels folder's own files (docs/families/decider-labels.md): decision.json (its layout
// id, optionally the label table and the isolated rows' temperature: DeciderDecisionSchema) and
// calibration.json (`temperature: [t_choice, t_score, t_noul]`, the one rule of shared/settings.ts).
// The slot-head export (its own folder) reads the same fields and a few of its own
// (DECIDER_FIELDS extended).
import { z } from 'zod';
import { fileObject } from '../../../protocol/index.js';
import { LayoutField, readCalibration, readDecisionFile, Temperature } from '../shared/settings.js';
import { computeLabelTable, NARROW, WIDE, type LabelTable } from './labels.js';
import type { DeciderTemperatures } from './readout.js';

const tableProblem = `expected {"strings": [...], "ids": [...]} of equal length, ${NARROW} to ${WIDE} distinct single tokens`;

/** decision.json's `labels`: the label table, as {strings, ids}. */
const LabelTableSchema = z
  .object(
    {
      strings: z.array(z.string().min(1, tableProblem), tableProblem),
      ids: z.array(z.number().int(tableProblem).min(0, tableProblem), tableProblem),
    },
    tableProblem,
  )
  .refine(
    (t) =>
      t.strings.length === t.ids.length &&
      t.strings.length >= NARROW &&
      t.strings.length <= WIDE &&
      new Set(t.ids).size === t.ids.length,
    tableProblem,
  );

/** The fields of a decider folder's decision.json (the slot-head export's adds its own). */
export const DECIDER_FIELDS = {
  layout: LayoutField,
  labels: LabelTableSchema.optional().describe(
    `The label table, \`{"strings": [...], "ids": [...]}\`: ${NARROW} to ${WIDE} distinct ` +
      `single tokens, A..J first; absent: computed from the tokenizer (A..Z, then the ` +
      `single-token AA..).`,
  ),
  isolated_row_temperature: Temperature.optional().describe(
    'The temperature of the isolated yes/no rows a score question is read from; absent: calibration.json’s t_noul.',
  ),
};

/** A decider-labels folder's decision.json. */
export const DeciderDecisionSchema = fileObject(DECIDER_FIELDS);

export interface DeciderFolder<D> {
  labels: LabelTable;
  temperatures: DeciderTemperatures;
  /** What the load reports: where the labels and temperatures came from. */
  notes: string[];
  /** decision.json as checked by the schema given. */
  decision: D;
}

/**
 * The folder's label table and temperatures; `encode` (text as data) computes a table decision.json
 * lacks; `schema` is decision.json's (the slot-head export's extends the decider's fields).
 */
export function readDeciderFolder<S extends z.ZodType<z.output<typeof DeciderDecisionSchema>>>(
  dir: string,
  encode: (text: string) => number[],
  schema: S = DeciderDecisionSchema as unknown as S,
): DeciderFolder<z.output<S>> {
  const decision = readDecisionFile(dir, schema);
  const declared = decision.labels;
  const labels = declared ?? computeLabelTable(encode);
  const calibration = readCalibration(dir);
  const t = calibration.temperatures;
  const notes = [
    declared
      ? `${labels.ids.length} labels from decision.json`
      : `${labels.ids.length} labels computed from the tokenizer (A..Z, then single-token AA..)`,
    ...calibration.notes,
  ];
  // The decider's own difference: its score rows' temperature, from decision.json.
  const row = decision.isolated_row_temperature ?? t.noul;
  return { labels, temperatures: { ...t, row }, notes, decision };
}
