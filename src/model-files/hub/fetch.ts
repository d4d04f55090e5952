// Download a Hugging Face ONNX export (transformers.js / Optimum layout) into a local folder,
// resuming partial files and verifying every byte against the hub's own checksums.
//
// The hub's metadata calls go through @huggingface/hub (modelInfo resolves the revision to a
// commit, listFiles lists the tree with LFS oids). The byte transfer is a plain fetch with a
// Range header: @huggingface/hub's WebBlob cannot tell whether a Range was honoured (a 200 with
// the whole file would be appended to the partial one) and turns HTTP failures mid-stream into
// bare strings, and resuming needs both.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rename, rm, stat, truncate } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HubApiError, listFiles, modelInfo } from '@huggingface/hub';

import { ONNX_DIRS, VARIANTS, variantFileNames, type Variant } from '../../engine/index.js';

export { VARIANTS, type Variant } from '../../engine/index.js';

/** Tokenizer files every export needs; a repo without one of them is not something the engine can load. */
const TOKENIZER_FILES = ['tokenizer.json', 'tokenizer_config.json'];
/** Fetched when the repo has them: newer exports keep the chat template in its own file. */
const OPTIONAL_FILES = [
  'generation_config.json',
  'chat_template.jinja',
  'chat_template.json',
  'special_tokens_map.json',
];

export const DEFAULT_HUB_URL = 'https://huggingface.co';

export type HubFetchErrorCode = 'not_found' | 'unauthorized' | 'missing_file' | 'checksum' | 'http' | 'network';

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
  /** Which ONNX file of a transformers.js / Optimum export (default int8); an onnxruntime-genai folder has one. */
  variant?: Variant;
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
  /** The variant fetched; undefined for an onnxruntime-genai folder (its genai_config.json names its one file). */
  variant?: Variant;
  layout: 'hf' | 'optimum' | 'genai';
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

  const {
    files: wanted,
    layout,
    variant,
  } = selectFiles(tree, opts.variant, opts.subfolder ?? '', `${opts.repo}@${revision}`);
  const modelDir = path.join(
    opts.destRoot,
    ...opts.repo.split('/'),
    commit,
    ...(opts.subfolder ?? '').split('/').filter(Boolean),
  );
  const totalBytes = wanted.reduce((n, f) => n + f.size, 0);
  let doneBytes = 0;
  const files: FetchedFile[] = [];
  for (const file of wanted) {
    const before = doneBytes;
    const fetched = await fetchFile({
      file,
      url: `${hubUrl}/${opts.repo}/resolve/${encodeURIComponent(commit)}/${file.path.split('/').map(encodeURIComponent).join('/')}`,
      dest: path.join(modelDir, ...(file.local ?? file.path).split('/')),
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
    variant,
    layout,
    modelDir,
    files,
    hubUrl,
  };
}

/**
 * The files of one loadable folder: an onnxruntime-genai build (genai_config.json, every .onnx and
 * its data at that level), or a transformers.js / Optimum export (config.json and the variant's
 * file under onnx/ or at the root, with its external data), plus the tokenizer and template files.
 */
function selectFiles(
  tree: Map<string, RemoteFile>,
  asked: Variant | undefined,
  subfolder: string,
  where: string,
): { files: RemoteFile[]; layout: FetchModelResult['layout']; variant?: Variant } {
  const prefix = subfolder ? `${subfolder.replace(/^\/+|\/+$/g, '')}/` : '';
  const has = (p: string) => tree.has(prefix + p);
  const pick = (paths: string[]) => paths.map((p) => ({ ...tree.get(prefix + p)!, local: p }));
  const level = [...tree.keys()].filter((p) => p.startsWith(prefix)).map((p) => p.slice(prefix.length));
  const optional = OPTIONAL_FILES.filter(has);

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
    return { files: pick(['genai_config.json', ...TOKENIZER_FILES, ...optional, ...onnx]), layout: 'genai' };
  }

  const variant = asked ?? 'int8';
  const onnx = ONNX_DIRS.flatMap((dir) => variantFileNames(variant).map((f) => (dir === '.' ? f : `${dir}/${f}`))).find(
    has,
  );
  const missing = ['config.json', ...TOKENIZER_FILES].filter((p) => !has(p));
  if (missing.length || !onnx) {
    const variants = VARIANTS.filter((v) =>
      ONNX_DIRS.some((dir) => variantFileNames(v).some((f) => has(dir === '.' ? f : `${dir}/${f}`))),
    );
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
  // External weights: model.onnx_data, or model.onnx_data_1, _2 ... for exports over 2 GB; model.onnx.data.
  const external = new RegExp(`^${escapeRe(onnx)}(_data(_\\d+)?|\\.data)$`);
  const paths = ['config.json', ...TOKENIZER_FILES, ...optional, onnx, ...level.filter((p) => external.test(p)).sort()];
  return { files: pick(paths), layout: onnx.includes('/') ? 'hf' : 'optimum', variant };
}

interface FetchFileArgs {
  file: RemoteFile;
  url: string;
  dest: string;
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

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
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
