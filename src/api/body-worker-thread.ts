// The body worker's thread (body-worker.ts): parses and validates a request body's bytes, and
// answers with its 422 entries, or the facts of a valid body and the bytes back (transferred). A
// big body arrives in chunks over a port of its own (receive): they are copied into one buffer as
// they come (of the declared size when there is one), so the body is whole only here.
import { parentPort } from 'node:worker_threads';
import { checkBodyText } from '../protocol/index.js';
import { serveChannel, type CallContext } from '../workers/index.js';
import type { BodyCalls, CheckedBody, ReceivedBody } from './body-worker.js';
import { checkMcpText, type McpChecked } from './mcp-body.js';

const decoder = new TextDecoder();
const encoder = new TextEncoder();

function checked(bytes: Uint8Array<ArrayBuffer>, { transfer }: CallContext): CheckedBody {
  const verdict = checkBodyText(decoder.decode(bytes));
  if ('detail' in verdict) return { verdict };
  transfer([bytes.buffer]);
  return { verdict, bytes };
}

/** A body put together from its chunks: in place when its size was declared, else joined at the end. */
class Assembly {
  private buffer: Uint8Array<ArrayBuffer> | undefined;
  private parts: Uint8Array[] = [];
  private size = 0;

  constructor(length: number | undefined) {
    if (length !== undefined) this.buffer = new Uint8Array(length);
  }

  add(chunk: Uint8Array): void {
    if (this.buffer && this.size + chunk.byteLength <= this.buffer.byteLength) this.buffer.set(chunk, this.size);
    else {
      // More than declared (the API refuses the body anyway): joined at the end like an undeclared one.
      if (this.buffer) this.parts.push(this.buffer.subarray(0, this.size));
      this.buffer = undefined;
      this.parts.push(chunk);
    }
    this.size += chunk.byteLength;
  }

  /** The whole body, in a buffer of its own size. */
  bytes(): Uint8Array<ArrayBuffer> {
    if (this.buffer && this.size === this.buffer.byteLength) return this.buffer;
    const whole = new Uint8Array(this.size);
    let at = 0;
    for (const part of this.buffer ? [this.buffer.subarray(0, this.size)] : this.parts) {
      whole.set(part, at);
      at += part.byteLength;
    }
    return whole;
  }
}

/** A /mcp message's answer, its prepared request's bytes transferred. */
function mcpChecked(bytes: Uint8Array, defaultModel: string, { transfer }: CallContext): McpChecked {
  const answer = checkMcpText(decoder.decode(bytes), defaultModel);
  if ('prepared' in answer && answer.prepared?.bytes) transfer([answer.prepared.bytes.buffer]);
  return answer;
}

serveChannel<BodyCalls>(
  parentPort!,
  {
    check: (bytes, ctx) => checked(bytes, ctx),
    checkMcp: ({ bytes, defaultModel }, ctx) => mcpChecked(bytes, defaultModel, ctx),
    receive: ({ port, length, mcp }, ctx) =>
      new Promise<ReceivedBody | McpChecked>((resolve, reject) => {
        const body = new Assembly(length);
        const stop = (): void => {
          ctx.signal.removeEventListener('abort', aborted);
          port.close();
        };
        const aborted = (): void => {
          stop();
          reject(new Error('the upload was aborted'));
        };
        ctx.signal.addEventListener('abort', aborted, { once: true });
        port.on('message', (chunk: Uint8Array | null) => {
          if (chunk) return body.add(chunk);
          stop();
          try {
            if (mcp) return resolve(mcpChecked(body.bytes(), mcp.defaultModel, ctx));
            const answer = checked(body.bytes(), ctx);
            if (!('detail' in answer.verdict)) return resolve(answer);
            // The 422's body as the error handler would write it (JSON.stringify), written here.
            const refusal = encoder.encode(JSON.stringify({ detail: answer.verdict.detail }));
            ctx.transfer([refusal.buffer]);
            resolve({ refusal });
          } catch (error) {
            reject(error as Error);
          }
        });
      }),
  },
  (error) => (error instanceof Error ? error.message : String(error)),
);
