// The model families behind the engine's Evaluator: the one list (list.ts, each family described in
// its folder: descriptor.ts), which family a folder is (detect.ts), the evaluator of a row family
// (rows/evaluator.ts over its descriptor's parts), a decoder-engine family's prompt contract.
import type { ResolvedEngineConfig } from '../config.js';
import { ModelLoadError } from '../errors.js';
import { readModelManifest } from '../model/model-folder.js';
import type { Evaluator } from '../types.js';
import { familyNamed } from './list.js';
import { FamilyEvaluator, type LoadedRowFamily } from './rows/evaluator.js';
import { rowPlanner } from './rows/planner.js';

export { detectFamily, familyOfFiles, type FamilyEvidence } from './detect.js';
export { DEFAULT_FAMILY, FAMILIES, FAMILY_NAMES, familyNamed, isRowFamily, type FamilyName } from './list.js';
export type { ContractSpec, FamilyDescriptor, FamilyEngine, FetchRule } from './descriptor.js';
export { encoderGraph, splitGraph, singleGraph, tokenizerDir } from './files.js';
export { CalibrationSchema, type TypeTemperatures } from './shared/settings.js';

/** A row family's folder read and its graph opened: its reader and runner on this thread. */
export async function loadRowFamily(c: ResolvedEngineConfig, name: string): Promise<LoadedRowFamily> {
  const parts = familyNamed(name)?.rows;
  if (!parts) throw new ModelLoadError(`${c.modelDir}: the ${name} family is not available in this build`);
  const spec = await parts();
  const reader = spec.read(c);
  return { name, reader, runner: await spec.open(c, reader) };
}

/** An evaluator for a folder of a row family. */
export async function createFamilyEvaluator(c: ResolvedEngineConfig, name: string): Promise<Evaluator> {
  const manifest = await readModelManifest(c.modelDir);
  const { reader, runner } = await loadRowFamily(c, name);
  const notes = [...reader.notes, ...runner.notes];
  c.onNote?.({ kind: 'family', message: `${name} (${runner.graph})${notes.map((n) => `; ${n}`).join('')}` });
  // Calibration fitted by `assay calibrate` on this folder (assay.json), on top of the family's own.
  const temperatures = c.answerTemperatures ?? manifest.answer_temperature ?? {};
  const planner = rowPlanner(c, name, reader);
  return new FamilyEvaluator(c, { name, reader, runner }, planner, manifest.synthetic === true, temperatures);
}
