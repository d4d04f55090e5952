// GET /openapi.json: every route the server serves, generated from the routes (their zod schemas
// and the error table); valid OpenAPI 3.1 (@seriousme/openapi-schema-validator, pinned); and a
// client generated from it (openapi-typescript, pinned) type-checks against the server's real
// responses, while a response of the wrong shape does not.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServer, type AssayServer } from '../../src/api/server.js';
import { ERROR_TABLE } from '../../src/api/error-table.js';
import { routesSeen } from '../../src/api/openapi/document.js';
import { keysFromList } from '../../src/api/auth.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { createModelPool, openBatches, type ModelPool } from '../../src/service/index.js';
import { KEY, mixedRequest, testRegistry } from './helpers.js';

type Doc = {
  openapi: string;
  info: { version: string; title: string };
  paths: Record<
    string,
    Record<string, { operationId?: string; security?: unknown[]; responses: Record<string, { description: string }> }>
  >;
  components: { schemas: Record<string, unknown> };
};

let app: AssayServer;
let pool: ModelPool;
let doc: Doc;

beforeAll(async () => {
  const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  const registry = testRegistry(dir);
  pool = createModelPool(registry, { threads: 1 }, { info: () => {}, warn: () => {} });
  await pool.preload();
  const opened = await openBatches({
    dataDir: mkdtempSync(join(tmpdir(), 'assay-openapi-')),
    maxLines: 100,
    maxBytes: 1 << 20,
    windowMs: 3600_000,
    keepMs: 3600_000,
    keepReadMs: 3600_000,
    leaseMs: 60_000,
  });
  if (!('batches' in opened)) throw new Error(opened.unavailable);
  app = await buildServer({
    registry,
    models: pool,
    operator: {
      ...pool,
      residency: pool.residency!,
      load: (id, signal) => pool.acquire(id, signal).then((lease) => lease.release()),
      reloadRegistry: () => pool.replaceRegistry(registry),
    },
    keys: keysFromList(KEY, true),
    batches: opened.batches,
    logging: false,
  });
  doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json() as Doc;
}, 120_000);
afterAll(async () => {
  await app?.close();
  await pool?.close();
});

/** The API routes the server registered (not its pages, preflights or HEAD twins), as OpenAPI keys. */
function servedRoutes(): string[] {
  return routesSeen(app)
    .filter((r) => !r.hidden)
    .map((r) => r.route.replace(/:(\w+)/g, '{$1}'));
}

describe('the OpenAPI document', () => {
  it('has every route the server serves, each with an operation id, and nothing else', () => {
    const documented = Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    );
    const served = servedRoutes();
    expect(served.length).toBeGreaterThanOrEqual(20);
    expect([...documented].sort()).toEqual([...new Set(served)].sort());
    for (const [path, ops] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(ops)) expect(op.operationId, `${method} ${path}`).toBeTruthy();
    // The hosted service's operation ids stay.
    expect(doc.paths['/v1/systemone']!.post!.operationId).toBe('systemone_v1_systemone_post');
    expect(doc.paths['/v1/models']!.get!.operationId).toBe('models_v1_v1_models_get');
  });

  it("carries the package's version, and each route's auth and errors from the error table", () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(doc.info.version).toBe(pkg.version);
    expect(doc.info.title).toBe('Assay question-evaluation API');
    const op = (path: string, method: string) => doc.paths[path]![method]!;
    // Authenticated routes: bearer, 401; the operator's also 403 operator_only.
    for (const [path, method] of [
      ['/v1/systemone', 'post'],
      ['/v1/batches', 'post'],
      ['/v1/batches/{id}/results', 'get'],
      ['/mcp', 'post'],
      ['/admin/models', 'get'],
    ] as const) {
      expect(op(path, method).security, path).toEqual([{ HTTPBearer: [] }]);
      expect(op(path, method).responses['401']?.description, path).toContain('`unauthenticated`');
    }
    expect(op('/admin/models', 'get').responses['403']!.description).toContain('`operator_only`');
    expect(op('/livez', 'get').security).toBeUndefined();
    const systemone = op('/v1/systemone', 'post').responses;
    expect(Object.keys(systemone)).toEqual(
      expect.arrayContaining(['200', '401', '403', '408', '413', '415', '422', '429', '500', '503', '529']),
    );
    // Every code of the table is documented on some route.
    const text = JSON.stringify(doc.paths);
    const missing = [...ERROR_TABLE.keys()].filter((code) => !text.includes(`\`${code}\``));
    expect(missing).toEqual([]);
    // The JSONL bodies are described as such.
    expect(
      Object.keys((op('/v1/batches', 'post') as never as { requestBody: { content: object } }).requestBody.content),
    ).toContain('application/jsonl');
    expect(
      Object.keys((op('/v1/batches/{id}/results', 'get').responses['200'] as never as { content: object }).content),
    ).toEqual(['application/jsonl']);
  });

  it('validates against the OpenAPI 3.1 schema', async () => {
    const result = await new Validator().validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });
});

