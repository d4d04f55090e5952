// The ingest worker's thread (ingest.ts): reads an uploaded batch file line by line and checks each
// line (lines.ts), answering a chunk at a time, so a 200 MB input is never whole in memory and
// never parsed on the event loop. One input is read at a time: `open`, then `next` until done.
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { parentPort } from 'node:worker_threads';
import { runInBackground, serveChannel } from '../../workers/index.js';
import { checkLine } from './lines.js';
import type { IngestCalls, IngestChunk } from './ingest.js';

interface Reader {
  lines: AsyncIterator<string>;
  close(): void;
  line: number;
  counted: number;
  maxLines: number;
  seen: Set<string>;
}

// Batch work only: it runs in the time interactive requests leave.
runInBackground();

let reader: Reader | undefined;

/** Bytes of item bodies per chunk: big enough to keep the store busy, small enough to pass quickly. */
const CHUNK_BYTES = 4 * 1024 * 1024;

async function next(maxItems: number): Promise<IngestChunk> {
  const r = reader;
  if (!r) throw new Error('no input is open');
  const chunk: IngestChunk = { items: [], invalid: [], done: false };
  let bytes = 0;
  while (chunk.items.length + chunk.invalid.length < maxItems && bytes < CHUNK_BYTES) {
    const { value, done } = await r.lines.next();
    if (done) {
      chunk.done = true;
      break;
    }
    const line = ++r.line;
    const checked = checkLine(value, line);
    if (checked.kind === 'blank') continue;
    if (++r.counted > r.maxLines) {
      chunk.error = {
        code: 'too_many_lines',
        message: `a batch has at most ${r.maxLines} lines; line ${line} is one more`,
        line,
      };
      break;
    }
    const id = checked.kind === 'item' ? checked.item.customId : checked.customId;
    if (id !== null) {
      if (r.seen.has(id)) {
        chunk.error = {
          code: 'duplicate_custom_id',
          message: `line ${line}: custom_id ${JSON.stringify(id.slice(0, 80))} is used by an earlier line; each line needs its own`,
          line,
        };
        break;
      }
      r.seen.add(id);
    }
    if (checked.kind === 'item') {
      chunk.items.push(checked.item);
      bytes += checked.item.body.length;
    } else {
      chunk.invalid.push(checked.result);
      bytes += checked.result.result.length;
    }
  }
  if (chunk.done || chunk.error) {
    r.close();
    reader = undefined;
  }
  return chunk;
}

serveChannel<IngestCalls>(
  parentPort!,
  {
    open({ file, maxLines }) {
      reader?.close();
      const stream = createReadStream(file, { encoding: 'utf8' });
      const rl = createInterface({ input: stream, crlfDelay: Infinity });
      reader = {
        lines: rl[Symbol.asyncIterator](),
        close: () => {
          rl.close();
          stream.destroy();
        },
        line: 0,
        counted: 0,
        maxLines,
        seen: new Set(),
      };
    },
    next: ({ maxItems }) => next(maxItems),
    close() {
      reader?.close();
      reader = undefined;
    },
  },
  (error) => (error instanceof Error ? error.message : String(error)),
);
