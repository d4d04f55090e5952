// The bytes of a hub fetch: each file resumed where a partial copy stopped (a Range request whose
// answer is checked to be the range), verified against the hub's checksum (sha256 of an LFS file,
// the git blob sha1 of a small one), and the hub's metadata calls wrapped so their failures say
// what to do. A plain fetch with a Range header: @huggingface/hub's WebBlob cannot tell whether a
// Range was honoured and turns HTTP failures mid-stream into bare strings, and resuming needs both.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HubApiError } from '@huggingface/hub';
import { HubFetchError } from './errors.js';
import type { RemoteFile } from './select.js';

export interface FetchedFile {
  path: string;
  size: number;
  /** sha256 for LFS files, git blob sha1 for small files. */
  checksum: string;
  /** How the bytes got there this time. */
  how: 'downloaded' | 'resumed' | 'present';
}

export interface FetchFileArgs {
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
export async function fetchFile(a: FetchFileArgs): Promise<FetchedFile> {
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
      `${file.path} failed verification: expected ${expected.algo} ${expected.value} ` +
        `(${file.size} bytes), got ${actual} (${size} bytes). The partial file was deleted; run ` +
        `the fetch again.`,
    );
  }
  await rename(part, dest);
  return { path: file.path, size: file.size, checksum: actual, how };
}

/**
 * A small file's bytes, verified against the hub's checksum, without writing it: from a verified
 * copy at dest when there is one, else downloaded whole.
 */
export async function readSmallFile(
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
      `${file.path} failed verification: expected ${expected.algo} ${expected.value} ` +
        `(${file.size} bytes), got ${actual} (${bytes.length} bytes). Run the fetch again.`,
    );
  return bytes;
}

/** A JSON object file of the repo; anything else is a layout error naming it. */
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
export async function hubCall<T>(repo: string, revision: string, hubUrl: string, fn: () => Promise<T>): Promise<T> {
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

export function abortable(signal?: AbortSignal): typeof fetch {
  return (input, init) => fetch(input, { ...init, signal });
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
