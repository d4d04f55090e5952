// The zod schemas of the bodies the routes build in code rather than parse (batch objects, the
// operator view, health): the OpenAPI document describes them from here, and
// test/api/openapi-client.test.ts type-checks real responses against the client generated from
// the document, so they cannot drift from what the routes send.
import { z } from 'zod';

const BatchStatus = z.enum([
  'validating',
  'failed',
  'in_progress',
  'finalizing',
  'completed',
  'expired',
  'cancelling',
  'cancelled',
]);
const time = z.number().int().nullable();

export const BatchSchema = z
  .object({
    id: z.string(),
    object: z.literal('batch'),
    endpoint: z.literal('/v1/systemone'),
    errors: z
      .object({
        object: z.literal('list'),
        data: z.array(z.object({ code: z.string(), message: z.string(), line: z.number().int().optional() })),
      })
      .nullable(),
    input_file_id: z.null(),
    completion_window: z.string(),
    status: BatchStatus,
    output_file_id: z.null(),
    error_file_id: z.null(),
    results_url: z.string().describe('GET it for the results, a page at a time'),
    created_at: z.number().int(),
    in_progress_at: time,
    expires_at: z.number().int(),
    finalizing_at: time,
    completed_at: time,
    failed_at: time,
    expired_at: time,
    cancelling_at: time,
    cancelled_at: time,
    request_counts: z.object({ total: z.number().int(), completed: z.number().int(), failed: z.number().int() }),
    metadata: z.record(z.string(), z.string()).nullable(),
  })
  .meta({ id: 'Batch', description: "A batch job, in OpenAI's batch object shape (docs/batches.md)." });

export const BatchListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(BatchSchema),
    first_id: z.string().nullable(),
    last_id: z.string().nullable(),
    has_more: z.boolean(),
  })
  .meta({ id: 'BatchList' });

export const BatchDeletedSchema = z
  .object({ id: z.string(), object: z.literal('batch'), deleted: z.literal(true) })
  .meta({ id: 'BatchDeleted' });

export const BatchIdSchema = z.object({ id: z.string().describe('The batch id (batch_…)') });

const page = (max: number, fallback: number, after: string) =>
  z.object({
    after: z.string().max(200).optional().describe(after),
    limit: z.coerce.number().int().min(1).max(max).optional().describe(`1 to ${max} (default ${fallback})`),
  });
export const BatchListQuerySchema = page(100, 20, 'list the batches after this batch id');
export const ResultsQuerySchema = page(10_000, 1000, 'the cursor of the Link header of the page before');

/** The JSONL bodies: a batch input upload, and a page of results. */
export const BatchInputSchema = z
  .string()
  .describe(
    'JSONL: one {"custom_id": "...", "body": {a POST /v1/systemone request}} a line (docs/batches.md). Send it as application/jsonl.',
  );
export const ResultsPageSchema = z
  .string()
  .describe(
    'JSONL: one {"custom_id", "response": {"status_code", "request_id", "body"}} or ' +
      '{"custom_id", "error"} a line, in the order the lines were answered. Link: rel="next" ' +
      'while more will come; x-assay-results-done: true on the last page.',
  );

const ResidentModelSchema = z
  .object({
    model: z.string(),
    size_bytes: z.number(),
    prefix_cache_bytes: z.number(),
    state: z.enum(['loading', 'ready']),
    family: z.string().nullable(),
    loaded_at: z.string().nullable(),
    last_used: z.string().nullable(),
    expires_at: z.string().nullable(),
    pinned: z.boolean(),
    in_flight: z.number().int(),
    queued: z.number().int(),
    load_ms: z.number().nullable(),
  })
  .meta({ id: 'ResidentModel' });

export const ResidencySchema = z
  .object({
    models: z.array(ResidentModelSchema),
    // null: no limit (JSON has no Infinity).
    max_loaded_models: z.number().nullable(),
    memory_budget_bytes: z.number().nullable(),
    resident_bytes: z.number(),
    keep_alive_ms: z.number().nullable(),
  })
  .meta({ id: 'Residency', description: 'The resident models and the limits (docs/operations.md#model-residency).' });

export const ModelNameSchema = z.object({ model: z.string().min(1) }).meta({ id: 'ModelName' });

export const LoadedSchema = z
  .object({ status: z.literal('loaded'), model: z.union([ResidentModelSchema, z.object({ model: z.string() })]) })
  .meta({ id: 'Loaded' });
export const UnloadedSchema = z
  .object({ status: z.enum(['unloaded', 'not_resident']), model: z.string() })
  .meta({ id: 'Unloaded' });
export const ReloadedSchema = z
  .object({
    status: z.literal('reloaded'),
    added: z.array(z.string()),
    removed: z.array(z.string()),
    changed: z.array(z.string()),
    default: z.string(),
  })
  .meta({ id: 'Reloaded' });

export const HealthSchema = z
  .object({
    status: z.enum(['ok', 'loading', 'draining']),
    batches: z.enum(['ok', 'restarting']).optional(),
  })
  .meta({ id: 'Health' });

export const MetricsSchema = z.string().describe('Prometheus text exposition (text/plain; version=0.0.4)');

export const OpenApiDocumentSchema = z.record(z.string(), z.unknown()).describe('This document');

export const JsonRpcSchema = z.looseObject({ jsonrpc: z.literal('2.0') }).meta({
  id: 'JsonRpcMessage',
  description:
    'A JSON-RPC 2.0 message of the MCP Streamable HTTP transport (docs/agents.md): initialize, tools/list, tools/call …',
});
