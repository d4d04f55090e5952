// The output of `assay batch`: the results file, written a page at a time, and beside it a small
// state file ({url, batchId, cursor, bytes, sha256}) rewritten after each page is appended and
// synced. A run that finds the state file truncates the results to the bytes it records and
// reads on from its cursor, so after a crash at any point no result line is lost or written twice.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, readFile, rename, rm, type FileHandle } from 'node:fs/promises';

export interface BatchState {
  /** The server the batch is on (the in-process server's changes from run to run). */
  url: string;
  batchId: string;
  /** The results page to read next starts after this cursor; none: the first page. */
  cursor: string | null;
  /** The results file's length once the pages before the cursor were appended. */
  bytes: number;
  /** The input file's SHA-256 (hex): a state file of another input is not resumed. */
  sha256: string;
  /** The server's models identity when the batch was made: a state file of other models is not resumed. */
  models?: string;
}

/** The state file of the results file `out`. */
export function stateFileOf(out: string): string {
  return `${out}.batch.json`;
}

/** The SHA-256 of a file (hex), read as a stream. */
export async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The state file's content, or undefined when there is none (or it cannot be read as one). */
export async function readState(file: string): Promise<BatchState | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const s = JSON.parse(text) as Partial<BatchState>;
    if (
      typeof s.url === 'string' &&
      typeof s.batchId === 'string' &&
      (s.cursor === null || typeof s.cursor === 'string') &&
      Number.isSafeInteger(s.bytes) &&
      s.bytes! >= 0 &&
      typeof s.sha256 === 'string'
    )
      return s as BatchState;
  } catch {
    // a torn write cannot happen (the file is replaced by rename), but a hand-edited one can
  }
  return undefined;
}

/** Writes `content` to `file` durably: a temporary file, synced, renamed over it. */
async function replaceFile(file: string, content: string): Promise<void> {
  const tmp = `${file}.tmp`;
  const h = await open(tmp, 'w');
  try {
    await h.writeFile(content);
    await h.sync();
  } finally {
    await h.close();
  }
  await rename(tmp, file);
}

/** The results file being written, and its state file. */
export class ResultsOutput {
  private constructor(
    private readonly handle: FileHandle,
    private readonly stateFile: string,
    private state: BatchState,
  ) {}

  /**
   * Opens `out` for the batch `state` names: truncated to `state.bytes` (0 for a new batch), the
   * state file written at once (so a crash before the first page still resumes this batch).
   */
  static async open(out: string, state: BatchState): Promise<ResultsOutput> {
    const handle = await open(out, 'a+');
    try {
      const { size } = await handle.stat();
      if (size < state.bytes)
        throw new Error(`${out} has ${size} bytes, fewer than the ${state.bytes} its state records`);
      await handle.truncate(state.bytes);
      await handle.sync();
      const output = new ResultsOutput(handle, stateFileOf(out), state);
      await output.save();
      return output;
    } catch (e) {
      await handle.close();
      throw e;
    }
  }

  get cursor(): string | undefined {
    return this.state.cursor ?? undefined;
  }

  /** Appends a page's lines, syncs them, then records the next cursor. */
  async append(lines: string[], cursor: string | undefined): Promise<void> {
    if (lines.length > 0) {
      const text = Buffer.from(`${lines.join('\n')}\n`);
      await this.handle.write(text);
      await this.handle.sync();
      this.state = { ...this.state, bytes: this.state.bytes + text.length };
    }
    this.state = { ...this.state, cursor: cursor ?? this.state.cursor };
    await this.save();
  }

  /** Every result is written: the state file goes. */
  async finish(): Promise<void> {
    await this.handle.close();
    await rm(this.stateFile, { force: true });
  }

  /** Stopped before the end: the state file stays, for the next run. */
  async close(): Promise<void> {
    await this.handle.close();
  }

  private save(): Promise<void> {
    return replaceFile(this.stateFile, `${JSON.stringify(this.state)}\n`);
  }
}
