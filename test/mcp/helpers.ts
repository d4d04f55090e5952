// Shared setup of the MCP tests: the tiny synthetic model behind a registry file of its own.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';

/** The tiny synthetic model behind a registry file of its own; the file's path. */
export async function tinyRegistry(): Promise<string> {
  const dir = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  const file = join(mkdtempSync(join(tmpdir(), 'assay-mcp-')), 'registry.json');
  const registry = {
    default: 'svc-1.13.0',
    models: { 'svc-1.13.0': { path: dir, variant: 'fp32', description: 'tiny synthetic', release_date: '2026-11-22' } },
    aliases: { 'svc-latest': 'svc-1.13.0' },
  };
  writeFileSync(file, JSON.stringify(registry));
  return file;
}
