// Download a Hugging Face ONNX export into a local folder, resuming partial files and verifying
// every byte against the hub's own checksums. Which files (select.ts): the repo's listing is read
// with the engine's own rules (each family's descriptor: its detection, its fetch rule; files.ts's
// graph and tokenizer places), so the folder holds what the engine loads for that family. The
// bytes (transfer.ts): resumed, verified. The hub's metadata calls go through @huggingface/hub
// (modelInfo resolves the revision to a commit, listFiles lists the tree with LFS oids).
import path from 'node:path';
import { listFiles, modelInfo } from '@huggingface/hub';
import { DEFAULT_FAMILY, familyNamed, type FamilyName, type Variant } from '../../engine/index.js';
import { HubFetchError } from './errors.js';
import { repoFamily, repoLevel, selectDecoderFiles, selectRowFiles, type RemoteFile } from './select.js';
import { abortable, fetchFile, hubCall, readSmallFile, type FetchedFile } from './transfer.js';

export { VARIANTS, type Variant } from '../../engine/index.js';
export { HubFetchError, type HubFetchErrorCode } from './errors.js';
export { formatBytes, type FetchedFile } from './transfer.js';

export const DEFAULT_HUB_URL = 'https://huggingface.co';

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
  const family = found && familyNamed(found.family);
  const selection =
    family?.fetch && found
      ? selectRowFiles(repo, family, found.from, opts.variant, opts.split === true)
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
    family: found?.family ?? DEFAULT_FAMILY,
    familyFrom: found?.from ?? 'config.json',
    graph: selection.graph,
    split: selection.split === true,
    modelDir,
    files,
    hubUrl,
  };
}

function isoDay(d: Date): string {
  return Number.isNaN(d.getTime()) ? new Date().toISOString().slice(0, 10) : d.toISOString().slice(0, 10);
}
