// One configuration: every setting of `assay serve` comes from one zod schema, parsed once into a
// frozen object; the help text and the README table are generated from it; invalid values stop
// the server at startup, naming the flag or variable; logs are pretty or JSON as asked.
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run as serveCmd, serveConfig } from '../../src/commands/serve.js';
import { serveHelp } from '../../src/config/docs.js';
import { ConfigError, loadServeSettings } from '../../src/config/load.js';
import { settingsFor, settingsInfo } from '../../src/config/settings.js';
import { withConfigTable } from '../../src/config/write-readme.js';
import { ensureSynthModel } from '../../src/model-files/synth/index.js';
import { withStderr } from '../capture.js';
import { serveLog } from '../serve-process.js';

describe('serve settings', () => {
  it('the README configuration table is the one the schema generates (npm run docs:config)', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    expect(withConfigTable(readme)).toBe(readme);
  });

  it('--help lists every setting with its flag, variable and default', () => {
    const help = serveHelp();
    for (const s of settingsInfo()) {
      if (s.env) expect(help).toContain(s.env);
      if (s.flag) expect(help).toContain(s.boolean && s.shown === 'true' ? `--no-${s.flag}` : `--${s.flag}`);
    }
    expect(help).toContain('(default 8080)');
  });

  it('parses once into a frozen object: defaults, environment, flags over environment', () => {
    const d = loadServeSettings([], {});
    if (d === 'help') throw new Error('help');
    expect(Object.isFrozen(d)).toBe(true);
    expect([d.host, d.port, d.graphRewrite, d.serverTimingEngine, d.prefixCacheScope, d.logFormat]).toEqual([
      '127.0.0.1',
      8080,
      true,
      false,
      'key',
      undefined,
    ]);
    const e = loadServeSettings(['--no-graph-rewrite', '--log-format', 'json', '--port', '9001'], {
      PORT: '7000',
      ASSAY_SERVER_TIMING_ENGINE: 'yes',
      ASSAY_GRAPH_REWRITE: '1',
      ASSAY_PREFIX_CACHE_SCOPE: 'shared',
      ASSAY_LOG_FORMAT: 'pretty',
    });
    if (e === 'help') throw new Error('help');
    expect([e.port, e.graphRewrite, e.serverTimingEngine, e.prefixCacheScope, e.logFormat]).toEqual([
      9001,
      false,
      true,
      'shared',
      'json',
    ]);
    expect(() => {
      (e as { port: number }).port = 1;
    }).toThrow(TypeError);
  });

  it('refuses invalid values, naming the flag or the environment variable', () => {
    const refused = (argv: string[], env: Record<string, string> = {}) => {
      try {
        loadServeSettings(argv, env);
      } catch (err) {
        expect(err).toBeInstanceOf(ConfigError);
        return (err as Error).message;
      }
      throw new Error('accepted');
    };
    expect(refused(['--port', 'x'])).toBe("--port must be an integer from 0 to 65535, got 'x'");
    expect(refused(['--port', '70000'])).toContain('--port must be an integer from 0 to 65535');
    expect(refused([], { ASSAY_GRAPH_REWRITE: 'maybe' })).toBe(
      "ASSAY_GRAPH_REWRITE must be one of 1, true, yes, on, 0, false, no, off, got 'maybe'",
    );
    expect(refused([], { ASSAY_PROVIDER: 'tpu' })).toBe("ASSAY_PROVIDER must be cpu or cuda, got 'tpu'");
    expect(refused(['--rpm', '0'])).toContain('--rpm must be an integer >= 1');
    expect(refused(['--log-format', 'xml'])).toContain('--log-format must be json or pretty');
    expect(refused(['--nope'])).toContain("Unknown option '--nope'");
  });

  it('assay serve exits 2 at startup on an invalid value, before loading anything', async () => {
    const saved = process.env.ASSAY_MAX_QUEUE;
    process.env.ASSAY_MAX_QUEUE = '-3';
    let out;
    try {
      out = await withStderr(() => serveCmd([]));
    } finally {
      if (saved === undefined) delete process.env.ASSAY_MAX_QUEUE;
      else process.env.ASSAY_MAX_QUEUE = saved;
    }
    expect(out.result).toBe(2);
    expect(out.err).toContain("assay serve: ASSAY_MAX_QUEUE must be an integer >= 0, got '-3'");
  });

  it('assay serve exits 2 at startup when --preload names a model the registry lacks', async () => {
    const out = await withStderr(() => serveCmd(['--preload', 'no-such-model']));
    expect(out.result).toBe(2);
    expect(out.err).toContain('assay serve: --preload names no-such-model, not in the model registry (');
  });

  it('the serve config adds the keys: a generated one when none is configured', () => {
    const c = serveConfig([], { ASSAY_API_KEYS: 'a,b' });
    if (c === 'help') throw new Error('help');
    expect([c.keys.length, c.generatedKey, Object.isFrozen(c)]).toEqual([2, undefined, true]);
    // With ASSAY_API_KEYS alone, the first key is the operator's; the others are ordinary callers.
    expect(c.keys.map((k) => k.operator ?? false)).toEqual([true, false]);
  });

  it('with a keys file, only the keys it marks "operator": true are the operator\'s (ASSAY_API_KEYS beside it: none)', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'assay-keys-')), 'keys.json');
    const hash = (k: string) => createHash('sha256').update(k).digest('hex');
    writeFileSync(file, JSON.stringify({ keys: [{ sha256: hash('x') }, { sha256: hash('y'), operator: true }] }));
    const c = serveConfig(['--keys-file', file], { ASSAY_API_KEYS: 'z' });
    if (c === 'help') throw new Error('help');
    expect(c.keys.map((k) => k.operator ?? false)).toEqual([false, true, false]);
  });

  it('residency settings read as Ollama users write them: keep-alive durations, 0, negative; the budget; preload names', () => {
    const keep = (v: string) => {
      const s = loadServeSettings([`--keep-alive=${v}`], {});
      if (s === 'help') throw new Error('help');
      return s.keepAlive;
    };
    expect([
      keep('5m'),
      keep('30s'),
      keep('1h30m'),
      keep('500ms'),
      keep('90'),
      keep('0'),
      keep('-1'),
      keep('-5m'),
    ]).toEqual([300_000, 30_000, 5_400_000, 500, 90_000, 0, -1, -1]);
    const d = loadServeSettings([], {
      ASSAY_MAX_LOADED_MODELS: '2',
      ASSAY_MEMORY_BUDGET: '1073741824',
      ASSAY_PRELOAD: 'a, b',
    });
    if (d === 'help') throw new Error('help');
    expect([d.maxLoadedModels, d.memoryBudget, d.preload, d.keepAlive]).toEqual([2, 1073741824, ['a', 'b'], 300_000]);
    expect(() => loadServeSettings(['--keep-alive', 'soon'], {})).toThrow(
      "--keep-alive must be a duration such as 5m, 30s, 1h30m or seconds (0: at once, negative: never), got 'soon'",
    );
    expect(() => loadServeSettings(['--max-loaded-models', '0'], {})).toThrow(
      '--max-loaded-models must be an integer >= 1',
    );
  });
});

