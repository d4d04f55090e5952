// assay serve never writes a model: a default model whose synthetic folder is missing stops it at
// startup with the command that makes it.
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { run as serveCmd } from '../../src/commands/serve.js';
import { withStderr } from '../capture.js';

it('a missing synthetic default model: exit 1, nothing generated, and `assay models synth` named', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'assay-serve-synth-'));
  const registry = join(dir, 'registry.json');
  writeFileSync(
    registry,
    JSON.stringify({
      default: 'svc-s',
      models: { 'svc-s': { path: 'generated/tiny', synthetic: { shape: 'tiny', dtype: 'fp32' }, description: 'tiny', release_date: '2026-11-22' } },
      aliases: {},
    }),
  );
  const { result, err } = await withStderr(() => serveCmd(['--registry', registry, '--port', '0', '--log-level', 'silent']));
  expect(result).toBe(1);
  expect(err).toContain('run `assay models synth` first');
  expect(existsSync(join(dir, 'generated'))).toBe(false);
});
