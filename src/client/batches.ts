// The batch API from the client side (docs/batches.md): create a batch from a JSONL file (streamed
// from disk, never read whole into memory), read it, cancel it, and read its results a page at a
// time. Connection errors, timeouts, 408, 429 and 5xx are retried as AssayClient retries them; an
// upload is retried from the file's start (an Idempotency-Key makes the retry the same batch).
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { causeMessage, DEFAULT_BASE_URL, errorDetail, type AssayClientOptions, type RequestOptions } from './client.js';
import { AssayAbortError, AssayAPIError, AssayConnectionError, AssayError, AssayTimeoutError } from './errors.js';
import { backoffDelayMs, isRetryableStatus, serverRetryDelayMs, sleep } from './retry.js';

export type BatchStatus =
  'validating' | 'in_progress' | 'finalizing' | 'completed' | 'failed' | 'expired' | 'cancelling' | 'cancelled';

/** The statuses a batch does not leave. */
export const BATCH_ENDED: readonly BatchStatus[] = ['completed', 'failed', 'expired', 'cancelled'];

/** The batch object (OpenAI's shape), the fields a client reads. */
export interface Batch {
  id: string;
  object: 'batch';
  status: BatchStatus;
  request_counts: { total: number; completed: number; failed: number };
  errors: { object: 'list'; data: Array<{ code: string; message: string; line?: number | null }> } | null;
  created_at: number;
  [field: string]: unknown;
}

/** One page of a batch's results. */
export interface ResultsPage {
  /** The JSONL lines of the page, without their newlines. */
  lines: string[];
  /** The next page's URL (Link rel="next"), while more remain or the batch runs. */
  next: string | undefined;
  /** The next page's cursor (its `after`), when there is a next page. */
  cursor: string | undefined;
  /** The last page: the batch has ended and every result line has been read. */
  done: boolean;
}

export interface CreateBatchOptions extends RequestOptions {
  /** The same key with the same content answers the same batch (409 for other content). */
  idempotencyKey?: string;
}

/** The /v1/batches routes of a server. */
export class AssayBatches {
  readonly baseUrl: string;
  private readonly apiKey: string;
  private readonly maxRetries: number;
  private readonly timeoutMs: number;
  private readonly retryBaseDelayMs: number;
  private readonly retryMaxDelayMs: number;
  private readonly headers: Record<string, string>;
  private readonly fetchImpl: typeof fetch;

  constructor(options: Omit<AssayClientOptions, 'model' | 'stateHash'> = {}) {
    const env = options.env ?? process.env;
    const apiKey = options.apiKey ?? env.ASSAY_API_KEY;
    if (!apiKey) throw new AssayError('no API key: pass apiKey or set ASSAY_API_KEY');
    this.apiKey = apiKey;
    this.baseUrl = (options.baseUrl ?? env.ASSAY_BASE_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.maxRetries = options.maxRetries ?? 2;
    this.timeoutMs = options.timeoutMs ?? 180_000;
    this.retryBaseDelayMs = options.retryBaseDelayMs ?? 500;
    this.retryMaxDelayMs = options.retryMaxDelayMs ?? 60_000;
    this.headers = options.headers ?? {};
    this.fetchImpl = options.fetch ?? globalThis.fetch;
  }

  /** POST /v1/batches with the JSONL file `path` as the body, streamed. */
  async create(path: string, options: CreateBatchOptions = {}): Promise<Batch> {
    const headers: Record<string, string> = { 'content-type': 'application/jsonl', ...options.headers };
    if (options.idempotencyKey) headers['idempotency-key'] = options.idempotencyKey;
    const res = await this.request('POST', `${this.baseUrl}/v1/batches`, { ...options, headers }, () =>
      Readable.toWeb(createReadStream(path)),
    );
    return batchOf(await this.json(res));
  }

  /** GET /v1/batches/{id}. */
  async get(id: string, options?: RequestOptions): Promise<Batch> {
    const res = await this.request('GET', `${this.baseUrl}/v1/batches/${encodeURIComponent(id)}`, options);
    return batchOf(await this.json(res));
  }

  /** POST /v1/batches/{id}/cancel: the batch, cancelling (or already ended). */
  async cancel(id: string, options?: RequestOptions): Promise<Batch> {
    const res = await this.request('POST', `${this.baseUrl}/v1/batches/${encodeURIComponent(id)}/cancel`, options);
    return batchOf(await this.json(res));
  }

  /** GET /v1/batches/{id}/results: the page after `after` (none: the first), at most `limit` lines. */
  async results(
    id: string,
    page: { after?: string; limit?: number } = {},
    options?: RequestOptions,
  ): Promise<ResultsPage> {
    const query = new URLSearchParams();
    if (page.after) query.set('after', page.after);
    if (page.limit !== undefined) query.set('limit', String(page.limit));
    const q = query.size > 0 ? `?${query}` : '';
    return this.resultsAt(`${this.baseUrl}/v1/batches/${encodeURIComponent(id)}/results${q}`, options);
  }

  /** The results page at `url` (a page's `next`, absolute or relative to the server). */
  async resultsAt(url: string, options?: RequestOptions): Promise<ResultsPage> {
    const res = await this.request('GET', new URL(url, `${this.baseUrl}/`).href, options);
    let text: string;
    try {
      text = await res.text();
    } catch (e) {
      throw new AssayConnectionError(`reading the results of ${url} failed: ${(e as Error).message}`, { cause: e });
    }
    const link = res.headers.get('link');
    const rel = link ? /<([^>]+)>\s*;\s*rel="?next"?/.exec(link)?.[1] : undefined;
    const next = rel === undefined ? undefined : new URL(rel, `${this.baseUrl}/`).href;
    const cursor = next === undefined ? undefined : (new URL(next).searchParams.get('after') ?? undefined);
    return {
      lines: text.split('\n').filter((l) => l !== ''),
      next,
      cursor,
      done: res.headers.get('x-assay-results-done') === 'true' || next === undefined,
    };
  }

  private async json(res: Response): Promise<unknown> {
    const text = await res.text();
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new AssayConnectionError(`${res.url} answered ${res.status} with a body that is not JSON`, {
        status: res.status,
      });
    }
  }

