// The batch API's wire shapes: the batch object (OpenAI's fields, for this API's endpoint) and the
// query parameters of the list and results routes, checked with FastAPI's 422 entries.
import { BATCH_ENDPOINT, type BatchRecord } from '../../service/index.js';
import { InvalidRequestError, type ValidationError } from '../../protocol/index.js';

/** OpenAI's batch object. Input and output live behind this API's own routes, so its file ids are null. */
export function batchObject(b: BatchRecord) {
  const at = (t: number | undefined) => t ?? null;
  return {
    id: b.id,
    object: 'batch',
    endpoint: BATCH_ENDPOINT,
    errors: b.errors && b.errors.length > 0 ? { object: 'list', data: b.errors } : null,
    input_file_id: null,
    completion_window: '24h',
    status: b.status,
    output_file_id: null,
    error_file_id: null,
    results_url: `/v1/batches/${b.id}/results`,
    created_at: b.createdAt,
    in_progress_at: at(b.inProgressAt),
    expires_at: b.expiresAt,
    finalizing_at: at(b.finalizingAt),
    completed_at: at(b.completedAt),
    failed_at: at(b.failedAt),
    expired_at: at(b.expiredAt),
    cancelling_at: at(b.cancellingAt),
    cancelled_at: at(b.cancelledAt),
    request_counts: { total: b.total, completed: b.completed, failed: b.failed },
    metadata: b.metadata ?? null,
  };
}

function int(
  query: Record<string, unknown>,
  name: string,
  min: number,
  max: number,
  fallback: number,
  out: ValidationError[],
) {
  const raw = query[name];
  if (raw === undefined) return fallback;
  const n = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    out.push({
      type: 'int_range',
      loc: ['query', name],
      msg: `Input should be an integer from ${min} to ${max}`,
      input: raw,
      ctx: { ge: min, le: max },
    } as ValidationError);
    return fallback;
  }
  return n;
}

function text(query: Record<string, unknown>, name: string, out: ValidationError[]): string | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string' || raw.length > 200) {
    out.push({
      type: 'string_type',
      loc: ['query', name],
      msg: 'Input should be a short string',
      input: raw,
    } as ValidationError);
    return undefined;
  }
  return raw;
}

/** A page query: `after` (a cursor or batch id) and `limit` (1–`max`, default `fallback`); 422 entries for bad values. */
function pageQuery(q: unknown, max: number, fallback: number): { after?: string; limit: number } {
  const query = (q ?? {}) as Record<string, unknown>;
  const errors: ValidationError[] = [];
  const after = text(query, 'after', errors);
  const limit = int(query, 'limit', 1, max, fallback, errors);
  if (errors.length > 0) throw new InvalidRequestError(errors);
  return after ? { after, limit } : { limit };
}

/** GET /v1/batches: `after` (a batch id) and `limit` (1–100, default 20), as OpenAI's. */
export const listQuery = (q: unknown) => pageQuery(q, 100, 20);

/** Results lines per page: 1–10,000, default 1,000. */
export const resultsQuery = (q: unknown) => pageQuery(q, 10_000, 1000);
