// A typed client for the Assay HTTP API (and the hosted API it replaces), on global fetch.
import type { z } from 'zod';
import {
  ModelMetadataListSchema,
  STATE_HASH_HEADER,
  stateHash,
  SystemOneResponseSchema,
  writeRequest,
  type ModelMetadataList,
  type SentOrder,
  type SystemOneRequest,
  type SystemOneResponse,
} from '../protocol/index.js';
import { AssayAbortError, AssayAPIError, AssayConnectionError, AssayError, AssayTimeoutError } from './errors.js';
import { backoffDelayMs, isRetryableStatus, serverRetryDelayMs, sleep } from './retry.js';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';
/** The official clients' default model. */
export const DEFAULT_MODEL = 'svc-latest';

export interface AssayClientOptions {
  /** Default: ASSAY_API_KEY. */
  apiKey?: string;
  /** Default: ASSAY_BASE_URL, else http://127.0.0.1:8080. May carry a path prefix. */
  baseUrl?: string;
  /** Model used when a request names none. Default svc-latest. */
  model?: string;
  /** Retries after the first attempt, on 408, 429, 5xx, 529, timeouts and connection errors. Default 2. */
  maxRetries?: number;
  /** Per-attempt timeout in ms. Default 180 000. */
  timeoutMs?: number;
  /** First backoff ceiling in ms when the server gives no retry-after; doubles each retry. Default 500. */
  retryBaseDelayMs?: number;
  /** Cap on any wait between attempts, including a server's retry-after. Default 60 000. */
  retryMaxDelayMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /**
   * Send `x-assay-state-hash` (sha256 of the state's JSON) with each evaluation, so an ingress
   * hashing on it sends repeated states to the replica whose prefix cache holds them. Default true.
   */
  stateHash?: boolean;
  /** Called before each retry (for logging or metrics). */
  onRetry?: (info: RetryInfo) => void;
  /** Replaces global fetch (e.g. a proxy-aware one). */
  fetch?: typeof fetch;
  /** Environment to read ASSAY_API_KEY / ASSAY_BASE_URL from. Default process.env. */
  env?: Record<string, string | undefined>;
}

export interface RequestOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  maxRetries?: number;
  headers?: Record<string, string>;
}

export interface EvaluateOptions extends RequestOptions {
  /**
   * The order to send the question ids and each choice question's options in (the prompt lists
   * options in it, so it can move the answer). A JS object lists integer-like keys ("1", "2")
   * first whatever order it was written in: give the order here to send {"3", "1", "2"} as such.
   * Default: the objects' own key order.
   */
  order?: SentOrder;
}

export interface RetryInfo {
  /** The retry about to be made: 1 for the first retry. */
  retry: number;
  /** Status of the failed attempt, or undefined for a connection error / timeout. */
  status: number | undefined;
  requestId: string | undefined;
  /** How long the client waits before the retry. */
  delayMs: number;
  /** 'server' when the delay came from retry-after-ms / retry-after, else 'backoff'. */
  delaySource: 'server' | 'backoff';
  error: AssayError;
}

/** A request: the wire body, with `model` optional (the client's default fills it). */
export type EvaluateRequest = Omit<SystemOneRequest, 'model'> & { model?: string };

/** A parsed response body plus the server's x-request-id (not enumerable, so JSON output is the body). */
export type WithRequestId<T> = T & { readonly requestId: string | undefined };

export class AssayClient {
  readonly baseUrl: string;
  readonly model: string;
  readonly maxRetries: number;
  readonly timeoutMs: number;
  private readonly apiKey: string;
  private readonly retryBaseDelayMs: number;
  private readonly retryMaxDelayMs: number;
  private readonly headers: Record<string, string>;
  private readonly stateHash: boolean;
  private readonly onRetry?: (info: RetryInfo) => void;
  private readonly fetchImpl: typeof fetch;

  constructor(options: AssayClientOptions = {}) {
    const env = options.env ?? process.env;
    const apiKey = options.apiKey ?? env.ASSAY_API_KEY;
    if (!apiKey) throw new AssayError('no API key: pass apiKey or set ASSAY_API_KEY');
    this.apiKey = apiKey;
    this.baseUrl = (options.baseUrl ?? env.ASSAY_BASE_URL ?? DEFAULT_BASE_URL).replace(/\/+$/, '');
    this.model = options.model ?? DEFAULT_MODEL;
    this.maxRetries = nonNegative(options.maxRetries ?? 2, 'maxRetries');
    this.timeoutMs = positive(options.timeoutMs ?? 180_000, 'timeoutMs');
    this.retryBaseDelayMs = nonNegative(options.retryBaseDelayMs ?? 500, 'retryBaseDelayMs');
    this.retryMaxDelayMs = nonNegative(options.retryMaxDelayMs ?? 60_000, 'retryMaxDelayMs');
    this.headers = options.headers ?? {};
    this.stateHash = options.stateHash ?? true;
    this.onRetry = options.onRetry;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
  }

