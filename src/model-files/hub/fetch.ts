// Download a Hugging Face ONNX export into a local folder, resuming partial files and verifying
// every byte against the hub's own checksums. Which files: the repo's listing is read with the
// engine's own rules (engine/families: detect.ts's familyOfFiles, files.ts's graph and tokenizer
// places), so the folder holds what the engine loads for that family: a decoder (transformers.js /
// Optimum, or onnxruntime-genai), a Laya decision model (laya-markers) or an NLI cross-encoder
// (nli-pairs).
//
// The hub's metadata calls go through @huggingface/hub (modelInfo resolves the revision to a
// commit, listFiles lists the tree with LFS oids). The byte transfer is a plain fetch with a
// Range header: @huggingface/hub's WebBlob cannot tell whether a Range was honoured (a 200 with
// the whole file would be appended to the partial one) and turns HTTP failures mid-stream into
// bare strings, and resuming needs both.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HubApiError, listFiles, modelInfo } from '@huggingface/hub';

import {
  DECISION_FILE,
  familyOfFiles,
  findSingleGraph,
  findSplitGraph,
  isExternalData,
  LAYA_CONFIG,
  isRowFamily,
  ModelLoadError,
  NLI_CONFIG,
  ONNX_DIRS,
  singleGraphVariants,
  TOKENIZER_FILES as FAMILY_TOKENIZER_FILES,
  tokenizerFolder,
  VARIANTS,
  variantFileNames,
  type RowFamilyName,
  type FamilyEvidence,
  type FamilyName,
  type HasFile,
  type Variant,
} from '../../engine/index.js';

export { VARIANTS, type Variant } from '../../engine/index.js';

/** Tokenizer files every decoder export needs; a repo without one of them is not something the engine can load. */
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'];
/** Fetched when the repo has them: newer exports keep the chat template in its own file; a decider-labels model its contract's files. */
const OPTIONAL_FILES = [
  'generation_config.json',
  'chat_template.jinja',
  'chat_template.json',
  'special_tokens_map.json',
  'decision.json',
  'calibration.json',
];

export const DEFAULT_HUB_URL = 'https://huggingface.co';

/** `layout`: the repo's files say something the engine cannot load (an unknown decision.json layout, invalid JSON). */
export type HubFetchErrorCode =
  'not_found' | 'unauthorized' | 'missing_file' | 'layout' | 'checksum' | 'http' | 'network';

export class HubFetchError extends Error {
  constructor(
    readonly code: HubFetchErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'HubFetchError';
  }
}

export interface FetchProgress {
  /** Repo path of the file being transferred. */
  file: string;
  /** Bytes of all files of this fetch already on disk (verified, resumed or just received). */
  doneBytes: number;
  totalBytes: number;
}

export interface FetchModelOptions {
  repo: string;
  /** Branch, tag or commit; default "main". The folder is named after the commit it resolves to. */
  revision?: string;
  /**
   * Which ONNX file of a transformers.js / Optimum export. Default: int8 for a decoder; for an
   * encoder family the engine's choice (the first of int8, quantized, fp32, … the repo has, else a
   * Laya model's split export). An onnxruntime-genai folder has one.
   */
  variant?: Variant;
  /** A Laya model's split export (encoder.onnx + head.onnx, with their external data) rather than a single graph. */
  split?: boolean;
  /** A folder of the repo holding the export (onnxruntime-genai repos keep one build per folder). */
  subfolder?: string;
  /** Folder holding <repo>/<commit>/ folders. */
  destRoot: string;
  /** Default: HF_ENDPOINT, else https://huggingface.co. */
  hubUrl?: string;
  /** Default: HF_TOKEN. */
  accessToken?: string;
  signal?: AbortSignal;
  onProgress?: (p: FetchProgress) => void;
  /** One line per notable event (resume, verified, skipped). */
  log?: (line: string) => void;
}

export interface FetchedFile {
  path: string;
  size: number;
  /** sha256 for LFS files, git blob sha1 for small files. */
  checksum: string;
  /** How the bytes got there this time. */
  how: 'downloaded' | 'resumed' | 'present';
}

