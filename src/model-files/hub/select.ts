// Which files of a hub repo a fetch brings: the repo's family by the engine's rules (its
// descriptor's detection, applied to the repo's listing: repoFamily), then the files its engine
// loads: a decoder export's (transformers.js / Optimum, or onnxruntime-genai: selectDecoderFiles)
// or a row family's, as its descriptor's fetch rule says (selectRowFiles).
import {
  DECISION_FILE,
  familyOfFiles,
  findSingleGraph,
  findSplitGraph,
  isExternalData,
  ModelLoadError,
  ONNX_DIRS,
  singleGraphVariants,
  TOKENIZER_FILES as FAMILY_TOKENIZER_FILES,
  tokenizerFolder,
  VARIANTS,
  variantFileNames,
  type FamilyDescriptor,
  type FamilyEvidence,
  type HasFile,
  type Variant,
} from '../../engine/index.js';
import { HubFetchError } from './errors.js';

/** Tokenizer files every decoder export needs; a repo without one of them is not something the engine can load. */
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'];
/** Fetched when the repo has them: newer exports keep the chat template in its own file; a prompt contract's folder its files. */
const OPTIONAL_FILES = [
  'generation_config.json',
  'chat_template.jinja',
  'chat_template.json',
  'special_tokens_map.json',
  'decision.json',
  'calibration.json',
];

export interface RemoteFile {
  path: string;
  /** Path inside the local model folder (the repo path less the subfolder). */
  local?: string;
  size: number;
  /** git blob sha1 (non-LFS) */
  oid?: string;
  lfs?: { oid: string; size: number };
}

/** The repo's files at one level (the whole repo, or a subfolder), by paths relative to that level. */
export interface RepoLevel {
  prefix: string;
  has: HasFile;
  /** The files at these paths, to be written at those paths in the model folder. */
  pick: (paths: string[]) => RemoteFile[];
  /** Every path under the level. */
  level: string[];
  /** <repo>@<revision>, for messages. */
  where: string;
}

export function repoLevel(tree: Map<string, RemoteFile>, subfolder: string, where: string): RepoLevel {
  const prefix = subfolder ? `${subfolder.replace(/^\/+|\/+$/g, '')}/` : '';
  return {
    prefix,
    has: (p) => tree.has(prefix + p),
    pick: (paths) => paths.map((p) => ({ ...tree.get(prefix + p)!, local: p })),
    level: [...tree.keys()].filter((p) => p.startsWith(prefix)).map((p) => p.slice(prefix.length)),
    where,
  };
}

/** Thrown by familyOfFiles' JSON reader for a file not read yet: read it, then apply the rules again. */
class NotRead {
  constructor(readonly rel: string) {}
}

/**
 * The repo's family by the engine's rules (familyOfFiles). They read a JSON file only when their
 * order gets to it (config.json: when neither decision.json, rl_agent_config.json nor
 * nli_config.json decides), so a file is fetched when the rules ask for it.
 */
export async function repoFamily(
  repo: RepoLevel,
  read: (rel: string) => Promise<Buffer>,
): Promise<FamilyEvidence | undefined> {
  const json = new Map<string, Record<string, unknown>>();
  const known = (rel: string) => {
    if (!repo.has(rel)) return undefined;
    const value = json.get(rel);
    if (!value) throw new NotRead(rel);
    return value;
  };
  for (;;) {
    try {
      return familyOfFiles({ has: repo.has, json: known }, repo.where);
    } catch (e) {
      if (e instanceof NotRead) json.set(e.rel, parseJson(await read(e.rel), repo.prefix + e.rel));
      else if (e instanceof ModelLoadError) throw new HubFetchError('layout', e.message);
      else throw e;
    }
  }
}

export interface Selection {
  files: RemoteFile[];
  /** Where the graph was: under onnx/ (transformers.js), at the root (Optimum), an onnxruntime-genai build. */
  layout: 'hf' | 'optimum' | 'genai';
  variant?: Variant;
  graph: string[];
  split?: boolean;
}

/** Each graph followed by its external data at the level. */
function withExternalData(level: string[], graph: string[]): string[] {
  return graph.flatMap((g) => [g, ...level.filter((p) => isExternalData(g, p)).sort()]);
}

/**
 * A decoder's files: an onnxruntime-genai build (genai_config.json, every .onnx and its data at
 * that level), or a transformers.js / Optimum export (config.json and the variant's file under
 * onnx/ or at the root, with its external data), plus the tokenizer and template files.
 */
