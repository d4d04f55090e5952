// The model registry file, the keys file and serve's configuration (no engine needed).
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { generateKey, KeyStore, keysFromList, parseKeysFile, sha256 } from '../../src/api/auth.js';
import { serveConfig } from '../../src/commands/serve.js';
import {
  acceptedModelNames,
  DEFAULT_REGISTRY_FILE,
  listModelNames,
  loadRegistry,
  registerModel,
  resolveModel,
} from '../../src/registry/registry.js';

const tmp = () => mkdtempSync(join(tmpdir(), 'assay-registry-'));

describe('registry', () => {
  it('ships svc-latest and svc-preview as aliases of svc-1.13.0 on the synthetic tiny model', () => {
    const r = loadRegistry(DEFAULT_REGISTRY_FILE);
    expect(r.aliases).toMatchObject({ 'svc-latest': 'svc-1.13.0', 'svc-preview': 'svc-1.13.0' });
    expect(listModelNames(r)).toEqual(expect.arrayContaining(['svc-latest', 'svc-preview']));
    for (const name of ['svc-latest', 'svc-preview']) expect(resolveModel(r, name)?.id).toBe(r.aliases[name]);
    expect(r.models['svc-1.13.0']!.release_date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('resolves paths relative to the registry file and rejects unknown names', () => {
    const dir = tmp();
    const file = join(dir, 'registry.json');
    registerModel(file, 'svc-2.0.0', { path: 'exports/m2', description: 'two', release_date: '2027-01-02' }, [
      'svc-latest',
    ]);
    const r = loadRegistry(file);
    expect(resolveModel(r, 'svc-latest')).toEqual({
      id: 'svc-2.0.0',
      dir: join(dir, 'exports/m2'),
      entry: r.models['svc-2.0.0'],
    });
    expect(resolveModel(r, 'svc-9')).toBeUndefined();
    expect(resolveModel(r, 'toString')).toBeUndefined();
    expect(acceptedModelNames(r)).toEqual(['svc-latest', 'svc-2.0.0']);
  });

  it('registerModel adds a version and moves aliases atomically, keeping the rest', () => {
    const dir = tmp();
    const file = join(dir, 'registry.json');
    registerModel(file, 'svc-1.0.0', { path: '/abs/one', description: 'one', release_date: '2026-01-01' }, [
      'svc-latest',
      'svc-preview',
    ]);
    registerModel(file, 'svc-1.1.0', { path: 'two', description: 'two', release_date: '2026-02-01', listed: true }, [
      'svc-preview',
    ]);
    const r = loadRegistry(file);
    expect(r.default).toBe('svc-1.0.0');
    expect(r.aliases).toEqual({ 'svc-latest': 'svc-1.0.0', 'svc-preview': 'svc-1.1.0' });
    expect(listModelNames(r)).toEqual(['svc-latest', 'svc-preview', 'svc-1.1.0']);
    expect(readdirSync(dir)).toEqual(['registry.json']); // no temp files left behind
    expect(() => registerModel(file, 'svc-latest', { path: 'x', description: '', release_date: '2026-01-01' })).toThrow(
      /alias/,
    );
    expect(JSON.parse(readFileSync(file, 'utf8')).models['svc-latest']).toBeUndefined(); // a refused write changes nothing
  });

  it('reports a broken registry by field', () => {
    const file = join(tmp(), 'registry.json');
    writeFileSync(
      file,
      JSON.stringify({
        default: 'a',
        models: { a: { path: 'p', description: 'd', release_date: '2026-1-1' } },
        aliases: {},
      }),
    );
    expect(() => loadRegistry(file)).toThrow(/release_date/);
    writeFileSync(
      file,
      JSON.stringify({
        default: 'a',
        models: { a: { path: 'p', description: 'd', release_date: '2026-01-01' } },
        aliases: { x: 'b' },
      }),
    );
    expect(() => loadRegistry(file)).toThrow(/unknown model "b"/);
  });

  it('a malformed registry is refused naming the file, the path in it and what was expected', () => {
    const file = join(tmp(), 'registry.json');
    const entry = { path: 'p', description: 'd', release_date: '2026-01-01' };
    const problem = (data: unknown) => {
      writeFileSync(file, typeof data === 'string' ? data : JSON.stringify(data));
      try {
        loadRegistry(file);
      } catch (e) {
        return (e as Error).message.replace(file, 'FILE');
      }
      return 'accepted';
    };
    const registry = (e: Record<string, unknown>, rest: Record<string, unknown> = {}) => ({
      default: 'svc-1.0',
      models: { 'svc-1.0': e },
      ...rest,
    });
    expect(problem(registry({ ...entry, variant: 'int9' }))).toBe(
      'model registry FILE: models["svc-1.0"].variant: expected one of fp32, fp16, int8, uint8, quantized, q4, q4f16, bnb4',
    );
    expect(problem(registry({ ...entry, release_date: 20260101 }))).toBe(
      'model registry FILE: models["svc-1.0"].release_date: Invalid input: expected string, received number',
    );
    expect(problem(registry({ path: 'p', release_date: '2026-01-01' }))).toBe(
      'model registry FILE: models["svc-1.0"].description: missing (expected string)',
    );
    expect(problem(registry({ description: 'd', release_date: '2026-01-01' }))).toBe(
      'model registry FILE: models["svc-1.0"].path: expected a model folder (an entry that does not escalate has one)',
    );
    expect(problem(registry({ ...entry, graph_rewrite: 'no' }))).toBe(
      'model registry FILE: models["svc-1.0"].graph_rewrite: Invalid input: expected boolean, received string',
    );
    expect(problem(registry({ ...entry, synthetic: { shape: 'tiny' } }))).toBe(
      'model registry FILE: models["svc-1.0"].synthetic.dtype: missing (expected string)',
    );
    expect(problem(registry(entry, { aliases: { latest: 'svc-2.0' } }))).toBe(
      'model registry FILE: aliases.latest: expected a versioned id, got unknown model "svc-2.0"',
    );
    expect(problem(registry(entry, { default: 'svc-2.0' }))).toBe(
      'model registry FILE: default: expected a model or alias of this registry, got "svc-2.0"',
    );
    expect(problem({ default: 'svc-1.0', models: [] })).toBe(
      'model registry FILE: models: Invalid input: expected record, received array',
    );
    expect(problem([])).toBe('model registry FILE: (top level): Invalid input: expected object, received array');
    expect(problem('{"models": ')).toMatch(/^model registry FILE: not valid JSON/);
    // A misspelt field is refused, naming the field meant (it would be ignored: the wrong variant would run) …
    expect(problem(registry({ ...entry, varient: 'int8' }))).toBe(
      'model registry FILE: models["svc-1.0"].varient: unknown field: expected "variant"',
    );
    expect(problem(registry({ path: 'p', description: 'd', releaseDate: '2026-01-01' }))).toBe(
      'model registry FILE: models["svc-1.0"].releaseDate: unknown field: expected "release_date"',
    );
    expect(problem(registry(entry, { alias: { latest: 'svc-1.0' } }))).toBe(
      'model registry FILE: alias: unknown field: expected "aliases"',
    );
    // … while a field this version does not know (a newer Assay's, a tool's) loads, and survives a rewrite.
    expect(problem(registry({ ...entry, revision: 'abc123', source: { hub: 'org/m' } }, { generator: 'x' }))).toBe(
      'accepted',
    );
    registerModel(file, 'svc-2.0', entry, ['latest']);
    const written = JSON.parse(readFileSync(file, 'utf8'));
    expect(written.models['svc-1.0']).toEqual({ ...entry, revision: 'abc123', source: { hub: 'org/m' } });
    expect(written.generator).toBe('x');
  });
});

describe('keys', () => {
  it('stores only hashes and finds a presented key', () => {
    const store = new KeyStore([
      ...keysFromList(' k-one , k-two ,'),
      ...parseKeysFile(
        JSON.stringify({
          keys: [
            {
              name: 'team',
              sha256: sha256('k-three').toString('hex'),
              models: ['svc-latest'],
              requests_per_minute: 10,
            },
          ],
        }),
      ),
    ]);
    expect(store.keys).toHaveLength(3);
    expect(store.authenticate('Bearer k-two')?.name).toBe('env-2');
    expect(store.authenticate('bearer k-three')).toMatchObject({
      name: 'team',
      models: ['svc-latest'],
      requestsPerMinute: 10,
    });
    expect(store.authenticate('Bearer k-four')).toBeUndefined();
    expect(store.authenticate('k-one')).toBeUndefined();
    expect(store.authenticate(undefined)).toBeUndefined();
    expect(JSON.stringify(store.keys)).not.toContain('k-one');
  });

  it('rejects a malformed keys file naming the file, the path in it and what was expected', () => {
    const hash = 'a'.repeat(64);
    const problem = (data: unknown) => {
      try {
        parseKeysFile(typeof data === 'string' ? data : JSON.stringify(data), 'keys.json');
      } catch (e) {
        return (e as Error).message;
      }
      return 'accepted';
    };
    expect(problem({ keys: [{ sha256: 'k-plain' }] })).toBe(
      "keys.json: keys[0].sha256: expected the key's SHA-256 as 64 hex digits",
    );
    expect(problem({ keys: [{ sha256: hash }, { sha256: hash, input_tokens_per_second: -1 }] })).toMatch(
      /^keys\.json: keys\[1\]\.input_tokens_per_second: Too small: expected number to be >0$/,
    );
    expect(problem({ keys: [{ sha256: hash, models: 'svc-latest' }] })).toBe(
      'keys.json: keys[0].models: expected an array of model names',
    );
    // A misspelt field is refused, not ignored: a key meant for one model would get every model.
    expect(problem({ keys: [{ sha256: hash, modles: ['svc-latest'] }] })).toBe(
      'keys.json: keys[0]: Unrecognized key: "modles"',
    );
    expect(problem({ key: [] })).toMatch(/^keys\.json: /);
    expect(problem('{"keys": [')).toMatch(/^keys\.json: not JSON/);
    expect(problem({ keys: [{ sha256: hash, name: 'team', models: ['svc-latest'], requests_per_minute: 5 }] })).toBe(
      'accepted',
    );
  });

  it('generates long random keys', () => {
    const a = generateKey();
    expect(a).toMatch(/^sk-assay-[A-Za-z0-9_-]{43}$/);
    expect(generateKey()).not.toBe(a);
  });
});

describe('serve configuration', () => {
  it('defaults to 127.0.0.1:8080 and a generated key', () => {
    const c = serveConfig([], {});
    if (c === 'help') throw new Error('unexpected help');
    expect([c.host, c.port, c.requestsPerMinute, c.inputTokensPerSecond, c.bodyLimit]).toEqual([
      '127.0.0.1',
      8080,
      1200,
      250_000,
      8 * 1024 * 1024,
    ]);
    expect(c.generatedKey).toMatch(/^sk-assay-/);
    expect(c.keys).toHaveLength(1);
  });

  it('takes flags over environment variables', () => {
    const c = serveConfig(['--port', '9000', '--prefix-cache-bytes', '0', '--provider', 'cuda'], {
      PORT: '7000',
      HOST: '0.0.0.0',
      ASSAY_API_KEYS: 'a,b',
      ASSAY_MAX_QUEUE: '3',
      ASSAY_DEADLINE_MS: '500',
    });
    if (c === 'help') throw new Error('unexpected help');
    expect([
      c.host,
      c.port,
      c.prefixCacheBytes,
      c.provider,
      c.maxQueue,
      c.deadlineMs,
      c.keys.length,
      c.generatedKey,
    ]).toEqual(['0.0.0.0', 9000, 0, 'cuda', 3, 500, 2, undefined]);
  });

  it('refuses bad values', () => {
    expect(() => serveConfig(['--port', 'x'], {})).toThrow(/--port/);
    expect(() => serveConfig(['--provider', 'tpu'], {})).toThrow(/cpu or cuda/);
    expect(() => serveConfig(['--nope'], {})).toThrow();
    expect(serveConfig(['--help'], {})).toBe('help');
  });
});
