// Reading a request body from its stream. A small body (up to inlineBytes) is collected whole, for
// the inline parse. A big one (declared larger, or growing past it) is never collected on the event
// loop: once one of the big-body slots is free (body-slots.ts) its chunks go to the body worker as
// they arrive, each one's buffer transferred (body-worker.ts upload()), and the slot is free again
// when the worker has answered. Until then the request is left unread (TCP holds its client back).
// Fastify's checks of a collected body are kept: 413 past the limit (declared, or as counted, and
// nothing more is read: the error handler drains), 400 when the bytes received differ from the
// Content-Length, and the stream's error (the client gone) with status 400.
import type { Socket } from 'node:net';
import { errorCodes } from 'fastify';
import type { BodySlots } from './body-slots.js';
import type { BodyUpload, BodyWorker, ReceivedBody } from './body-worker.js';
import type { McpChecked } from './mcp-body.js';

export interface ReadOptions {
  /** Largest body, bytes. */
  limit: number;
  /** Larger bodies go to the body worker as they arrive. */
  inlineBytes: number;
  slots: BodySlots;
  worker: BodyWorker;
  /** Read to the end and drop (a body whose media type is refused: its client reads the 415 after sending). */
  discard?: boolean;
  /** The body is a /mcp message: the worker reads it as one (mcp-body.ts). */
  mcp?: { defaultModel: string };
}

/** A small body whole (a buffer of its own), or a big one's check by the body worker. */
export type ReadBody = { bytes: Buffer } | { checked: Promise<ReceivedBody | McpChecked> };

type Payload = NodeJS.ReadableStream & { receivedEncodedLength?: number };

function streamError(error: Error & { statusCode?: number }): Error {
  if (!(typeof error.statusCode === 'number' && error.statusCode >= 400)) error.statusCode = 400;
  return error;
}

/** Reads `payload` (the request's body stream; `socket` its connection) and calls `done` once. */
export function readBody(
  payload: Payload,
  socket: Socket | null,
  contentLength: string | undefined,
  o: ReadOptions,
  done: (error: Error | null, body?: ReadBody) => void,
): void {
  const declared = contentLength === undefined ? NaN : Number(contentLength);
  if (declared > o.limit) return done(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
  let received = 0;
  let small: Buffer[] = [];
  let upload: BodyUpload | undefined;
  let release: (() => void) | undefined;
  let withdraw: (() => void) | undefined;
  let settled = false;

  const finish = (error: Error | null, body?: ReadBody): void => {
    if (settled) return;
    settled = true;
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onError);
    payload.removeListener('close', onClose);
    socket?.removeListener('close', onClose);
    withdraw?.();
    if (error) {
      upload?.abort();
      release?.();
    }
    done(error, body);
  };

  // A big body waits for a slot unread; then its chunks so far, and the rest as they come, go to the worker.
  const toWorker = (): void => {
    payload.pause();
    withdraw = o.slots.take((free) => {
      withdraw = undefined;
      release = free;
      upload = o.worker.upload(Number.isNaN(declared) ? undefined : declared, o.mcp);
      for (const chunk of small) upload.push(chunk);
      small = [];
      payload.resume();
    });
  };

  function onData(data: Buffer | string): void {
    // A custom preParsing stream may emit strings.
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    received += chunk.length;
    if (received > o.limit || (payload.receivedEncodedLength ?? 0) > o.limit)
      return finish(new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE());
    if (upload) return upload.push(chunk);
    if (o.discard) return;
    small.push(chunk);
    if (received > o.inlineBytes && !withdraw) toWorker();
  }

  function onEnd(): void {
    if (!Number.isNaN(declared) && (payload.receivedEncodedLength || received) !== declared)
      return finish(new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH());
    if (!upload) return finish(null, { bytes: Buffer.concat(small, received) });
    const checked = upload.end();
    const free = release!;
    checked.then(free, free); // the slot is free once the worker has answered
    [upload, release] = [undefined, undefined];
    finish(null, { checked });
  }

  function onError(error: Error): void {
    finish(streamError(error));
  }

  // The connection closed before the end (an error was not emitted: the stream was not being read).
  function onClose(): void {
    finish(streamError(Object.assign(new Error('aborted'), { code: 'ECONNRESET' })));
  }

  // Paused first: listening for data would start the flow, and a big body first waits for its slot.
  payload.pause();
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onError);
  payload.on('close', onClose);
  socket?.on('close', onClose);
  if (declared > o.inlineBytes && !o.discard) toWorker();
  else payload.resume();
}