  /** One call with the client's retries; `body` makes a fresh body for each attempt. Resolves a 2xx response. */
  private async request(
    method: 'GET' | 'POST',
    url: string,
    options: RequestOptions = {},
    body?: () => unknown,
  ): Promise<Response> {
    const maxRetries = options.maxRetries ?? this.maxRetries;
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const userSignal = options.signal;
    for (let attempt = 1; ; attempt++) {
      if (userSignal?.aborted) throw new AssayAbortError(userSignal.reason, attempt - 1);
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = userSignal ? AbortSignal.any([userSignal, timeout]) : timeout;
      const headers = {
        'user-agent': `assay-client node/${process.versions.node}`,
        ...this.headers,
        ...options.headers,
        authorization: `Bearer ${this.apiKey}`,
        'x-assay-retry-count': String(attempt - 1),
      };
      let error: AssayError;
      let answered: Headers | undefined;
      try {
        const init: RequestInit & { duplex?: 'half' } = { method, headers, signal };
        if (body) {
          init.body = body() as RequestInit['body'];
          init.duplex = 'half';
        }
        const res = await this.fetchImpl(url, init);
        if (res.ok) return res;
        error = new AssayAPIError(res.status, errorDetail(await res.text()), res.headers, attempt);
        answered = res.headers;
        if (!isRetryableStatus(res.status)) throw error;
      } catch (e) {
        if (e instanceof AssayAPIError) throw e;
        if (userSignal?.aborted) throw new AssayAbortError(userSignal.reason, attempt);
        error = timeout.aborted
          ? new AssayTimeoutError(timeoutMs, attempt)
          : new AssayConnectionError(`cannot reach ${url}: ${causeMessage(e)}`, { cause: e, attempts: attempt });
      }
      if (attempt > maxRetries) throw error;
      const asked = answered ? serverRetryDelayMs(answered) : undefined;
      const delayMs = Math.min(
        this.retryMaxDelayMs,
        asked ?? backoffDelayMs(attempt - 1, this.retryBaseDelayMs, this.retryMaxDelayMs),
      );
      try {
        await sleep(delayMs, userSignal);
      } catch (reason) {
        throw new AssayAbortError(reason, attempt);
      }
    }
  }
}

function batchOf(json: unknown): Batch {
  const b = json as Partial<Batch> | null;
  if (
    !b ||
    typeof b.id !== 'string' ||
    typeof b.status !== 'string' ||
    typeof b.request_counts?.total !== 'number' ||
    typeof b.request_counts.completed !== 'number' ||
    typeof b.request_counts.failed !== 'number'
  )
    throw new AssayConnectionError('the server answered with a body that is not a batch object');
  return b as Batch;
}
