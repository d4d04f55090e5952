// The deep-body worker (deep-body.ts): parses a body and returns only its nesting verdict.
import { parentPort } from 'node:worker_threads';
import { depthErrors } from '../protocol/depth.js';

parentPort!.on('message', ({ id, text }: { id: number; text: string }) => {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    parentPort!.postMessage({ id, invalidJson: true });
    return;
  }
  parentPort!.postMessage({ id, detail: depthErrors(body) });
});
