// The model families behind the engine's Evaluator (family.ts): which one a folder is (detect.ts),
// and the evaluator of an encoder family (evaluator.ts) over its loader (laya/, nli/).
import type { ResolvedEngineConfig } from '../config.js';
import { readModelManifest } from '../model/model-folder.js';
import type { Evaluator } from '../types.js';
import { FamilyEvaluator } from './evaluator.js';
import { FAMILY_NOTE, type EncoderFamily, type EncoderFamilyName } from './family.js';
import { loadLaya } from './laya/family.js';
import { loadNli } from './nli/family.js';

export { detectFamily } from './detect.js';
export { FAMILY_NAMES, FAMILY_NOTE, type FamilyName, type EncoderFamilyName } from './family.js';
export { encoderGraph, splitGraph, singleGraph, tokenizerDir } from './files.js';
export { LayaOptionsTooLong } from './laya/layout.js';
export { NliHypothesisTooLong } from './nli/layout.js';

const LOADERS: Record<EncoderFamilyName, (c: ResolvedEngineConfig) => Promise<EncoderFamily>> = {
  'laya-markers': loadLaya as (c: ResolvedEngineConfig) => Promise<EncoderFamily>,
  'nli-pairs': loadNli as (c: ResolvedEngineConfig) => Promise<EncoderFamily>,
};

/** An evaluator for a folder of an encoder family. */
export async function createFamilyEvaluator(c: ResolvedEngineConfig, name: EncoderFamilyName): Promise<Evaluator> {
  const manifest = await readModelManifest(c.modelDir);
  const family = await LOADERS[name](c);
  c.onWarning?.(`${FAMILY_NOTE} ${name} (${family.graph})${family.notes.map((n) => `; ${n}`).join('')}`);
  // Calibration fitted by `assay calibrate` on this folder (assay.json), on top of the family's own.
  const temperatures = c.answerTemperatures ?? manifest.answer_temperature ?? {};
  return new FamilyEvaluator(c, family, manifest.synthetic === true, temperatures);
}
