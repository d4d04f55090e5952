// Body parsing: application/json bodies, and bodies sent without a Content-Type (read as JSON, as
// FastAPI does); any other media type is 415. Malformed JSON gets FastAPI's json_invalid 422. Small,
// shallow bodies are parsed here; deep ones in the body worker (body-worker.ts), off the loop; large
// ones go there as they arrive, a bounded number at a time (body-read.ts), never collected here.
// /mcp's messages take the same way, with the same limit; the worker reads them as MCP messages
// (mcp-body.ts: a tool call's request made and checked there).
// And the drain that lets a client still sending an oversized body read its 413.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { errorCodes } from 'fastify';
import fp from 'fastify-plugin';
import { DEFAULTS } from '../../defaults.js';
import { InvalidRequestError, jsonInvalid, retryHeaders, sentOrder, ValidatedBody } from '../../protocol/index.js';
import { BodyWorkerUnavailableError } from '../api-error.js';
import { readBody, type ReadBody } from '../body-read.js';
import { BodySlots } from '../body-slots.js';
import { BodyWorker, nestsDeeperThan, type ReceivedBody } from '../body-worker.js';
import { McpBody, type McpChecked } from '../mcp-body.js';

/**
 * A big body's 422, its body written by the body worker (JSON, as the error handler would write
 * it): the error handler sends these bytes (plugins/errors.ts). Its `detail` is not kept here.
 */
export class WrittenInvalidRequestError extends InvalidRequestError {
  constructor(readonly json: Buffer) {
    super([]);
  }
}

export interface BodyOptions {
  /** Largest accepted body, bytes (413 above). */
  bodyLimit: number;
  /** Bodies larger than this many bytes are parsed and validated in the body worker. */
  inlineBodyBytes: number;
  /** Big bodies on their way to the body worker at once (default DEFAULTS.bigBodySlots); the others wait, unread. */
  bigBodySlots?: number;
}

type Done = (err: Error | null, body?: unknown) => void;

async function body(app: FastifyInstance, options: BodyOptions): Promise<void> {
  const { bodyLimit, inlineBodyBytes } = options;
  const bodyWorker = new BodyWorker();
  const reading = {
    limit: bodyLimit,
    inlineBytes: inlineBodyBytes,
    slots: new BodySlots(options.bigBodySlots ?? DEFAULTS.bigBodySlots),
    worker: bodyWorker,
  };
  app.removeAllContentTypeParsers();
  // The body worker's verdict: a 422, or the valid body as its bytes with its facts (or the MCP message, small, and its call).
  const answer = (check: Promise<ReceivedBody | McpChecked>, done: Done): void => {
    check.then(
      (checked) => {
        if ('notJson' in checked) return done(new InvalidRequestError(checked.notJson), undefined);
        if ('message' in checked) return done(null, new McpBody(checked.message, checked.prepared));
        if ('refusal' in checked) {
          const { buffer, byteOffset, byteLength } = checked.refusal;
          return done(new WrittenInvalidRequestError(Buffer.from(buffer, byteOffset, byteLength)), undefined);
        }
        const { verdict, bytes: valid } = checked;
        if ('detail' in verdict) return done(new InvalidRequestError(verdict.detail), undefined);
        done(null, new ValidatedBody(valid!, verdict.model, verdict.questionCount, verdict.order));
      },
      // The worker died with this body in it: never parsed here instead (that is the stall this avoids).
      () =>
        done(
          new BodyWorkerUnavailableError('The request body could not be checked; retry', retryHeaders(1000)),
          undefined,
        ),
    );
  };
  /** A /mcp message: the MCP route's own reading in the worker, with the model a call without one asks. */
  const mcp = (req: FastifyRequest) =>
    req.routeOptions.url === '/mcp' ? { defaultModel: app.assay.registry.default } : undefined;
  // A small body, whole: parsed here unless its raw nesting could be too deep.
  const json = (req: FastifyRequest, bytes: Buffer, done: Done) => {
    if (bytes.length === 0) return done(null, undefined); // no body: "Field required" at ["body"]
    const raw = bytes.toString('utf8');
    const message = mcp(req);
    if (nestsDeeperThan(raw))
      return answer(message ? bodyWorker.checkMcp(bytes, message.defaultModel) : bodyWorker.check(bytes), done);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      return done(new InvalidRequestError([jsonInvalid(raw)]), undefined);
    }
    // The order of its question ids and options, which the parsed object does not keep (protocol/order.ts).
    if (!message) req.sentOrder = sentOrder(raw) ?? null;
    // Validation (the nesting bound first) runs in the service (protocol/validate.ts), one walk.
    return done(null, body);
  };
  const read = (req: FastifyRequest, payload: NodeJS.ReadableStream, done: Done) => {
    const message = mcp(req);
    return readBody(
      payload,
      req.raw.socket,
      req.headers['content-length'],
      message ? { ...reading, mcp: message } : reading,
      (error, read?: ReadBody) => {
        if (error) return done(error, undefined);
        if ('bytes' in read!) return json(req, read.bytes, done);
        answer(read!.checked, done);
      },
    );
  };
  // Parsers given the stream (no parseAs): body-read.ts reads it, with Fastify's limits.
  app.addContentTypeParser('application/json', (req, payload, done) => read(req, payload, done));
  // The catch-all parser: fastify gives it both bodies without a Content-Type and unknown media types
  // (read to the end first, within the limit, as a collected body was: then the 415).
  const discarding = { ...reading, discard: true };
  app.addContentTypeParser('*', (req, payload, done) => {
    if (req.headers['content-type'] === undefined) return read(req, payload, done);
    readBody(payload, req.raw.socket, req.headers['content-length'], discarding, (error) =>
      done(error ?? new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE(), undefined),
    );
  });
  // An empty Content-Type is none (FastAPI tests the header for truth); fastify would refuse it as an
  // invalid media type before any parser runs.
  app.addHook('onRequest', async (req) => {
    if (req.headers['content-type'] === '') delete req.headers['content-type'];
  });
  app.addHook('onClose', async () => bodyWorker.close());
}

/** The parsers on the server itself (not encapsulated): every route reads its body through them. */
export const bodyParsing = fp(body, { name: 'assay-body' });

/** How much of an oversized body is read and discarded so the client can read its 413. */
const DRAIN_BYTES = 128 * 1024 * 1024;
const DRAIN_MS = 30_000;

/** Reads and discards what a client still sends (up to a bound), then resolves: the 413's way out. */
export function drain(raw: NodeJS.ReadableStream & { complete?: boolean }): Promise<void> {
  if (raw.complete) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const finish = () => {
      clearTimeout(timer);
      raw.removeListener('data', onData);
      raw.removeListener('end', finish);
      raw.removeListener('error', finish);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > DRAIN_BYTES) finish();
    };
    const timer = setTimeout(finish, DRAIN_MS);
    raw.on('data', onData);
    raw.on('end', finish);
    raw.on('error', finish);
    raw.resume();
  });
}
