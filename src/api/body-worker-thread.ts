// The body worker's thread (body-worker.ts): parses and validates a request body's bytes, and
// answers with its 422 entries, or the facts of a valid body and the bytes back (transferred).
import { parentPort } from 'node:worker_threads';
import { checkBodyText } from '../protocol/index.js';
import { serveChannel } from '../workers/index.js';
import type { BodyCalls } from './body-worker.js';

const decoder = new TextDecoder();

serveChannel<BodyCalls>(
  parentPort!,
  {
    check(bytes, { transfer }) {
      const verdict = checkBodyText(decoder.decode(bytes));
      if ('detail' in verdict) return { verdict };
      transfer([bytes.buffer]);
      return { verdict, bytes };
    },
  },
  (error) => (error instanceof Error ? error.message : String(error)),
);
