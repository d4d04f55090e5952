// Every route's entry in the OpenAPI document, in one table: what it takes, what it answers, its
// auth and the error codes it can end in (their responses from the error table: errors.ts). The
// server attaches each entry to its route as it is added (document.ts), so a route without an
// entry is caught by test/api/openapi.test.ts rather than missing from the document silently.
import { z } from 'zod';
import { ModelMetadataListSchema, SystemOneRequestSchema, SystemOneResponseSchema } from '../../protocol/index.js';
import { LiveSchema, ReadySchema, StartedSchema } from '../routes/probes.js';
import { errorResponses, type DocResponse } from './errors.js';
import {
  BatchDeletedSchema,
  BatchIdSchema,
  BatchInputSchema,
  BatchListQuerySchema,
  BatchListSchema,
  BatchSchema,
  HealthSchema,
  JsonRpcSchema,
  LoadedSchema,
  MetricsSchema,
  ModelNameSchema,
  OpenApiDocumentSchema,
  ReloadedSchema,
  ResidencySchema,
  ResultsPageSchema,
  ResultsQuerySchema,
  UnloadedSchema,
} from './wire.js';

interface Entry {
  summary: string;
  description?: string;
  operationId: string;
  tags: string[];
  /** A bearer key (operator: an operator key). */
  auth?: 'key' | 'operator';
  /** Rate limited (requests per minute, tokens per second). */
  rated?: boolean;
  body?: z.ZodType;
  /** Media types of the body (default application/json). */
  consumes?: string[];
  querystring?: z.ZodType;
  params?: z.ZodType;
  ok: { status?: number; schema: z.ZodType; type?: string; description: string };
  /** The error codes it can end in (error-table.ts), besides those of its auth and the server's own. */
  errors?: string[];
}

/** Every route: the Host / Origin checks (plugins/origins.ts). */
const EVERY = ['host_forbidden', 'origin_forbidden'];
/** Every route but the probes: refused while draining. */
const SERVED = [...EVERY, 'draining'];
/** A JSON body read by the server's body parsing (plugins/body.ts). */
const JSON_BODY = ['body_too_large', 'unsupported_media_type'];
/** What running a model can end in. */
const EVALUATION = [
  'invalid_request',
  'model_forbidden',
  'token_budget_exceeded',
  'untokenizable_input',
  'deadline',
  'overloaded',
  'model_unavailable',
  'models_busy',
  'model_too_large',
  'models_pinned',
  'model_load_failed',
  'engine_dead',
  'engine_failure',
  'response_contract',
  'body_worker_unavailable',
];
const BATCHES = ['batches_unavailable'];

