// Which family a model folder belongs to: what it declares (the registry's `family`, or a
// decision.json `layout` id such as `laya-markers-v1`), else what its files show. A folder that
// matches no family is refused naming what each family needs. The rules (familyOfFiles) read a
// folder through HasFile and a JSON reader, so the hub fetcher applies them to a repo's listing.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ModelLoadError } from '../errors.js';
import { ONNX_DIRS } from '../model/variants.js';
import { FAMILY_NAMES, type FamilyName } from './family.js';
import {
  findSingleGraph,
  findSplitGraph,
  LAYA_CONFIG,
  NLI_CONFIG,
  onDisk,
  readJsonFile,
  DECISION_FILE,
  type HasFile,
} from './files.js';

/** The layout ids other servers of these models write in decision.json (`<family>-v<N>`); llm-logits is a decoder. */
const LAYOUT_IDS: Record<string, FamilyName> = {
  'laya-markers': 'laya-markers',
  'nli-pairs': 'nli-pairs',
  'kev-pointer': 'kev-pointer',
  'decider-labels': 'decider-labels',
  'label-tokens': 'label-tokens',
  'decider-slots': 'decider-slots',
  'llm-logits': 'decoder',
  'decision-endpoint': 'decision-endpoint',
  'arbiter-fixed': 'arbiter-fixed',
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

/** A folder as the rules read it: which files it has, and a JSON file's content (undefined when absent). */
export interface FolderFiles {
  has: HasFile;
  json: (rel: string) => Record<string, unknown> | undefined;
}

/** The family a folder's files show, and the file that shows it. */
export interface FamilyEvidence {
  family: FamilyName;
  /** decision.json (its layout), rl_agent_config.json, nli_config.json, config.json or genai_config.json. */
  from: string;
}

/**
 * The family a folder's files show, in order (undefined: none); it reads decision.json and
 * config.json through `json`, each only when the order gets to it:
 * - decision.json's `layout` (an unknown one is a load error naming `where`);
 * - laya-markers: rl_agent_config.json;
 * - nli-pairs: nli_config.json, or a config.json whose architecture is a *ForSequenceClassification;
 * - decoder: config.json or genai_config.json (the decoder loader says what else it needs).
 */
export function familyOfFiles(folder: FolderFiles, where: string): FamilyEvidence | undefined {
  const decision = folder.json(DECISION_FILE);
  if (decision && typeof decision.layout === 'string')
    return { family: declared(decision.layout, `${where}/${DECISION_FILE}: layout`), from: DECISION_FILE };
  if (folder.has(LAYA_CONFIG)) return { family: 'laya-markers', from: LAYA_CONFIG };
  if (folder.has(NLI_CONFIG)) return { family: 'nli-pairs', from: NLI_CONFIG };
  const config = folder.json('config.json');
  if (isSequenceClassifier(config)) return { family: 'nli-pairs', from: 'config.json' };
  if (config) return { family: 'decoder', from: 'config.json' };
  if (folder.has('genai_config.json')) return { family: 'decoder', from: 'genai_config.json' };
  return undefined;
}

/**
 * The folder's family. `family` is an explicit choice (registry, EngineConfig) and wins; then what
 * familyOfFiles reads, where a Laya folder (by its rl_agent_config.json) must also have an ONNX
 * graph (single, or encoder.onnx + head.onnx).
 */
export function detectFamily(dir: string, family?: string): FamilyName {
  if (!existsSync(dir)) throw new ModelLoadError(`model folder ${dir} does not exist`);
  if (family !== undefined) return declared(family, 'family');
  const has = onDisk(dir);
  const found = familyOfFiles({ has, json: (rel) => readJsonFile(join(dir, rel)) }, dir);
  const hasGraph = findSingleGraph(has) !== undefined || findSplitGraph(has) !== undefined;
  if (found?.from === LAYA_CONFIG && !hasGraph)
    throw new ModelLoadError(
      `${dir}: rl_agent_config.json (a Laya decision model) but no ONNX graph: expected onnx/model.onnx ` +
        `(or another dtype's file, under onnx/ or at the root), or onnx/encoder.onnx with onnx/head.onnx`,
    );
  if (found) return found.family;
  const onnx = ONNX_DIRS.some((sub) => existsSync(join(dir, sub))) && hasGraph;
  throw new ModelLoadError(
    `${dir} matches no model family${onnx ? ' (it has an ONNX graph)' : ''}: a decoder needs config.json ` +
      '(a Hugging Face / Optimum export) or genai_config.json; a Laya decision model (laya-markers) needs ' +
      'rl_agent_config.json and its graph; an NLI cross-encoder (nli-pairs) needs config.json with a ' +
      '*ForSequenceClassification architecture and an entailment label (or nli_config.json)',
  );
}
