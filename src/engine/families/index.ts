// The model families behind the engine's Evaluator (family.ts): which one a folder is (detect.ts),
// and the evaluator of an encoder family (evaluator.ts) over its loader (laya/, nli/).
import type { ResolvedEngineConfig } from '../config.js';
import { ModelLoadError } from '../errors.js';
import { readModelManifest } from '../model/model-folder.js';
import type { Evaluator } from '../types.js';
import { FamilyEvaluator } from './evaluator.js';
import type { RowFamily, RowFamilyName } from './family.js';
import { loadArbiter } from './arbiter/family.js';
import { loadDecision } from './decision/family.js';
import { loadKev } from './kev/family.js';
import { loadDeciderSlots } from './decider-slots/family.js';
import { loadLaya } from './laya/family.js';
import { loadNli } from './nli/family.js';

export { detectFamily } from './detect.js';
export { FAMILY_NAMES, isRowFamily, type DecoderFamilyName, type FamilyName, type RowFamilyName } from './family.js';
export { encoderGraph, splitGraph, singleGraph, tokenizerDir } from './files.js';
export { ArbiterRefused } from './arbiter/layout.js';
export { DecisionRefused } from './decision/layout.js';
export { KevRowTooLong } from './kev/layout.js';
export { LayaOptionsTooLong } from './laya/layout.js';
export {
  DeciderRefusal,
  deciderLogps,
  readDeciderFolder,
  type DeciderSettings,
  type DeciderTemperatures,
} from './decider/index.js';
export { NliHypothesisTooLong } from './nli/layout.js';
export {
  labelTokensLogps,
  LabelTokensRefusal,
  readLabelTokensFolder,
  type LabelTokensSettings,
} from './label-tokens/index.js';
export type { TypeTemperatures } from './shared/settings.js';

const LOADERS: Partial<Record<RowFamilyName, (c: ResolvedEngineConfig) => Promise<RowFamily>>> = {
  'laya-markers': loadLaya as (c: ResolvedEngineConfig) => Promise<RowFamily>,
  'nli-pairs': loadNli as (c: ResolvedEngineConfig) => Promise<RowFamily>,
  'kev-pointer': loadKev as (c: ResolvedEngineConfig) => Promise<RowFamily>,
  'decider-slots': loadDeciderSlots as (c: ResolvedEngineConfig) => Promise<RowFamily>,
  'decision-endpoint': loadDecision as (c: ResolvedEngineConfig) => Promise<RowFamily>,
  'arbiter-fixed': loadArbiter as (c: ResolvedEngineConfig) => Promise<RowFamily>,
};

/** An evaluator for a folder of an encoder family. */
export async function createFamilyEvaluator(c: ResolvedEngineConfig, name: RowFamilyName): Promise<Evaluator> {
  const manifest = await readModelManifest(c.modelDir);
  const load = LOADERS[name];
  if (!load) throw new ModelLoadError(`${c.modelDir}: the ${name} family is not available in this build`);
  const family = await load(c);
  c.onNote?.({ kind: 'family', message: `${name} (${family.graph})${family.notes.map((n) => `; ${n}`).join('')}` });
  // Calibration fitted by `assay calibrate` on this folder (assay.json), on top of the family's own.
  const temperatures = c.answerTemperatures ?? manifest.answer_temperature ?? {};
  return new FamilyEvaluator(c, family, manifest.synthetic === true, temperatures);
}
