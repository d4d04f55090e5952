// A decider-labels folder's own files (docs/families/decider-labels.md): decision.json (its layout
// id, optionally the label table and the isolated rows' temperature) and calibration.json
// (`temperature: [t_choice, t_score, t_noul]`, the format the closest peer server writes).
import { join } from 'node:path';
import { ModelLoadError } from '../../errors.js';
import { readJsonFile } from '../files.js';
import { CALIBRATION_FILE } from '../shared/folder-settings.js';
import { computeLabelTable, declaredLabelTable, type LabelTable } from './labels.js';
import type { DeciderTemperatures } from './readout.js';

function positive(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || !(value > 0))
    throw new ModelLoadError(`${where} must be a positive number, got ${JSON.stringify(value)}`);
  return value;
}

export interface DeciderFolder {
  labels: LabelTable;
  temperatures: DeciderTemperatures;
  /** What the load reports: where the labels and temperatures came from. */
  notes: string[];
}

/** The folder's label table and temperatures; `encode` (text as data) computes a table decision.json lacks. */
export function readDeciderFolder(dir: string, encode: (text: string) => number[]): DeciderFolder {
  const decision = readJsonFile(join(dir, 'decision.json')) ?? {};
  const calibration = readJsonFile(join(dir, CALIBRATION_FILE));
  const declared = declaredLabelTable(decision.labels, `${dir}/decision.json`);
  const labels = declared ?? computeLabelTable(encode);
  const notes = [
    declared
      ? `${labels.ids.length} labels from decision.json`
      : `${labels.ids.length} labels computed from the tokenizer (A..Z, then single-token AA..)`,
  ];
  let t = [1, 1, 1];
  if (calibration) {
    const list = calibration.temperature;
    if (!Array.isArray(list) || list.length !== 3)
      throw new ModelLoadError(`${dir}/${CALIBRATION_FILE}: temperature must be [t_choice, t_score, t_noul]`);
    t = list.map((v, i) => positive(v, `${dir}/${CALIBRATION_FILE}: temperature[${i}]`));
    notes.push(`temperature [${t.join(', ')}] from ${CALIBRATION_FILE}`);
  } else notes.push(`no ${CALIBRATION_FILE}: temperature [1, 1, 1]`);
  const row =
    decision.isolated_row_temperature === undefined
      ? t[2]!
      : positive(decision.isolated_row_temperature, `${dir}/decision.json: isolated_row_temperature`);
  return { labels, temperatures: { choice: t[0]!, score: t[1]!, noul: t[2]!, row }, notes };
}
