// Which family a model folder belongs to: what it declares (the registry's `family`, or a
// decision.json `layout` id such as `laya-markers-v1`), else what its files show. A folder that
// matches no family is refused naming what each family needs.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ModelLoadError } from '../errors.js';
import { ONNX_DIRS } from '../model/variants.js';
import { FAMILY_NAMES, type FamilyName } from './family.js';
import { readJsonFile, singleGraph, splitGraph } from './files.js';

/** The layout ids other servers of these models write in decision.json (`<family>-v<N>`); llm-logits is a decoder. */
const LAYOUT_IDS: Record<string, FamilyName> = {
  'laya-markers': 'laya-markers',
  'nli-pairs': 'nli-pairs',
  'llm-logits': 'decoder',
};

function declared(name: string, where: string): FamilyName {
  if ((FAMILY_NAMES as readonly string[]).includes(name)) return name as FamilyName;
  const base = name.replace(/-v\d+$/, '');
  const family = LAYOUT_IDS[base];
  if (family) return family;
  throw new ModelLoadError(`${where}: unknown model family '${name}'; known: ${FAMILY_NAMES.join(', ')}`);
}

/** Whether config.json describes a sequence classifier (a cross-encoder's `*ForSequenceClassification`). */
function isSequenceClassifier(config: Record<string, unknown> | undefined): boolean {
  const archs = config?.architectures;
  return Array.isArray(archs) && archs.some((a) => typeof a === 'string' && a.endsWith('ForSequenceClassification'));
}

/**
 * The folder's family. `family` is an explicit choice (registry, EngineConfig) and wins; then
 * decision.json's `layout`; then the files:
 * - laya-markers: rl_agent_config.json beside an ONNX graph (single, or encoder.onnx + head.onnx);
 * - nli-pairs: nli_config.json, or a config.json whose architecture is a *ForSequenceClassification;
 * - decoder: config.json or genai_config.json (the decoder loader says what else it needs).
 */
export function detectFamily(dir: string, family?: string): FamilyName {
  if (!existsSync(dir)) throw new ModelLoadError(`model folder ${dir} does not exist`);
  if (family !== undefined) return declared(family, 'family');
  const decision = readJsonFile(join(dir, 'decision.json'));
  if (decision && typeof decision.layout === 'string') return declared(decision.layout, `${dir}/decision.json: layout`);
  const hasGraph = singleGraph(dir) !== undefined || splitGraph(dir) !== undefined;
  if (existsSync(join(dir, 'rl_agent_config.json'))) {
    if (hasGraph) return 'laya-markers';
    throw new ModelLoadError(
      `${dir}: rl_agent_config.json (a Laya decision model) but no ONNX graph: expected onnx/model.onnx ` +
        `(or another dtype's file, under onnx/ or at the root), or onnx/encoder.onnx with onnx/head.onnx`,
    );
  }
  const config = readJsonFile(join(dir, 'config.json'));
  if (existsSync(join(dir, 'nli_config.json')) || isSequenceClassifier(config)) return 'nli-pairs';
  if (config || existsSync(join(dir, 'genai_config.json'))) return 'decoder';
  const onnx = ONNX_DIRS.some((sub) => existsSync(join(dir, sub))) && hasGraph;
  throw new ModelLoadError(
    `${dir} matches no model family${onnx ? ' (it has an ONNX graph)' : ''}: a decoder needs config.json ` +
      '(a Hugging Face / Optimum export) or genai_config.json; a Laya decision model (laya-markers) needs ' +
      'rl_agent_config.json and its graph; an NLI cross-encoder (nli-pairs) needs config.json with a ' +
      '*ForSequenceClassification architecture and an entailment label (or nli_config.json)',
  );
}
