// The OpenAPI document's examples are true: the request example is the README's request and
// passes the request schema, every response example passes its response schema, and Swagger UI's
// pre-filled body (the request example) is what the API answers 200 (test/browser/pages.test.ts).
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../api/helpers.js';
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
  let doc: {
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
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => {
    server = await startServer({ logging: false });
    doc = (await server.app.inject({ method: 'GET', url: '/openapi.json' })).json() as typeof doc;
  });
  afterAll(async () => server?.close());

  it("the request example is the README's request", () => {
    const readme = readFileSync('README.md', 'utf8');
    const body = /-d '(\{[\s\S]*?\})'\n/.exec(readme)![1]!;
    expect(JSON.parse(body)).toEqual(REQUEST_EXAMPLE);
  });

  it('every request and response body has an example its schema accepts', () => {
    const bodies: Array<[string, Media]> = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        // The JSON bodies (JSONL and metrics are text), of the schemas below.
        const json = (m: Media | undefined) => m && m.schema.$ref && SCHEMAS[m.schema.$ref.split('/').pop()!];
        const req = op.requestBody?.content['application/json'];
        if (json(req)) bodies.push([`${method} ${path} request`, req!]);
        for (const [status, r] of Object.entries(op.responses)) {
          const m = r.content?.['application/json'];
          if (json(m)) bodies.push([`${method} ${path} ${status}`, m!]);
        }
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