export function selectDecoderFiles(repo: RepoLevel, asked: Variant | undefined, split: boolean): Selection {
  const { prefix, has, pick, level, where } = repo;
  if (split)
    throw new HubFetchError(
      'missing_file',
      `${where}${prefix ? ` (${prefix})` : ''} is a decoder export: --split is for a Laya model's encoder.onnx + head.onnx`,
    );
  const optional = [...OPTIONAL_FILES, DECISION_FILE].filter(has);

  if (has('genai_config.json') && !has('config.json')) {
    if (asked)
      throw new HubFetchError(
        'missing_file',
        `${where}${prefix ? ` (${prefix})` : ''} is an onnxruntime-genai build with one model file: omit --variant`,
      );
    const missing = TOKENIZER_FILES.filter((p) => !has(p));
    if (missing.length)
      throw new HubFetchError('missing_file', `${where} lacks ${missing.map((p) => prefix + p).join(', ')}.`);
    const onnx = level.filter((p) => !p.includes('/') && /\.onnx(\.data|_data(_\d+)?)?$/.test(p)).sort();
    if (!onnx.some((p) => p.endsWith('.onnx')))
      throw new HubFetchError('missing_file', `${where} has genai_config.json but no .onnx file beside it.`);
    return {
      files: pick(['genai_config.json', ...TOKENIZER_FILES, ...optional, ...onnx]),
      layout: 'genai',
      graph: onnx.filter((p) => p.endsWith('.onnx')),
    };
  }

  const variant = asked ?? 'int8';
  const onnx = ONNX_DIRS.flatMap((dir) => variantFileNames(variant).map((f) => (dir === '.' ? f : `${dir}/${f}`))).find(
    has,
  );
  const missing = ['config.json', ...TOKENIZER_FILES].filter((p) => !has(p));
  if (missing.length || !onnx) {
    const variants = singleGraphVariants(has);
    const hint = onnx
      ? ''
      : ` No ${variantFileNames(variant).join(' / ')} under onnx/ or at the root. Variants this repo has: ${
          variants.length
            ? variants.join(', ')
            : has('genai_config.json')
              ? 'none (genai_config.json beside config.json)'
              : 'none (it is not an ONNX export)'
        }.`;
    throw new HubFetchError(
      'missing_file',
      `${where} lacks ${[...missing.map((p) => prefix + p), ...(onnx ? [] : [`the ${variant} ONNX file`])].join(', ')}.${hint}`,
    );
  }
  const paths = ['config.json', ...TOKENIZER_FILES, ...optional, ...withExternalData(level, [onnx])];
  return { files: pick(paths), layout: onnx.includes('/') ? 'hf' : 'optimum', variant, graph: [onnx] };
}

/**
 * A row family's files, as its loader reads them (engine/families): the graph the engine would run
 * (the variant asked for, else the first of its default order the repo has, else a split
 * encoder.onnx + head.onnx where the family's rule allows one; `split` asks for that) with its
 * external data; the settings file its rule requires and those it names optional; the tokenizer
 * files in tokenizer/ or at the root, where they are; config.json, decision.json, calibration.json
 * and assay.json when present.
 */
export function selectRowFiles(
  repo: RepoLevel,
  family: FamilyDescriptor,
  from: string,
  asked: Variant | undefined,
  split: boolean,
): Selection {
  const { prefix, has, pick, level, where } = repo;
  const rule = family.fetch!;
  const what = `${where}${prefix ? ` (${prefix})` : ''} (${family.name}, by its ${from})`;
  if (split && (!rule.split || asked))
    throw new HubFetchError(
      'missing_file',
      rule.split
        ? `${what}: --split and --variant each choose the graph; give one`
        : `${what}: --split is for a split export (encoder.onnx + head.onnx); ${rule.oneGraph}`,
    );
  const single = split ? undefined : findSingleGraph(has, asked);
  const halves = rule.split && !asked ? findSplitGraph(has) : undefined;
  const graph = single ? [single.single] : halves ? [halves.encoder, halves.head] : [];

  const tokenizer = tokenizerFolder(has);
  const inTokenizer = (f: string) => (tokenizer ? `${tokenizer}/${f}` : f);
  const required = [rule.settings, inTokenizer('tokenizer.json')];
  const missing = required.filter((p) => !has(p)).map((p) => prefix + p);
  if (missing.length || !graph.length) {
    let hint = '';
    if (!graph.length) {
      const wanted = split
        ? 'encoder.onnx with head.onnx'
        : [...new Set((asked ? [asked] : VARIANTS).flatMap(variantFileNames))].join(' / ');
      const variants = [...singleGraphVariants(has), ...(rule.split && findSplitGraph(has) ? ['split (--split)'] : [])];
      missing.push(split ? 'the split export' : asked ? `the ${asked} ONNX file` : 'an ONNX graph');
      hint = ` No ${wanted} under onnx/ or at the root. Variants this repo has: ${variants.join(', ') || 'none'}.`;
    }
    throw new HubFetchError('missing_file', `${what} lacks ${missing.join(', ')}.${hint}`);
  }
  const paths = [
    ...new Set([
      ...required,
      'config.json',
      ...rule.optional,
      ...FAMILY_TOKENIZER_FILES.map(inTokenizer),
      DECISION_FILE,
      'calibration.json',
      'assay.json',
    ]),
  ].filter(has);
  return {
    files: pick([...paths, ...withExternalData(level, graph)]),
    layout: graph[0]!.includes('/') ? 'hf' : 'optimum',
    variant: single?.variant,
    graph,
    split: !single,
  };
}

export function parseJson(bytes: Buffer, where: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(bytes.toString('utf8'));
  } catch (e) {
    throw new HubFetchError('layout', `${where} in the repo is not valid JSON (${(e as Error).message})`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new HubFetchError('layout', `${where} in the repo is not a JSON object`);
  return value as Record<string, unknown>;
}

/** LFS files carry their sha256 as the oid; small files are checked by their git blob sha1. */
