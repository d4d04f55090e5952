// The model registry: which names the `model` field accepts and which folder answers them.
//
// File format (models/registry.json; `path` is relative to the registry file's folder):
//   {"default": "svc-1.13.0",
//    "models":  {"svc-1.13.0": {"path": "generated/tiny-fp32", "synthetic": {"shape": "tiny", "dtype": "fp32"},
//                               "variant": "fp32", "description": "...", "release_date": "2026-11-22"}},
//    "aliases": {"svc-latest": "svc-1.13.0", "svc-preview": "svc-1.13.0"}}
// Versioned ids (keys of `models`) are always accepted; GET /v1/models lists the aliases, plus
// any versioned id whose entry says `"listed": true` (as the hosted service: "the list currently holds the aliases").
// The format, its checks and the unknown-field policy: schema.ts (reference: docs/file-formats.md).
import { existsSync, readFileSync, renameSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fileProblem } from '../protocol/index.js';
import { RegistryFileSchema, type ModelEntry, type RegistryFile } from './schema.js';

export const DEFAULT_REGISTRY_FILE = fileURLToPath(new URL('../../models/registry.json', import.meta.url));

export type { EscalationSpec, ModelEntry, RegistryFile, RemoteModel, SyntheticSpec } from './schema.js';

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

function own<T>(o: Record<string, T>, k: string): T | undefined {
  return Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined;
}

/** Checks the registry against its schema and cross-references; throws naming the file, the path in it and what was expected. */
export function checkRegistry(data: unknown, file: string): Registry {
  const parsed = RegistryFileSchema.safeParse(data);
  if (!parsed.success) throw new Error(fileProblem(`model registry ${file}`, parsed.error));
  return { ...parsed.data, file: resolve(file) };
}

/** The file's JSON, unchecked. */
function readRegistryJson(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`model registry ${file}: cannot read (${(e as Error).message})`, { cause: e });
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Error(`model registry ${file}: not valid JSON (${(e as Error).message})`, { cause: e });
  }
}

export function loadRegistry(file: string = DEFAULT_REGISTRY_FILE): Registry {
  return checkRegistry(readRegistryJson(file), file);
}

/** A name (alias or versioned id) → the versioned id, its folder and entry; undefined if unknown. */
export function resolveModel(registry: Registry, name: string): ResolvedModel | undefined {
  const id = own(registry.aliases, name) ?? name;
  const entry = own(registry.models, id);
  if (!entry) return undefined;
  return { id, dir: entry.escalate ? '' : resolve(dirname(registry.file), entry.path), entry };
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
  // The file as written (not as parsed): fields this version does not know are kept.
  const exists = existsSync(file);
  const current = exists
    ? (readRegistryJson(file) as Record<string, unknown>)
    : { default: id, models: {}, aliases: {} };
  if (exists) checkRegistry(current, file);
  const next = {
    ...current,
    default: makeDefault ? id : current.default,
    models: { ...(current.models as Record<string, unknown>), [id]: entry },
    aliases: { ...(current.aliases as Record<string, string> | undefined) },
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
