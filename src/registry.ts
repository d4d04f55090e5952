// The model registry: which names the `model` field accepts and which folder answers them.
//
// File format (models/registry.json; `path` is relative to the registry file's folder):
//   {"default": "svc-1.13.0",
//    "models":  {"svc-1.13.0": {"path": "generated/tiny-fp32", "synthetic": {"shape": "tiny", "dtype": "fp32"},
//                               "variant": "fp32", "description": "...", "release_date": "2026-11-22"}},
//    "aliases": {"svc-latest": "svc-1.13.0", "svc-preview": "svc-1.13.0"}}
// Versioned ids (keys of `models`) are always accepted; GET /v1/models lists the aliases, plus
// any versioned id whose entry says `"listed": true` (as the hosted service: "the list currently holds the aliases").
import { existsSync, readFileSync, renameSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseVariant, VARIANTS } from './engine/index.js';

export const DEFAULT_REGISTRY_FILE = fileURLToPath(new URL('../models/registry.json', import.meta.url));

export interface SyntheticSpec {
  shape: string;
  dtype: string;
  positionIds?: boolean;
  seed?: number;
  /**
   * Trained weights (safetensors, relative to the registry file's folder) the folder is written
   * from instead of random ones: a model that knows its training task (models/trained/).
   */
  weights?: string;
}

/**
 * An escalating entry (docs/escalation.md): answers with `first`, and re-asks the questions whose
 * certainty is under `below[type]` to `second`, a registered model or a remote endpoint of this API.
 */
export interface EscalationSpec {
  /** A registered model (name or alias) that is not itself escalating. */
  first: string;
  second: string | RemoteModel;
  /** Per type, escalate when certainty < value (null: every question of the type; absent: none). */
  below: Partial<Record<'noul' | 'choice' | 'score', number | null>>;
  /** The second model's deadline, ms (default 10000). */
  timeout_ms?: number;
  /** When the second model fails or misses the deadline: keep the first answers (default) or fail the request (503). */
  on_failure?: 'first' | 'error';
}

/** An endpoint speaking this API: the hosted service or another Assay. */
export interface RemoteModel {
  /** Base URL, e.g. https://assay.example.com (POST {url}/v1/systemone). */
  url: string;
  model: string;
  /** The environment variable holding its API key (sent as a Bearer token). */
  api_key_env?: string;
}

export interface ModelEntry {
  /** Model folder (a Hugging Face ONNX export), relative to the registry file's folder or absolute. An escalating entry has none (""). */
  path: string;
  /** Answers through two other models (docs/escalation.md); such an entry has no folder of its own. */
  escalate?: EscalationSpec;
  /** Which ONNX file of the folder to run (engine `variant`: fp32, fp16, int8, uint8, quantized, q4, q4f16, bnb4); default: the engine's choice. */
  variant?: string;
  /** false: run the export as is, without the load-time graph rewrite (the server's --no-graph-rewrite, per model). */
  graph_rewrite?: boolean;
  /** When set and the folder is missing, the server generates this synthetic (random-weight) model. */
  synthetic?: SyntheticSpec;
  description: string;
  /** YYYY-MM-DD */
  release_date: string;
  /** List this versioned id in GET /v1/models as well as its aliases. */
  listed?: boolean;
}

export interface RegistryFile {
  default: string;
  models: Record<string, ModelEntry>;
  aliases: Record<string, string>;
}

export interface Registry extends RegistryFile {
  /** Absolute path of the file it was read from. */
  file: string;
}

export interface ResolvedModel {
  /** The versioned id that answers (reported in the response's `model`). */
  id: string;
  /** Absolute model folder. */
  dir: string;
  entry: ModelEntry;
}

const DATE = /^\d{4}-\d{2}-\d{2}$/;

function own<T>(o: Record<string, T>, k: string): T | undefined {
  return Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined;
}

/** Checks the shape and cross-references; throws with a message naming the bad field. */
export function checkRegistry(data: unknown, file: string): Registry {
  const fail = (why: string): never => {
    throw new Error(`model registry ${file}: ${why}`);
  };
  if (typeof data !== 'object' || data === null || Array.isArray(data)) fail('not a JSON object');
  const r = data as Partial<RegistryFile>;
  if (typeof r.models !== 'object' || r.models === null) fail('"models" must be an object');
  const models = r.models as Record<string, ModelEntry>;
  const aliases = (r.aliases ?? {}) as Record<string, string>;
  for (const [id, e] of Object.entries(models)) {
    if (e?.escalate !== undefined) {
      const why = escalationProblem(e.escalate, models, aliases);
      if (why) fail(`models["${id}"].escalate${why}`);
    } else if (typeof e?.path !== 'string' || !e.path) fail(`models["${id}"].path must be a non-empty string`);
    if (typeof e.description !== 'string') fail(`models["${id}"].description must be a string`);
    if (typeof e.release_date !== 'string' || !DATE.test(e.release_date))
      fail(`models["${id}"].release_date must be YYYY-MM-DD`);
    if (e.variant !== undefined && (typeof e.variant !== 'string' || !parseVariant(e.variant))) {
      fail(`models["${id}"].variant must be one of ${VARIANTS.join(', ')}`);
    }
    if (e.graph_rewrite !== undefined && typeof e.graph_rewrite !== 'boolean')
      fail(`models["${id}"].graph_rewrite must be true or false`);
    if (e.synthetic && (typeof e.synthetic.shape !== 'string' || typeof e.synthetic.dtype !== 'string')) {
      fail(`models["${id}"].synthetic needs "shape" and "dtype"`);
    }
    if (e.synthetic?.weights !== undefined && (typeof e.synthetic.weights !== 'string' || !e.synthetic.weights)) {
      fail(`models["${id}"].synthetic.weights must be a path to a safetensors file`);
    }
  }
  for (const [alias, target] of Object.entries(aliases)) {
    if (own(models, alias)) fail(`alias "${alias}" is also a versioned id`);
    if (!own(models, target)) fail(`alias "${alias}" points to unknown model "${target}"`);
  }
  const def = r.default;
  if (typeof def !== 'string' || (!own(models, def) && !own(aliases, def)))
    fail(`"default" must name a model or alias`);
  return { default: def as string, models, aliases, file: resolve(file) };
}

