// GET /openapi.json: an OpenAPI 3.1 document generated from the zod schemas in schemas.ts.
import { z } from 'zod';
import {
  ERROR_EXAMPLES,
  MODELS_EXAMPLE,
  REQUEST_EXAMPLE,
  RESPONSE_EXAMPLE,
  VALIDATION_EXAMPLE,
} from './openapi-examples.js';
import {
  ErrorMessageSchema,
  HTTPValidationErrorSchema,
  ModelMetadataListSchema,
  SystemOneRequestSchema,
  SystemOneResponseSchema,
} from '../protocol/index.js';

export const OPENAPI_VERSION = '0.2.0';

type Json = Record<string, unknown>;

/** Adds an OpenAPI discriminator to every oneOf whose members are refs to objects with a const `type`. */
function addDiscriminators(node: unknown, schemas: Record<string, Json>): void {
  if (Array.isArray(node)) return node.forEach((n) => addDiscriminators(n, schemas));
  if (typeof node !== 'object' || node === null) return;
  const o = node as Json;
  if (Array.isArray(o.oneOf)) {
    const mapping: Record<string, string> = {};
    for (const m of o.oneOf as Json[]) {
      const ref = typeof m.$ref === 'string' ? m.$ref : '';
      const target = schemas[ref.replace('#/components/schemas/', '')] as
        { properties?: { type?: { const?: string } } } | undefined;
      const tag = target?.properties?.type?.const;
      if (tag) mapping[tag] = ref;
    }
    if (Object.keys(mapping).length === (o.oneOf as unknown[]).length)
      o.discriminator = { propertyName: 'type', mapping };
  }
  for (const v of Object.values(o)) addDiscriminators(v, schemas);
}

/** The named schemas ($defs) of these zod schemas, as JSON Schema read as `io` says. */
function defs(members: z.ZodType[], io: 'input' | 'output'): Json {
  const shape = Object.fromEntries(members.map((m, i) => [`m${i}`, m]));
  return z.toJSONSchema(z.object(shape), { target: 'draft-2020-12', unrepresentable: 'any', io }).$defs ?? {};
}

export function buildOpenApi(serverUrl?: string): Json {
  // The request as the server reads it (input: fields it does not name are ignored, so no
  // `additionalProperties: false`), the answers and errors as it writes them (output).
  const all = {
    ...defs([SystemOneRequestSchema], 'input'),
    ...defs(
      [SystemOneResponseSchema, ModelMetadataListSchema, HTTPValidationErrorSchema, ErrorMessageSchema],
      'output',
    ),
  };
  const text = JSON.stringify(all).replaceAll('"#/$defs/', '"#/components/schemas/');
  const schemas = JSON.parse(text) as Record<string, Json>;
  addDiscriminators(schemas, schemas);

  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  // Each body with an example (src/api/openapi-examples.ts): Swagger UI pre-fills and shows them.
  const json = (name: string, example: unknown) => ({ 'application/json': { schema: ref(name), example } });
  const error = (status: string, description: string) => ({
    description,
    content: json('ErrorMessage', { detail: ERROR_EXAMPLES[status] }),
  });
  const errors = {
    '401': error('401', 'Missing or invalid API key'),
    '403': error('403', 'The key may not use this model'),
    '422': { description: 'Validation Error', content: json('HTTPValidationError', VALIDATION_EXAMPLE) },
    '429': error('429', 'Rate limit exceeded (retry-after, retry-after-ms)'),
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Assay question-evaluation API',
      version: OPENAPI_VERSION,
      description: 'Evaluates a state against typed questions (noul / choice / score).',
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    // Relative to where the document is served: the server that serves it.
    servers: [serverUrl ? { url: serverUrl } : { url: '/', description: 'this server' }],
    paths: {
      '/v1/systemone': {
        post: {
          summary: 'Systemone',
          operationId: 'systemone_v1_systemone_post',
          security: [{ HTTPBearer: [] }],
          requestBody: { required: true, content: json('SystemOneRequest', REQUEST_EXAMPLE) },
          responses: {
            '200': { description: 'Successful Response', content: json('SystemOneResponse', RESPONSE_EXAMPLE) },
            ...errors,
            '408': error('408', 'The request exceeded its deadline (model load wait, queue, evaluation)'),
            '413': error('413', 'Body too large'),
            '415': error('415', 'Content type other than application/json'),
            '503': error(
              '503',
              'The model failed to load and waits out its backoff, or the server is shutting down (retry-after)',
            ),
            '529': error('529', 'Engine queue full (retry-after)'),
          },
        },
      },
      '/v1/models': {
        get: {
          summary: 'Models V1',
          operationId: 'models_v1_v1_models_get',
          security: [{ HTTPBearer: [] }],
          responses: {
            '200': { description: 'Successful Response', content: json('ModelMetadataList', MODELS_EXAMPLE) },
            ...errors,
          },
        },
      },
    },
    components: {
      schemas,
      securitySchemes: { HTTPBearer: { type: 'http', scheme: 'bearer' } },
    },
  };
}
