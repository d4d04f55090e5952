// The error responses of the OpenAPI document, from the one error table (error-table.ts): a route
// names the error codes it can end in, and each code's status, body and retry headers are what
// the table answers for it (asked with a stand-in of its class, so the document cannot drift from
// the table). The codes of Fastify's own refusals (413, 415) come from the same errorResponse().
import { z } from 'zod';
import { DEFAULTS } from '../../defaults.js';
import { ErrorMessageSchema, HTTPValidationErrorSchema } from '../../protocol/index.js';
import { ERROR_TABLE, errorResponse, type ErrorResponse } from '../error-table.js';
import { ERROR_EXAMPLES, VALIDATION_EXAMPLE } from '../openapi-examples.js';

/** Fastify's own client errors the table answers (errorResponse's FASTIFY rows), by their code. */
const FASTIFY_CODES: Record<string, string> = {
  body_too_large: 'FST_ERR_CTP_BODY_TOO_LARGE',
  unsupported_media_type: 'FST_ERR_CTP_INVALID_MEDIA_TYPE',
};

/** What the table answers for an error of this code (a stand-in of its class: the status and headers do not depend on its fields). */
export function tableResponse(code: string): ErrorResponse {
  const context = { deadlineMs: DEFAULTS.deadlineMs, bodyLimit: DEFAULTS.bodyLimit };
  const fastify = FASTIFY_CODES[code];
  if (fastify) return errorResponse(Object.assign(new Error(code), { code: fastify }), context);
  const row = ERROR_TABLE.get(code);
  if (!row) throw new Error(`openapi: no error-table row has the code ${code}`);
  const standIn = Object.assign(Object.create(row.type.prototype) as Error, {
    message: ERROR_EXAMPLES[code] ?? code,
    detail: code === 'invalid_request' ? VALIDATION_EXAMPLE.detail : (ERROR_EXAMPLES[code] ?? code),
    headers: {},
    retryAfterSeconds: 1,
    budget: 'the request',
    limit: 0,
    count: 0,
    run: '',
  });
  const r = errorResponse(standIn, context);
  if (r.code !== code) throw new Error(`openapi: the stand-in of ${code} was answered as ${r.code}`);
  return r;
}

/** Every code errorResponses() can document: the table's and Fastify's. */
export const DOCUMENTED_CODES = () => [...ERROR_TABLE.keys(), ...Object.keys(FASTIFY_CODES)];

export interface DocResponse {
  description: string;
  content: Record<string, { schema: z.ZodType }>;
  /** The example per media type (added to the document afterwards: the transform keeps schemas only). */
  examples?: Record<string, unknown>;
  headers?: Record<string, { description: string; schema: { type: 'string' } }>;
}

const RETRY_HEADERS = {
  'retry-after': { description: 'seconds to wait (whole, at least 1)', schema: { type: 'string' as const } },
  'retry-after-ms': { description: 'milliseconds to wait, jittered', schema: { type: 'string' as const } },
};

/** The responses of these codes, one per status (its description names each code and what it means). */
export function errorResponses(codes: string[]): Record<string, DocResponse> {
  const byStatus = new Map<number, ErrorResponse[]>();
  for (const code of codes) {
    const r = tableResponse(code);
    byStatus.set(r.status, [...(byStatus.get(r.status) ?? []), r]);
  }
  const out: Record<string, DocResponse> = {};
  for (const [status, rs] of [...byStatus].sort(([a], [b]) => a - b)) {
    const list = rs.some((r) => Array.isArray(r.body.detail));
    const schema = list ? HTTPValidationErrorSchema : ErrorMessageSchema;
    const example = list ? VALIDATION_EXAMPLE : rs[0]!.body;
    out[String(status)] = {
      description: `Error code${rs.length > 1 ? 's' : ''} ${rs.map((r) => `\`${r.code}\``).join(', ')} (docs/api.md#errors)`,
      content: { 'application/json': { schema } },
      examples: { 'application/json': example },
      ...(rs.some((r) => r.headers && 'retry-after' in r.headers) ? { headers: RETRY_HEADERS } : {}),
    };
  }
  return out;
}
