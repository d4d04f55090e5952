// assay serve never writes a model: a default model whose synthetic folder is missing stops it at
// startup with the command that makes it; one with an absolute folder is served from there.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { isAbsolute, join } from 'node:path';
import { expect, it } from 'vitest';
import { run as serveCmd } from '../../src/commands/serve.js';
import { withStderr } from '../capture.js';
import { serveLog } from '../serve-process.js';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';

it('a missing synthetic default model: exit 1, nothing generated, and `assay models synth` named', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'assay-serve-synth-'));
  const registry = join(dir, 'registry.json');
  writeFileSync(
    registry,
    JSON.stringify({
      default: 'svc-s',
      models: {
        'svc-s': {
          path: 'generated/tiny',
          synthetic: { shape: 'tiny', dtype: 'fp32' },
          description: 'tiny',
          release_date: '2026-11-22',
        },
      },
      aliases: {},
    }),
  );
  const { result, err } = await withStderr(() =>
    serveCmd(['--registry', registry, '--port', '0', '--log-level', 'silent']),
  );
  expect(result).toBe(1);
  expect(err).toContain('run `assay models synth` first');
  expect(existsSync(join(dir, 'generated'))).toBe(false);
});

it('a default model with an absolute path is served from that path (not joined to the registry folder)', async () => {
  const folder = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  expect(isAbsolute(folder)).toBe(true);
  const dir = mkdtempSync(join(tmpdir(), 'assay-serve-abs-'));
  const registry = join(dir, 'registry.json');
  writeFileSync(
    registry,
    JSON.stringify({
      default: 'svc-abs',
      models: {
        'svc-abs': {
          path: folder,
          synthetic: { shape: 'tiny', dtype: 'fp32' },
          variant: 'fp32',
          description: 'tiny',
          release_date: '2026-11-22',
        },
      },
      aliases: { 'svc-latest': 'svc-abs' },
    }),
  );
  const port = await freePort();
  const { result, err } = await withStderr(async () => {
    const serving = serveCmd([
      '--registry',
      registry,
      '--port',
      String(port),
      '--threads',
      '1',
      '--log-level',
      'silent',
    ]);
    // Ready (/healthz 200: the default model loaded from its absolute folder), or the command ended first.
    const ready = (async () => {
      for (;;) {
        const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
          (r) => r.ok,
          () => false,
        );
        if (ok) return 'ready';
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const first = await Promise.race([serving.then((code) => `exited ${code}`), ready]);
    if (first === 'ready') process.emit('SIGTERM');
    return [first, await serving];
  });
  expect(result, err).toEqual(['ready', 0]);
}, 60_000);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

it('a keys file naming a model the registry lacks is refused at startup, with the key and the names', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'assay-serve-keys-'));
  const keys = join(dir, 'keys.json');
  const hash = '0'.repeat(64);
  writeFileSync(
    keys,
    JSON.stringify({
      keys: [
        { name: 'team-a', sha256: hash, models: ['svc-latest', 'svc-typo'] },
        { name: 'team-b', sha256: hash },
      ],
    }),
  );
  const { result, err } = await withStderr(() =>
    serveCmd(['--keys-file', keys, '--port', '0', '--log-level', 'silent']),
  );
  expect(result).toBe(2);
  expect(err).toContain(`${keys}: key "team-a" names "svc-typo": not in the model registry (`);
  expect(err).toMatch(/registry\.json accepts svc-latest, svc-preview, svc-1\.13\.0, tiny-tasks-1\b/);
});

it('the startup log says that a remote escalation breaks zero data retention, and that its key is not set (bin/assay.js)', async () => {
  const folder = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  const registry = join(mkdtempSync(join(tmpdir(), 'assay-serve-escalate-')), 'registry.json');
  writeFileSync(
    registry,
    JSON.stringify({
      default: 'svc-1',
      models: {
        'svc-1': { path: folder, description: 'tiny', release_date: '2026-11-22' },
        'cascade-1': {
          escalate: {
            first: 'svc-1',
            second: { url: 'http://127.0.0.1:9', model: 'svc-latest', api_key_env: 'ASSAY_TEST_UNSET_SECOND_KEY' },
            below: { noul: 0.7 },
          },
          description: 'escalates to a remote',
          release_date: '2026-11-25',
        },
      },
      aliases: {},
    }),
  );
  const { ASSAY_TEST_UNSET_SECOND_KEY: _, ...env } = process.env;
  const out = await serveLog(registry, [], env);
  const warnings = out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { level: number; msg: string; model?: string; second_url?: string })
    .filter((l) => l.level === 40 && l.model === 'cascade-1');
  expect(warnings.map((w) => w.msg)).toEqual([
    'ESCALATING TO A REMOTE MODEL: the questions this model escalates, with their state, are sent to that endpoint; zero data retention does not hold for them',
    'the remote model API key variable is not set: escalations will fail',
  ]);
  expect(warnings[0]!.second_url).toBe('http://127.0.0.1:9');
}, 60_000);
