// Which family a model folder belongs to: what it declares (the registry's `family`, or a
// decision.json `layout` id such as `<family>-v1`), else what its files show, by each family's
// rule (its descriptor's `detect`, in the list's order, `last` rules after the others). A folder
// that matches no family is refused naming what each family needs. The rules read a folder
// through HasFile and a JSON reader, so the hub fetcher applies them to a repo's listing.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ModelLoadError } from '../errors.js';
import { ONNX_DIRS } from '../model/variants.js';
import type { FamilyDescriptor } from './descriptor.js';
import { DECISION_FILE, findSingleGraph, findSplitGraph, onDisk, readJsonFile, type FolderFiles } from './files.js';
import { FAMILIES, FAMILY_NAMES, type FamilyName } from './list.js';

/** The families by the layout ids a decision.json may carry (`<id>-v<N>`): their names and other servers' ids. */
function byLayoutId(base: string): FamilyName | undefined {
  return FAMILIES.find((f: FamilyDescriptor) => f.name === base || f.layoutIds?.includes(base))?.name;
}

function declared(name: string, where: string): FamilyName {
  if ((FAMILY_NAMES as readonly string[]).includes(name)) return name as FamilyName;
  const family = byLayoutId(name.replace(/-v\d+$/, ''));
  if (family) return family;
  throw new ModelLoadError(`${where}: unknown model family '${name}'; known: ${FAMILY_NAMES.join(', ')}`);
}

/** The family a folder's files show, and the file that shows it. */
export interface FamilyEvidence {
  family: FamilyName;
  /** decision.json (its layout), or the file a family's rule found (rl_agent_config.json, config.json, …). */
  from: string;
}

/** The families with a rule, in the order they are tried. */
const RULES = [...FAMILIES.filter((f) => f.detect && !f.detect.last), ...FAMILIES.filter((f) => f.detect?.last)];

/**
 * The family a folder's files show, in order (undefined: none); it reads decision.json and any
 * other JSON file through `json`, each only when the order gets to it:
 * - decision.json's `layout` (an unknown one is a load error naming `where`);
 * - each family's rule, in the list's order, the decoder's (any config.json or genai_config.json)
 *   last (the decoder loader says what else it needs).
 */
export function familyOfFiles(folder: FolderFiles, where: string): FamilyEvidence | undefined {
  const decision = folder.json(DECISION_FILE);
  if (decision && typeof decision.layout === 'string')
    return { family: declared(decision.layout, `${where}/${DECISION_FILE}: layout`), from: DECISION_FILE };
  for (const f of RULES) {
    const from = f.detect!.by(folder);
    if (from) return { family: f.name, from };
  }
  return undefined;
}

/**
 * The folder's family. `family` is an explicit choice (registry, EngineConfig) and wins; then what
 * familyOfFiles reads, where a family's rule may ask more of the folder than the file that showed
 * it (a Laya folder, by its rl_agent_config.json, must also have an ONNX graph).
 */
export function detectFamily(dir: string, family?: string): FamilyName {
  if (!existsSync(dir)) throw new ModelLoadError(`model folder ${dir} does not exist`);
  if (family !== undefined) return declared(family, 'family');
  const has = onDisk(dir);
  const found = familyOfFiles({ has, json: (rel) => readJsonFile(join(dir, rel)) }, dir);
  if (found) {
    const lacks = found.from === DECISION_FILE ? undefined : RULES.find((f) => f.name === found.family)?.detect?.lacks;
    const missing = lacks?.(dir, has);
    if (missing) throw new ModelLoadError(missing);
    return found.family;
  }
  const hasGraph = findSingleGraph(has) !== undefined || findSplitGraph(has) !== undefined;
  const onnx = ONNX_DIRS.some((sub) => existsSync(join(dir, sub))) && hasGraph;
  throw new ModelLoadError(
    `${dir} matches no model family${onnx ? ' (it has an ONNX graph)' : ''}: ` +
      FAMILIES.flatMap((f: FamilyDescriptor) => (f.detect ? [f.detect.needs] : [])).join('; '),
  );
}