describe('logs', () => {
  /** Starts `assay serve` with the given flags, waits until it listens, stops it; returns its stdout. */
  async function serveOutput(flags: string[]): Promise<string> {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
    const registry = join(mkdtempSync(join(tmpdir(), 'assay-logs-')), 'registry.json');
    writeFileSync(
      registry,
      JSON.stringify({
        default: 'svc-1',
        models: { 'svc-1': { path: modelDir, description: 'tiny', release_date: '2026-11-22' } },
        aliases: {},
      }),
    );
    return serveLog(registry, flags);
  }

  it('--log-format pretty writes readable lines (pino-pretty), json writes one JSON object per line', async () => {
    const pretty = await serveOutput(['--log-format', 'pretty']);
    expect(pretty).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: Server listening at http:\/\/127\.0\.0\.1:\d+$/m);
    expect(pretty).not.toMatch(/^\{"level"/m);
    const json = await serveOutput([]); // stdout is a pipe here: JSON by default
    const lines = json.split('\n').filter((l) => l.startsWith('{'));
    expect(lines.some((l) => (JSON.parse(l) as { msg?: string }).msg === 'ready')).toBe(true);
  });
});

describe('where each setting goes', () => {
  // Settings assay serve reads itself (listening, the registry, keys, rate limits, log format).
  const READ_BY_SERVE = [
    'host',
    'allowedHosts',
    'port',
    'registry',
    'keysFile',
    'apiKeys',
    'apiKey',
    'requestsPerMinute',
    'inputTokensPerSecond',
    'logFormat',
    // The model pool's residency (src/commands/serve.ts hands them to createModelPool).
    'maxLoadedModels',
    'keepAlive',
    'memoryBudget',
    'preload',
    // Batch jobs (src/commands/serve.ts hands them to openBatches).
    'dataDir',
    'batches',
    'batchQueueUrl',
    'batchMaxLines',
    'batchMaxBytes',
    'batchWindow',
    'batchRetention',
    'batchReadRetention',
    'batchLease',
  ];

  it('every setting names the engine or server option it sets, or is one serve reads itself: none is silently unused', () => {
    const unplaced = settingsInfo().filter(
      (s) => s.engine === undefined && s.server === undefined && !READ_BY_SERVE.includes(s.name),
    );
    expect(unplaced.map((s) => s.name)).toEqual([]);
  });

  it('flags and variables arrive as engine and server options under their option names', () => {
    const config = loadServeSettings(
      ['--threads', '3', '--no-graph-rewrite', '--deadline-ms', '5000', '--replica-id', 'r9', '--pack-tokens', '64'],
      { ASSAY_PREFIX_CACHE_BYTES: '0' },
    );
    if (config === 'help') throw new Error('unexpected help');
    expect(settingsFor('engine', config)).toMatchObject({
      threads: 3,
      rewriteGraph: false,
      prefixCacheBytes: 0,
      provider: 'cpu',
      packTokens: 64,
    });
    expect(settingsFor('server', config)).toMatchObject({ deadlineMs: 5000, replicaId: 'r9', docs: true });
    expect(settingsFor('engine', config)).not.toHaveProperty('deadlineMs');
  });
});