export const ROUTE_DOCS: Record<string, Entry> = {
  'POST /v1/systemone': {
    summary: 'Evaluate a state against typed questions',
    description:
      'Answers each question (noul: yes/no; choice: one option; score: a rubric level) about the ' +
      'state, with probabilities and confidence. The response writes answers and options in the ' +
      'order they were sent.',
    // The hosted service's operation ids (clients generated against it keep their method names).
    operationId: 'systemone_v1_systemone_post',
    tags: ['Evaluation'],
    auth: 'key',
    rated: true,
    body: SystemOneRequestSchema,
    ok: { schema: SystemOneResponseSchema, description: 'The answers' },
    errors: [...JSON_BODY, ...EVALUATION],
  },
  'GET /v1/models': {
    summary: 'The model names this key may send',
    operationId: 'models_v1_v1_models_get',
    tags: ['Evaluation'],
    auth: 'key',
    rated: true,
    ok: {
      schema: ModelMetadataListSchema,
      description: 'The models (x-assay-models-identity: a hash of what the names resolve to now)',
    },
  },
  'POST /v1/batches': {
    summary: 'Submit a batch job (JSONL)',
    description:
      'A JSONL corpus of /v1/systemone requests, streamed to disk and run behind interactive ' +
      'traffic. An Idempotency-Key header makes a retry return the same batch ' +
      '(x-assay-batch-created: false).',
    operationId: 'create_batch_v1_batches_post',
    tags: ['Batches'],
    auth: 'key',
    rated: true,
    body: BatchInputSchema,
    consumes: ['application/jsonl', 'application/x-ndjson'],
    ok: { schema: BatchSchema, description: 'The batch (validating, then in_progress)' },
    errors: [...BATCHES, 'batch_too_large', 'idempotency_conflict', 'invalid_request', 'unsupported_media_type'],
  },
  'GET /v1/batches': {
    summary: "The key's batches, newest first",
    operationId: 'list_batches_v1_batches_get',
    tags: ['Batches'],
    auth: 'key',
    querystring: BatchListQuerySchema,
    ok: { schema: BatchListSchema, description: 'A page of batches' },
    errors: [...BATCHES, 'invalid_request'],
  },
  'GET /v1/batches/:id': {
    summary: 'A batch',
    operationId: 'get_batch_v1_batches__id__get',
    tags: ['Batches'],
    auth: 'key',
    params: BatchIdSchema,
    ok: { schema: BatchSchema, description: 'The batch' },
    errors: [...BATCHES, 'batch_not_found'],
  },
  'POST /v1/batches/:id/cancel': {
    summary: 'Cancel a batch',
    operationId: 'cancel_batch_v1_batches__id__cancel_post',
    tags: ['Batches'],
    auth: 'key',
    rated: true,
    params: BatchIdSchema,
    ok: { schema: BatchSchema, description: 'The batch, cancelling or cancelled' },
    errors: [...BATCHES, 'batch_not_found'],
  },
  'DELETE /v1/batches/:id': {
    summary: 'Delete a batch, its input and its results',
    operationId: 'delete_batch_v1_batches__id__delete',
    tags: ['Batches'],
    auth: 'key',
    rated: true,
    params: BatchIdSchema,
    ok: { schema: BatchDeletedSchema, description: 'Deleted' },
    errors: [...BATCHES, 'batch_not_found'],
  },
  'GET /v1/batches/:id/results': {
    summary: "A page of a batch's results (JSONL), while it runs",
    operationId: 'batch_results_v1_batches__id__results_get',
    tags: ['Batches'],
    auth: 'key',
    params: BatchIdSchema,
    querystring: ResultsQuerySchema,
    ok: { schema: ResultsPageSchema, type: 'application/jsonl', description: 'Result lines' },
    errors: [...BATCHES, 'batch_not_found', 'invalid_cursor', 'invalid_request'],
  },
  'POST /mcp': {
    summary: 'MCP endpoint for agents (Streamable HTTP, stateless, JSON responses)',
    description:
      'JSON-RPC messages of the Model Context Protocol: tools models, check, classify, score and ' +
      'evaluate, under the same keys and limits as /v1/systemone (docs/agents.md). A message is ' +
      'at most 256 KiB. GET and DELETE: 405.',
    operationId: 'mcp_post',
    tags: ['Agents'],
    auth: 'key',
    rated: true,
    body: JsonRpcSchema,
    ok: { schema: JsonRpcSchema, description: 'The JSON-RPC answer (tool errors are results with isError)' },
    errors: [...JSON_BODY, 'invalid_request'],
  },
  'GET /admin/models': {
    summary: 'The resident models (operator)',
    operationId: 'admin_models_get',
    tags: ['Operator'],
    auth: 'operator',
    ok: { schema: ResidencySchema, description: 'What is resident, and the limits' },
  },
  'POST /admin/models/load': {
    summary: 'Load a model (operator)',
    operationId: 'admin_models_load_post',
    tags: ['Operator'],
    auth: 'operator',
    body: ModelNameSchema,
    ok: { schema: LoadedSchema, description: 'Loaded (room made as for a request)' },
    errors: [
      ...JSON_BODY,
      'invalid_request',
      'deadline',
      'model_unavailable',
      'models_busy',
      'model_too_large',
      'models_pinned',
    ],
  },
  'POST /admin/models/unload': {
    summary: 'Unload a model (operator)',
    operationId: 'admin_models_unload_post',
    tags: ['Operator'],
    auth: 'operator',
    body: ModelNameSchema,
    ok: { schema: UnloadedSchema, description: 'Unloaded, or it was not resident' },
    errors: [...JSON_BODY, 'invalid_request', 'model_in_use'],
  },
  'POST /admin/registry/reload': {
    summary: 'Read the registry file again (operator; as SIGHUP)',
    operationId: 'admin_registry_reload_post',
    tags: ['Operator'],
    auth: 'operator',
    ok: { schema: ReloadedSchema, description: 'What changed' },
    errors: ['registry_refused'],
  },
  'GET /livez': {
    summary: 'Liveness: the process and its event loop (never the models or the database)',
    operationId: 'livez_get',
    tags: ['Probes'],
    ok: { schema: LiveSchema, description: 'Alive' },
  },
  'GET /readyz': {
    summary: 'Readiness: the default model loaded, the batch store reachable, not draining',
    description: '503 with the same body shape (status, reason, checks) when not ready.',
    operationId: 'readyz_get',
    tags: ['Probes'],
    ok: { schema: ReadySchema, description: 'Ready' },
  },
  'GET /startupz': {
    summary: 'Startup: the default model has loaded once',
    description: '503 {"status":"starting"} until then.',
    operationId: 'startupz_get',
    tags: ['Probes'],
    ok: { schema: StartedSchema, description: 'Started' },
  },
  'GET /healthz': {
    summary: 'Health (startup, readiness and liveness in one; kept for compatibility)',
    description: '503 {"status":"loading"} or {"status":"draining"}; batches: their store.',
    operationId: 'healthz_get',
    tags: ['Probes'],
    ok: { schema: HealthSchema, description: 'Healthy' },
  },
  'GET /health': {
    summary: "Health, at the hosted service's path (as /healthz)",
    operationId: 'health_get',
    tags: ['Probes'],
    ok: { schema: HealthSchema, description: 'Healthy' },
  },
  'GET /metrics': {
    summary: 'Prometheus metrics (route templates, statuses and model ids only)',
    operationId: 'metrics_get',
    tags: ['Operations'],
    ok: { schema: MetricsSchema, type: 'text/plain', description: 'Metrics' },
  },
  'GET /openapi.json': {
    summary: 'This document',
    operationId: 'openapi_get',
    tags: ['Operations'],
    ok: { schema: OpenApiDocumentSchema, description: 'OpenAPI 3.1' },
  },
};