describe('a client generated by openapi-typescript', () => {
  it('type-checks against real responses of the server (and not against a wrong one)', async () => {
    const auth = { authorization: `Bearer ${KEY}` };
    const real = {
      systemone: (
        await app.inject({ method: 'POST', url: '/v1/systemone', headers: auth, payload: mixedRequest() })
      ).json(),
      models: (await app.inject({ method: 'GET', url: '/v1/models', headers: auth })).json(),
      invalid: (
        await app.inject({ method: 'POST', url: '/v1/systemone', headers: auth, payload: { state: 'x' } })
      ).json(),
      batches: (await app.inject({ method: 'GET', url: '/v1/batches', headers: auth })).json(),
      created: (
        await app.inject({
          method: 'POST',
          url: '/v1/batches',
          headers: { ...auth, 'content-type': 'application/jsonl' },
          payload: `${JSON.stringify({ custom_id: 'a', body: mixedRequest() })}\n`,
        })
      ).json(),
      residency: (await app.inject({ method: 'GET', url: '/admin/models', headers: auth })).json(),
      ready: (await app.inject({ method: 'GET', url: '/readyz' })).json(),
      health: (await app.inject({ method: 'GET', url: '/healthz' })).json(),
    };
    const types = astToString(await openapiTS(doc as never));
    const dir = mkdtempSync(join(tmpdir(), 'assay-openapi-client-'));
    writeFileSync(join(dir, 'api.ts'), types);
    const client = (wrong: boolean) => `import type { paths } from './api.js';
type Json<P extends keyof paths, M extends keyof paths[P], S extends number> =
  paths[P][M] extends { responses: { [K in S]: { content: { 'application/json': infer B } } } } ? B : never;
type Body<P extends keyof paths, M extends keyof paths[P]> =
  paths[P][M] extends { requestBody: { content: { 'application/json': infer B } } } ? B : never;
/** The generated client's call: a typed request, a typed answer. */
declare function call<P extends keyof paths, M extends keyof paths[P], S extends number>(path: P, method: M, status: S, body?: Body<P, M>): Json<P, M, S>;
export const request: Body<'/v1/systemone', 'post'> = ${JSON.stringify(mixedRequest())};
export const answer: ReturnType<typeof call<'/v1/systemone', 'post', 200>> = ${JSON.stringify(wrong ? { ...real.systemone, usage: { input_tokens: 'many' } } : real.systemone)};
export const models: Json<'/v1/models', 'get', 200> = ${JSON.stringify(real.models)};
export const invalid: Json<'/v1/systemone', 'post', 422> = ${JSON.stringify(real.invalid)};
export const batches: Json<'/v1/batches', 'get', 200> = ${JSON.stringify(real.batches)};
export const created: Json<'/v1/batches', 'post', 200> = ${JSON.stringify(real.created)};
export const residency: Json<'/admin/models', 'get', 200> = ${JSON.stringify(real.residency)};
export const ready: Json<'/readyz', 'get', 200> = ${JSON.stringify(real.ready)};
export const health: Json<'/healthz', 'get', 200> = ${JSON.stringify(real.health)};
`;
    const tsc = (file: string) =>
      execFileSync(
        process.execPath,
        [
          'node_modules/typescript/bin/tsc',
          '--noEmit',
          '--strict',
          '--exactOptionalPropertyTypes',
          '--target',
          'es2022',
          '--module',
          'nodenext',
          '--moduleResolution',
          'nodenext',
          join(dir, file),
        ],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
    const check = (file: string) => {
      try {
        tsc(file);
        return '';
      } catch (e) {
        return String((e as { stdout?: string }).stdout);
      }
    };
    writeFileSync(join(dir, 'client.ts'), client(false));
    expect(check('client.ts')).toBe('');
    // The check can fail: the same answer with a field of the wrong type is refused.
    writeFileSync(join(dir, 'wrong.ts'), client(true));
    expect(check('wrong.ts')).toMatch(/wrong\.ts\(\d+,\d+\): error TS2322/);
  }, 120_000);
});
