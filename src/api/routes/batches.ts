// /v1/batches: batch jobs in the shape of OpenAI's Batch API, for this API's one endpoint
// (docs/batches.md). The JSONL input is streamed to a file in the data directory as it arrives
// (never whole in memory, hashed on the way for the Idempotency-Key), then read in off the event
// loop by the service. Results are read a page at a time while the batch runs, with a Link to
// the next page. Another key's batch is not found.
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { InvalidRequestError } from '../../protocol/index.js';
import { BatchesUnavailableError, BatchTooLargeError, syncFile, type Batches } from '../../service/index.js';
import { admission, rateKey } from '../admission.js';
import { batchObject, listQuery, resultsQuery } from './batch-wire.js';

/** The media types of a JSONL input. */
export const JSONL_TYPES = ['application/jsonl', 'application/x-ndjson', 'application/x-jsonlines'];

/** Longest Idempotency-Key accepted. */
const MAX_IDEMPOTENCY_KEY = 255;

function available(batches: Batches | undefined, reason: string | undefined): Batches {
  if (!batches) throw new BatchesUnavailableError(reason ?? 'batches are turned off');
  return batches;
}

/** Streams the request body into `file`, hashing and counting it; past `maxBytes`, BatchTooLargeError. */
async function receive(body: Readable, file: string, maxBytes: number): Promise<string> {
  const hash = createHash('sha256');
  let bytes = 0;
  const count = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      bytes += chunk.length;
      if (bytes > maxBytes) return callback(new BatchTooLargeError(maxBytes));
      hash.update(chunk);
      callback(null, chunk);
    },
  });
  try {
    await pipeline(body, count, createWriteStream(file));
    await syncFile(file);
  } catch (error) {
    await rm(file, { force: true });
    throw error;
  }
  return hash.digest('hex');
}

function idempotencyKey(req: FastifyRequest): string | undefined {
  const v = req.headers['idempotency-key'];
  const key = Array.isArray(v) ? v[0] : v;
  if (key === undefined || key === '') return undefined;
  if (key.length > MAX_IDEMPOTENCY_KEY)
    throw new InvalidRequestError([
      {
        type: 'string_too_long',
        loc: ['header', 'idempotency-key'],
        msg: `String should have at most ${MAX_IDEMPOTENCY_KEY} characters`,
        input: key.slice(0, 80),
        ctx: { max_length: MAX_IDEMPOTENCY_KEY },
      },
    ]);
  return key;
}

export async function batchesRoutes(app: FastifyInstance): Promise<void> {
  const ctx = app.assay;
  const batches = () => available(ctx.batches, ctx.batchesUnavailable);
  // The input arrives as its stream: the route writes it to disk as it comes.
  app.addContentTypeParser(JSONL_TYPES, (_req, payload, done) => done(null, payload));
  const onRequest = admission(ctx);
  // Reading a batch, its list or its results is authenticated but not rate limited: a client polls.
  const reading = admission(ctx, { rate: false });

  app.post('/v1/batches', { onRequest }, async (req, reply) => {
    const service = batches();
    const body = req.body as Readable | undefined;
    if (!body || typeof (body as Readable).pipe !== 'function')
      return reply.code(415).send({ detail: `Send the batch input as JSONL (Content-Type: ${JSONL_TYPES[0]})` });
    const { maxBytes } = service.limits;
    const length = Number(req.headers['content-length']);
    if (Number.isFinite(length) && length > maxBytes) throw new BatchTooLargeError(maxBytes);
    const key = req.apiKey!;
    const idempotency = idempotencyKey(req);
    const file = service.uploadFile();
    // A full data directory is a 507 naming it, not a 500.
    const sha256 = await receive(body, file, maxBytes).catch((error: unknown) => {
      throw service.storageFault(error);
    });
    const { batch, created } = await service.create({
      owner: rateKey(key),
      file,
      sha256,
      ...(idempotency ? { idempotencyKey: idempotency } : {}),
      ...(ctx.prefixCacheScope === 'shared' ? {} : { cacheScope: rateKey(key) }),
    });
    // A batch its Idempotency-Key already made is answered as it stands now (the same content).
    reply.header('x-assay-batch-created', created ? 'true' : 'false');
    return reply.send(batchObject(batch));
  });

  app.get('/v1/batches', { onRequest: reading }, async (req) => {
    const { after, limit } = listQuery(req.query);
    const { data, hasMore } = await batches().list(rateKey(req.apiKey!), { after, limit });
    return {
      object: 'list',
      data: data.map(batchObject),
      first_id: data[0]?.id ?? null,
      last_id: data[data.length - 1]?.id ?? null,
      has_more: hasMore,
    };
  });

  app.get<{ Params: { id: string } }>('/v1/batches/:id', { onRequest: reading }, async (req) =>
    batchObject(await batches().get(rateKey(req.apiKey!), req.params.id)),
  );

  app.post<{ Params: { id: string } }>('/v1/batches/:id/cancel', { onRequest }, async (req) =>
    batchObject(await batches().cancel(rateKey(req.apiKey!), req.params.id)),
  );

  app.delete<{ Params: { id: string } }>('/v1/batches/:id', { onRequest }, async (req) => {
    await batches().delete(rateKey(req.apiKey!), req.params.id);
    return { id: req.params.id, object: 'batch', deleted: true };
  });

  app.get<{ Params: { id: string } }>('/v1/batches/:id/results', { onRequest: reading }, async (req, reply) => {
    const { after, limit } = resultsQuery(req.query);
    const page = await batches().results(rateKey(req.apiKey!), req.params.id, { after, limit });
    if (!page.done) {
      // More will come (or is there): the next page starts after this one (or where this one started).
      const next = page.cursor ?? after;
      const query = new URLSearchParams({ ...(next ? { after: next } : {}), limit: String(limit) });
      reply.header('link', `</v1/batches/${encodeURIComponent(req.params.id)}/results?${query}>; rel="next"`);
    }
    reply.header('x-assay-results-done', page.done ? 'true' : 'false');
    const text = page.lines.length > 0 ? `${page.lines.join('\n')}\n` : '';
    return reply.type('application/jsonl; charset=utf-8').send(text);
  });
}
