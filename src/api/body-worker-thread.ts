// The body worker's thread (body-worker.ts): parses and validates a request body's bytes, and
// answers with its 422 entries, or the facts of a valid body and the bytes back (transferred).
import { parentPort } from 'node:worker_threads';
import { checkBodyText } from '../protocol/index.js';

const decoder = new TextDecoder();

parentPort!.on('message', ({ id, bytes }: { id: number; bytes: Uint8Array<ArrayBuffer> }) => {
  const verdict = checkBodyText(decoder.decode(bytes));
  if ('detail' in verdict) parentPort!.postMessage({ id, verdict });
  else parentPort!.postMessage({ id, verdict, bytes }, [bytes.buffer]);
});