  /** POST /v1/systemone: one typed answer per question. */
  evaluate(request: EvaluateRequest, options?: EvaluateOptions): Promise<WithRequestId<SystemOneResponse>> {
    const body = { ...request, model: request.model ?? this.model };
    if (this.stateHash) {
      options = { ...options, headers: { [STATE_HASH_HEADER]: stateHash(request.state), ...options?.headers } };
    }
    return this.send('POST', '/v1/systemone', writeRequest(body, options?.order), SystemOneResponseSchema, options);
  }

  /** GET /v1/models: the names this key may send as `model`. */
  listModels(options?: RequestOptions): Promise<WithRequestId<ModelMetadataList>> {
    return this.send('GET', '/v1/models', undefined, ModelMetadataListSchema, options);
  }

  private async send<T extends object>(
    method: 'GET' | 'POST',
    path: string,
    /** The request body's JSON. */
    payload: string | undefined,
    schema: z.ZodType<T>,
    options: RequestOptions = {},
  ): Promise<WithRequestId<T>> {
    const url = `${this.baseUrl}${path}`;
    const maxRetries = nonNegative(options.maxRetries ?? this.maxRetries, 'maxRetries');
    const timeoutMs = positive(options.timeoutMs ?? this.timeoutMs, 'timeoutMs');
    const userSignal = options.signal;

    for (let attempt = 1; ; attempt++) {
      if (userSignal?.aborted) throw new AssayAbortError(userSignal.reason, attempt - 1);
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = userSignal ? AbortSignal.any([userSignal, timeout]) : timeout;
      const headers: Record<string, string> = {
        accept: 'application/json',
        'user-agent': `assay-client node/${process.versions.node}`,
        ...this.headers,
        ...options.headers,
        authorization: `Bearer ${this.apiKey}`,
        'x-assay-retry-count': String(attempt - 1),
      };
      if (payload !== undefined) headers['content-type'] = 'application/json';

      let res: Response;
      let text: string;
      try {
        res = await this.fetchImpl(url, { method, headers, body: payload, signal });
        text = await res.text();
      } catch (e) {
        if (userSignal?.aborted) throw new AssayAbortError(userSignal.reason, attempt);
        const error = timeout.aborted
          ? new AssayTimeoutError(timeoutMs, attempt)
          : new AssayConnectionError(`cannot reach ${url}: ${causeMessage(e)}`, { cause: e, attempts: attempt });
        if (attempt > maxRetries) throw error;
        await this.pause(attempt, undefined, undefined, error, userSignal);
        continue;
      }

      const requestId = res.headers.get('x-request-id') ?? undefined;
      if (res.ok) {
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          throw new AssayConnectionError(`${url} answered ${res.status} with a body that is not JSON`, {
            requestId,
            status: res.status,
            attempts: attempt,
          });
        }
        const parsed = schema.safeParse(json);
        if (!parsed.success) {
          const first = parsed.error.issues[0];
          throw new AssayConnectionError(
            `${url} answered with a body that does not match the API contract (${first?.path.join('.') || '(root)'}: ${first?.message ?? 'invalid'})`,
            {
              requestId,
              status: res.status,
              attempts: attempt,
            },
          );
        }
        return Object.defineProperty(parsed.data, 'requestId', {
          value: requestId,
          enumerable: false,
        }) as WithRequestId<T>;
      }

      const error = new AssayAPIError(res.status, errorDetail(text), res.headers, attempt);
      if (!isRetryableStatus(res.status) || attempt > maxRetries) throw error;
      await this.pause(attempt, res.status, res.headers, error, userSignal);
    }
  }

  /** Waits before retry number `retry`: the server's retry-after-ms / retry-after, else full-jitter backoff. */
  private async pause(
    retry: number,
    status: number | undefined,
    headers: Headers | undefined,
    error: AssayError,
    signal?: AbortSignal,
  ): Promise<void> {
    const asked = headers ? serverRetryDelayMs(headers) : undefined;
    const delayMs = Math.min(
      this.retryMaxDelayMs,
      asked ?? backoffDelayMs(retry - 1, this.retryBaseDelayMs, this.retryMaxDelayMs),
    );
    this.onRetry?.({
      retry,
      status,
      requestId: error.requestId,
      delayMs,
      delaySource: asked === undefined ? 'backoff' : 'server',
      error,
    });
    try {
      await sleep(delayMs, signal);
    } catch (reason) {
      throw new AssayAbortError(reason, retry);
    }
  }
}

/** `detail` of a JSON error body, the whole body when it has none, or the text when it is not JSON. */
export function errorDetail(text: string): unknown {
  try {
    const json = JSON.parse(text) as unknown;
    if (json && typeof json === 'object' && 'detail' in json) return (json as { detail: unknown }).detail;
    return json;
  } catch {
    return text;
  }
}

/** What a failed fetch says: its cause's code or message. */
export function causeMessage(e: unknown): string {
  const err = e as Error & { cause?: { code?: string; message?: string } };
  return err.cause?.code ?? err.cause?.message ?? err.message ?? String(e);
}

function nonNegative(n: number, name: string): number {
  if (!Number.isFinite(n) || n < 0) throw new AssayError(`${name} must be a non-negative number, not ${n}`);
  return n;
}

function positive(n: number, name: string): number {
  if (!Number.isFinite(n) || n <= 0) throw new AssayError(`${name} must be a positive number, not ${n}`);
  return n;
}