export interface FetchModelResult {
  repo: string;
  revision: string;
  commit: string;
  /** YYYY-MM-DD of the repo's last modification as the hub reports it. */
  lastModified: string;
  /** The variant fetched; undefined for an onnxruntime-genai folder (its genai_config.json names its one file) or a split export. */
  variant?: Variant;
  /** Where the graph was: under onnx/ (transformers.js), at the root (Optimum), an onnxruntime-genai build. */
  layout: 'hf' | 'optimum' | 'genai';
  /** The model family, by the engine's rules: the engine detects the same from the fetched folder. */
  family: FamilyName;
  /** The file that says so (decision.json, rl_agent_config.json, nli_config.json, config.json, genai_config.json). */
  familyFrom: string;
  /** The ONNX graph file(s) fetched (paths in the model folder), without their external data. */
  graph: string[];
  /** Whether the graph is a Laya model's split export (encoder.onnx + head.onnx). */
  split: boolean;
  modelDir: string;
  files: FetchedFile[];
  hubUrl: string;
}

interface RemoteFile {
  path: string;
  /** Path inside the local model folder (the repo path less the subfolder). */
  local?: string;
  size: number;
  /** git blob sha1 (non-LFS) */
  oid?: string;
  lfs?: { oid: string; size: number };
}

export function hubUrlFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return (env.HF_ENDPOINT || DEFAULT_HUB_URL).replace(/\/+$/, '');
}

export async function fetchModel(opts: FetchModelOptions): Promise<FetchModelResult> {
  const hubUrl = (opts.hubUrl ?? hubUrlFromEnv()).replace(/\/+$/, '');
  const accessToken = opts.accessToken ?? (process.env.HF_TOKEN || undefined);
  const revision = opts.revision ?? 'main';
  const log = opts.log ?? (() => {});
  if (!/^[\w.-]+\/[\w.-]+$/.test(opts.repo)) {
    throw new HubFetchError(
      'not_found',
      `"${opts.repo}" is not a model repo id; expected <owner>/<name>, e.g. onnx-community/Qwen2.5-0.5B-Instruct`,
    );
  }

  const info = await hubCall(opts.repo, revision, hubUrl, () =>
    modelInfo({
      name: opts.repo,
      revision,
      hubUrl,
      accessToken,
      additionalFields: ['sha'],
      fetch: abortable(opts.signal),
    }),
  );
  const commit = info.sha;
  if (!commit || !/^[0-9a-f]{40}$/.test(commit)) {
    throw new HubFetchError('http', `${hubUrl} returned no commit for ${opts.repo}@${revision}`);
  }

  const tree = new Map<string, RemoteFile>();
  await hubCall(opts.repo, revision, hubUrl, async () => {
    for await (const e of listFiles({
      repo: opts.repo,
      revision: commit,
      recursive: true,
      hubUrl,
      accessToken,
      fetch: abortable(opts.signal),
    })) {
      if (e.type === 'file') tree.set(e.path, { path: e.path, size: e.size, oid: e.oid, lfs: e.lfs });
    }
  });

  const modelDir = path.join(
    opts.destRoot,
    ...opts.repo.split('/'),
    commit,
    ...(opts.subfolder ?? '').split('/').filter(Boolean),
  );
  const url = (file: RemoteFile) =>
    `${hubUrl}/${opts.repo}/resolve/${encodeURIComponent(commit)}/${file.path.split('/').map(encodeURIComponent).join('/')}`;
  const dest = (file: RemoteFile) => path.join(modelDir, ...(file.local ?? file.path).split('/'));

  const repo = repoLevel(tree, opts.subfolder ?? '', `${opts.repo}@${revision}`);
  // The JSON files the family rules read (decision.json, config.json) are read before anything is
  // written (verified, or taken from a verified copy already in the folder); their bytes are
  // written with the rest.
  const read = new Map<string, Buffer>();
  const found = await repoFamily(repo, async (rel) => {
    const file = repo.pick([rel])[0]!;
    const bytes = await readSmallFile(file, url(file), dest(file), accessToken, opts.signal);
    read.set(file.path, bytes);
    return bytes;
  });
  const selection =
    found && isRowFamily(found.family)
      ? selectEncoderFiles(repo, found.family, found.from, opts.variant, opts.split === true)
      : selectDecoderFiles(repo, opts.variant, opts.split === true);
  const wanted = selection.files;
  const totalBytes = wanted.reduce((n, f) => n + f.size, 0);
  let doneBytes = 0;
  const files: FetchedFile[] = [];
  for (const file of wanted) {
    const before = doneBytes;
    const fetched = await fetchFile({
      file,
      url: url(file),
      dest: dest(file),
      bytes: read.get(file.path),
      accessToken,
      signal: opts.signal,
      log,
      onBytes: (n) => opts.onProgress?.({ file: file.path, doneBytes: before + n, totalBytes }),
    });
    doneBytes = before + file.size;
    opts.onProgress?.({ file: file.path, doneBytes, totalBytes });
    files.push(fetched);
  }
  return {
    repo: opts.repo,
    revision,
    commit,
    lastModified: isoDay(info.updatedAt),
    variant: selection.variant,
    layout: selection.layout,
    family: found?.family ?? 'decoder',
    familyFrom: found?.from ?? 'config.json',
    graph: selection.graph,
    split: selection.split === true,
    modelDir,
    files,
    hubUrl,
  };
}