/** A route's Fastify schema (documentation: validation stays the service's, document.ts). */
export function routeSchema(entry: Entry): Record<string, unknown> {
  const codes = [
    ...(entry.auth ? ['unauthenticated'] : []),
    ...(entry.auth === 'operator' ? ['operator_only'] : []),
    ...(entry.rated ? ['rate_limited'] : []),
    ...(entry.tags.includes('Probes') ? EVERY : SERVED),
    ...(entry.errors ?? []),
  ];
  const errors = errorResponses([...new Set(codes)]);
  const ok: DocResponse = {
    description: entry.ok.description,
    content: { [entry.ok.type ?? 'application/json']: { schema: entry.ok.schema } },
  };
  return {
    summary: entry.summary,
    ...(entry.description ? { description: entry.description } : {}),
    operationId: entry.operationId,
    tags: entry.tags,
    ...(entry.auth ? { security: [{ HTTPBearer: [] }] } : {}),
    ...(entry.body ? { body: entry.body } : {}),
    ...(entry.consumes ? { consumes: entry.consumes } : {}),
    ...(entry.querystring ? { querystring: entry.querystring } : {}),
    ...(entry.params ? { params: entry.params } : {}),
    response: { [String(entry.ok.status ?? 200)]: ok, ...errors },
  };
}
