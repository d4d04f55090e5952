// The OpenAPI document's examples are true: the request example is the README's request and
// passes the request schema, every response example passes its response schema, and Swagger UI's
// pre-filled body (the request example) is what the API answers 200 (test/browser/pages.test.ts).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildOpenApi } from '../../src/api/openapi.js';
import { REQUEST_EXAMPLE } from '../../src/api/openapi-examples.js';
import {
  ErrorMessageSchema,
  HTTPValidationErrorSchema,
  ModelMetadataListSchema,
  SystemOneRequestSchema,
  SystemOneResponseSchema,
} from '../../src/protocol/index.js';

const SCHEMAS: Record<string, { safeParse(v: unknown): { success: boolean } }> = {
  SystemOneRequest: SystemOneRequestSchema,
  SystemOneResponse: SystemOneResponseSchema,
  ModelMetadataList: ModelMetadataListSchema,
  HTTPValidationError: HTTPValidationErrorSchema,
  ErrorMessage: ErrorMessageSchema,
};

type Media = { schema: { $ref: string }; example?: unknown };

describe('the OpenAPI examples', () => {
  const doc = buildOpenApi() as {
    paths: Record<
      string,
      Record<
        string,
        {
          requestBody?: { content: Record<string, Media> };
          responses: Record<string, { content: Record<string, Media> }>;
        }
      >
    >;
  };

  it("the request example is the README's request", () => {
    const readme = readFileSync('README.md', 'utf8');
    const body = /-d '(\{[\s\S]*?\})'\n/.exec(readme)![1]!;
    expect(JSON.parse(body)).toEqual(REQUEST_EXAMPLE);
  });

  it('every request and response body has an example its schema accepts', () => {
    const bodies: Array<[string, Media]> = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        if (op.requestBody) bodies.push([`${method} ${path} request`, op.requestBody.content['application/json']!]);
        for (const [status, r] of Object.entries(op.responses))
          bodies.push([`${method} ${path} ${status}`, r.content['application/json']!]);
      }
    }
    const wrong = bodies
      .filter(
        ([, m]) => m.example === undefined || !SCHEMAS[m.schema.$ref.split('/').pop()!]!.safeParse(m.example).success,
      )
      .map(([what]) => what);
    expect(bodies.length).toBeGreaterThan(10);
    expect(wrong).toEqual([]);
  });
});