/** The repo's files at one level (the whole repo, or a subfolder), by paths relative to that level. */
interface RepoLevel {
  prefix: string;
  has: HasFile;
  /** The files at these paths, to be written at those paths in the model folder. */
  pick: (paths: string[]) => RemoteFile[];
  /** Every path under the level. */
  level: string[];
  /** <repo>@<revision>, for messages. */
  where: string;
}

function repoLevel(tree: Map<string, RemoteFile>, subfolder: string, where: string): RepoLevel {
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
async function repoFamily(
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

interface Selection {
  files: RemoteFile[];
  layout: FetchModelResult['layout'];
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
function selectDecoderFiles(repo: RepoLevel, asked: Variant | undefined, split: boolean): Selection {
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
 * An encoder family's files, as its loader reads them (engine/families): the graph the engine
 * would run (the variant asked for, else the first of its default order the repo has, else a Laya
 * model's split encoder.onnx + head.onnx; `split` asks for that) with its external data; the
 * family's settings (Laya: rl_agent_config.json; NLI: config.json, nli_config.json when present;
 * a causal-row family such as Kev: decision.json, calibration.json when present);
 * the tokenizer files in tokenizer/ or at the root, where they are; config.json, decision.json and
 * assay.json when present.
 */
function selectEncoderFiles(
  repo: RepoLevel,
  family: RowFamilyName,
  from: string,
  asked: Variant | undefined,
  split: boolean,
): Selection {
  const { prefix, has, pick, level, where } = repo;
  const laya = family === 'laya-markers';
  const what = `${where}${prefix ? ` (${prefix})` : ''} (${family}, by its ${from})`;
  if (split && (!laya || asked))
    throw new HubFetchError(
      'missing_file',
      laya
        ? `${what}: --split and --variant each choose the graph; give one`
        : `${what}: --split is for a Laya model's split export (encoder.onnx + head.onnx); an NLI cross-encoder is one graph`,
    );
  const single = split ? undefined : findSingleGraph(has, asked);
  const halves = laya && !asked ? findSplitGraph(has) : undefined;
  const graph = single ? [single.single] : halves ? [halves.encoder, halves.head] : [];

  const tokenizer = tokenizerFolder(has);
  const inTokenizer = (f: string) => (tokenizer ? `${tokenizer}/${f}` : f);
  // A causal-row family (Kev …) is known by its decision.json alone; an NLI cross-encoder by config.json.
  const settings = laya ? LAYA_CONFIG : family === 'nli-pairs' ? 'config.json' : DECISION_FILE;
  const required = [settings, inTokenizer('tokenizer.json')];
  const missing = required.filter((p) => !has(p)).map((p) => prefix + p);
  if (missing.length || !graph.length) {
    let hint = '';
    if (!graph.length) {
      const wanted = split
        ? 'encoder.onnx with head.onnx'
        : [...new Set((asked ? [asked] : VARIANTS).flatMap(variantFileNames))].join(' / ');
      const variants = [...singleGraphVariants(has), ...(laya && findSplitGraph(has) ? ['split (--split)'] : [])];
      missing.push(split ? 'the split export' : asked ? `the ${asked} ONNX file` : 'an ONNX graph');
      hint = ` No ${wanted} under onnx/ or at the root. Variants this repo has: ${variants.join(', ') || 'none'}.`;
    }
    throw new HubFetchError('missing_file', `${what} lacks ${missing.join(', ')}.${hint}`);
  }
  const paths = [
    ...new Set([
      ...required,
      'config.json',
      ...(laya ? [] : [NLI_CONFIG]),
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

interface FetchFileArgs {
  file: RemoteFile;
  url: string;
  dest: string;
  /** The file's bytes, already read and verified (readSmallFile): written as they are. */
  bytes?: Buffer;
  accessToken?: string;
  signal?: AbortSignal;
  log: (line: string) => void;
  onBytes: (bytesOnDisk: number) => void;
}

/** Downloads one file into dest via dest.part, resuming a partial .part, and verifies it. */
async function fetchFile(a: FetchFileArgs): Promise<FetchedFile> {
  const { file, dest } = a;
  const expected = expectedChecksum(file);
  await mkdir(path.dirname(dest), { recursive: true });

  const present = await sizeOf(dest);
  if (present === file.size) {
    const actual = await hashFile(dest, expected.algo, file.size);
    if (actual === expected.value) {
      a.onBytes(file.size);
      return { path: file.path, size: file.size, checksum: actual, how: 'present' };
    }
    a.log(`${file.path}: the copy on disk does not match the hub's checksum; downloading it again`);
  }
  if (present !== undefined) await rm(dest, { force: true });

  const part = `${dest}.part`;
  if (a.bytes) {
    await writeFile(part, a.bytes);
    await rename(part, dest);
    a.onBytes(file.size);
    return { path: file.path, size: file.size, checksum: expected.value, how: 'downloaded' };
  }
  let offset = (await sizeOf(part)) ?? 0;
  if (offset > file.size) {
    await rm(part, { force: true });
    offset = 0;
  }
  const hash = newHasher(expected.algo, file.size);
  if (offset > 0) {
    // Hash what is already there so the whole file is verified, not just the new bytes.
    for await (const chunk of createReadStream(part)) hash.update(chunk as Buffer);
  }

  let how: FetchedFile['how'] = offset > 0 ? 'resumed' : 'downloaded';
  if (offset < file.size) {
    const headers: Record<string, string> = {};
    if (a.accessToken) headers.Authorization = `Bearer ${a.accessToken}`;
    if (offset > 0) headers.Range = `bytes=${offset}-`;
    const res = await fetch(a.url, { headers, signal: a.signal }).catch((e: unknown) => {
      throw networkError(e, `cannot download ${file.path} from ${a.url}`, a.signal);
    });
    if (offset > 0 && res.status === 200) {
      // The server ignored the Range: start over rather than append the whole file.
      a.log(`${file.path}: the server does not resume partial downloads; starting it over`);
      await truncate(part, 0);
      offset = 0;
      hash.reset();
      how = 'downloaded';
    } else if (res.status === 206) {
      const start = Number(/^bytes (\d+)-/.exec(res.headers.get('content-range') ?? '')?.[1]);
      if (start !== offset) {
        await res.body?.cancel();
        throw new HubFetchError(
          'http',
          `${file.path}: asked for bytes from ${offset}, the server sent a range starting at ${res.headers.get('content-range')}`,
        );
      }
      a.log(`${file.path}: resuming at ${formatBytes(offset)} of ${formatBytes(file.size)}`);
    } else if (!res.ok) {
      await res.body?.cancel();
      throw httpError(res.status, `downloading ${file.path} from ${a.url}`);
    }
    if (!res.body) throw new HubFetchError('http', `${file.path}: empty response from ${a.url}`);
    let onDisk = offset;
    a.onBytes(onDisk);
    try {
      await pipeline(
        Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>),
        new Transform({
          transform(chunk: Buffer, _enc, cb) {
            hash.update(chunk);
            onDisk += chunk.length;
            a.onBytes(Math.min(onDisk, file.size));
            cb(null, chunk);
          },
        }),
        createWriteStream(part, { flags: offset > 0 ? 'a' : 'w' }),
        { signal: a.signal },
      );
    } catch (e) {
      throw networkError(
        e,
        `the transfer of ${file.path} stopped at ${formatBytes(onDisk)} of ${formatBytes(file.size)}; run the same command again to resume`,
        a.signal,
      );
    }
  }

  const size = (await sizeOf(part)) ?? 0;
  const actual = hash.digest();
  if (size !== file.size || actual !== expected.value) {
    // A corrupt .part would poison every later resume: drop it so the next run starts clean.
    await rm(part, { force: true });
    throw new HubFetchError(
      'checksum',
      `${file.path} failed verification: expected ${expected.algo} ${expected.value} (${file.size} bytes), got ${actual} (${size} bytes). The partial file was deleted; run the fetch again.`,
    );
  }
  await rename(part, dest);
  return { path: file.path, size: file.size, checksum: actual, how };
}

/**
 * A small file's bytes, verified against the hub's checksum, without writing it: from a verified
 * copy at dest when there is one, else downloaded whole.
 */
async function readSmallFile(
  file: RemoteFile,
  url: string,
  dest: string,
  accessToken: string | undefined,
  signal: AbortSignal | undefined,
): Promise<Buffer> {
  const expected = expectedChecksum(file);
  const digest = (b: Buffer) => {
    const h = newHasher(expected.algo, b.length);
    h.update(b);
    return h.digest();
  };
  if ((await sizeOf(dest)) === file.size) {
    const copy = await readFile(dest);
    if (digest(copy) === expected.value) return copy;
  }
  const res = await fetch(url, {
    headers: accessToken ? { Authorization: `Bearer ${accessToken}` } : {},
    signal,
  }).catch((e: unknown) => {
    throw networkError(e, `cannot download ${file.path} from ${url}`, signal);
  });
  if (!res.ok) {
    await res.body?.cancel();
    throw httpError(res.status, `downloading ${file.path} from ${url}`);
  }
  const bytes = Buffer.from(
    await res.arrayBuffer().catch((e: unknown) => {
      throw networkError(e, `the transfer of ${file.path} stopped; run the same command again`, signal);
    }),
  );
  const actual = digest(bytes);
  if (bytes.length !== file.size || actual !== expected.value)
    throw new HubFetchError(
      'checksum',
      `${file.path} failed verification: expected ${expected.algo} ${expected.value} (${file.size} bytes), got ${actual} (${bytes.length} bytes). Run the fetch again.`,
    );
  return bytes;
}

/** A JSON object file of the repo; anything else is a layout error naming it. */
function parseJson(bytes: Buffer, where: string): Record<string, unknown> {
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
function expectedChecksum(f: RemoteFile): { algo: 'sha256' | 'git-sha1'; value: string } {
  if (f.lfs) return { algo: 'sha256', value: f.lfs.oid };
  if (f.oid) return { algo: 'git-sha1', value: f.oid };
  throw new HubFetchError('http', `the hub listed ${f.path} without a checksum`);
}

interface Hasher {
  update(b: Buffer): void;
  reset(): void;
  digest(): string;
}

function newHasher(algo: 'sha256' | 'git-sha1', size: number): Hasher {
  const make = () => {
    if (algo === 'sha256') return createHash('sha256');
    // git hashes "blob <size>\0" + content
    return createHash('sha1').update(`blob ${size}\0`);
  };
  let h = make();
  return {
    update: (b) => void h.update(b),
    reset: () => void (h = make()),
    digest: () => h.digest('hex'),
  };
}

async function hashFile(file: string, algo: 'sha256' | 'git-sha1', size: number): Promise<string> {
  const h = newHasher(algo, size);
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest();
}

async function sizeOf(p: string): Promise<number | undefined> {
  try {
    return (await stat(p)).size;
  } catch {
    return undefined;
  }
}

/** Turns @huggingface/hub's HubApiError into a message that says what to do. */
async function hubCall<T>(repo: string, revision: string, hubUrl: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof HubApiError) {
      const what = `${repo}@${revision} on ${hubUrl}`;
      if (e.statusCode === 404 || e.statusCode === 401) {
        // The hub answers 401 for a repo that does not exist or that the token may not see.
        throw new HubFetchError(
          'not_found',
          `model repository ${what} was not found (HTTP ${e.statusCode}). Check the repo id and revision; for a private or gated repo set HF_TOKEN.`,
        );
      }
      throw httpError(e.statusCode, `asking ${hubUrl} about ${repo}@${revision}: ${e.message}`);
    }
    if (e instanceof TypeError && /access token/.test(e.message)) {
      throw new HubFetchError('unauthorized', `HF_TOKEN is not a Hugging Face token: ${e.message}`);
    }
    throw networkError(e, `cannot reach ${hubUrl}`);
  }
}

/** A failed connection or an interrupted body as a HubFetchError (an abort stays an abort). */
function networkError(e: unknown, doing: string, signal?: AbortSignal): unknown {
  if (signal?.aborted || e instanceof HubFetchError) return e;
  const err = e as Error & { cause?: { code?: string; message?: string }; code?: string };
  if (!(err instanceof Error)) return e;
  const why = err.cause?.code ?? err.code ?? err.cause?.message ?? err.message;
  return new HubFetchError('network', `${doing} (${why})`);
}

function httpError(status: number, doing: string): HubFetchError {
  if (status === 401 || status === 403) {
    return new HubFetchError(
      'unauthorized',
      `HTTP ${status} ${doing}: the repo is private or gated; set HF_TOKEN to a token with access`,
    );
  }
  if (status === 404) return new HubFetchError('not_found', `HTTP 404 ${doing}`);
  return new HubFetchError('http', `HTTP ${status} ${doing}`);
}

function abortable(signal?: AbortSignal): typeof fetch {
  return (input, init) => fetch(input, { ...init, signal });
}

function isoDay(d: Date): string {
  return Number.isNaN(d.getTime()) ? new Date().toISOString().slice(0, 10) : d.toISOString().slice(0, 10);
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}