export function loadRegistry(file: string = DEFAULT_REGISTRY_FILE): Registry {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`model registry ${file}: cannot read (${(e as Error).message})`, { cause: e });
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new Error(`model registry ${file}: not valid JSON (${(e as Error).message})`, { cause: e });
  }
  return checkRegistry(data, file);
}

/** A name (alias or versioned id) → the versioned id, its folder and entry; undefined if unknown. */
export function resolveModel(registry: Registry, name: string): ResolvedModel | undefined {
  const id = own(registry.aliases, name) ?? name;
  const entry = own(registry.models, id);
  if (!entry) return undefined;
  return { id, dir: entry.escalate ? '' : resolve(dirname(registry.file), entry.path), entry };
}

/** What is wrong with an escalation spec (a path suffix and why), or undefined. */
function escalationProblem(
  x: EscalationSpec,
  models: Record<string, ModelEntry>,
  aliases: Record<string, string>,
): string | undefined {
  if (typeof x !== 'object' || x === null) return ' must be an object';
  const local = (name: unknown): string | undefined => {
    const id = typeof name === 'string' ? (own(aliases, name) ?? name) : undefined;
    const entry = id === undefined ? undefined : own(models, id);
    if (!entry) return 'must name a model of the registry';
    return entry.escalate ? 'must name a model that does not escalate itself' : undefined;
  };
  const first = local(x.first);
  if (first) return `.first ${first}`;
  if (typeof x.second === 'string') {
    const second = local(x.second);
    if (second) return `.second ${second}`;
  } else if (typeof x.second !== 'object' || x.second === null)
    return '.second must be a model name or {"url", "model", "api_key_env"}';
  else {
    if (typeof x.second.url !== 'string' || !/^https?:\/\/[^/]/.test(x.second.url))
      return '.second.url must be an http(s) URL';
    if (typeof x.second.model !== 'string' || !x.second.model) return '.second.model must be a model name';
    if (x.second.api_key_env !== undefined && (typeof x.second.api_key_env !== 'string' || !x.second.api_key_env))
      return '.second.api_key_env must name an environment variable';
  }
  if (typeof x.below !== 'object' || x.below === null || Array.isArray(x.below))
    return '.below must map question types to thresholds';
  for (const [type, t] of Object.entries(x.below)) {
    if (!['noul', 'choice', 'score'].includes(type)) return `.below.${type}: the types are noul, choice and score`;
    if (t !== null && !(typeof t === 'number' && t >= 0 && t <= 1))
      return `.below.${type} must be a certainty between 0 and 1, or null (escalate all)`;
  }
  if (x.timeout_ms !== undefined && !(typeof x.timeout_ms === 'number' && x.timeout_ms > 0))
    return '.timeout_ms must be a positive number of milliseconds';
  if (x.on_failure !== undefined && x.on_failure !== 'first' && x.on_failure !== 'error')
    return '.on_failure must be "first" or "error"';
  return undefined;
}

/** Names GET /v1/models lists: the aliases, then versioned ids marked `listed`. */
export function listModelNames(registry: Registry): string[] {
  const listed = Object.entries(registry.models)
    .filter(([, e]) => e.listed)
    .map(([id]) => id);
  return [...Object.keys(registry.aliases), ...listed];
}

/** Every name the `model` field accepts (aliases and versioned ids). */
export function acceptedModelNames(registry: Registry): string[] {
  return [...Object.keys(registry.aliases), ...Object.keys(registry.models)];
}

/**
 * Adds or replaces a versioned model (and points the given aliases at it), writing the file
 * atomically (temp file + rename). A relative `entry.path` is taken relative to the registry's folder.
 */
export function registerModel(
  file: string,
  id: string,
  entry: ModelEntry,
  aliases: string[] = [],
  makeDefault = false,
): Registry {
  const current: RegistryFile = existsSync(file)
    ? (({ file: _f, ...rest }) => rest)(loadRegistry(file))
    : { default: id, models: {}, aliases: {} };
  const next: RegistryFile = {
    default: makeDefault ? id : current.default,
    models: { ...current.models, [id]: entry },
    aliases: { ...current.aliases },
  };
  for (const a of aliases) next.aliases[a] = id;
  const checked = checkRegistry(next, file);
  writeJsonAtomic(file, next);
  return checked;
}

/** Writes JSON to a temp file beside `file`, then renames it into place: readers never see half a file. */
export function writeJsonAtomic(file: string, data: unknown): void {
  mkdirSync(dirname(resolve(file)), { recursive: true });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, JSON.stringify(data, null, 2) + '\n');
  renameSync(tmp, file);
}
