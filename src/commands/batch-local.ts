// `assay batch --local`: the server in this process, on 127.0.0.1 and a free port, with the
// registry's models and batch jobs in a data directory, for the same client flow as a remote
// server. Its key is random, kept in the data directory (mode 0600) so a later run with the same
// --data-dir owns the same batches and can resume them.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildServer, keysFromList } from '../api/index.js';
import { resolveSettings } from '../config/index.js';
import { loadRegistry, resolveModel } from '../registry/index.js';
import { openBatches } from '../service/index.js';
import type { Io } from './common.js';
import { openLocalModel } from './local-model.js';

export interface LocalServer {
  url: string;
  key: string;
  dataDir: string;
  close(): Promise<void>;
}

/** The key of the data directory's batches, made on first use. */
function localKey(dataDir: string): string {
  const file = join(dataDir, 'batch-cli.key');
  try {
    const key = readFileSync(file, 'utf8').trim();
    if (key) return key;
  } catch {
    // none yet
  }
  const key = `sk-assay-local-${randomBytes(24).toString('base64url')}`;
  writeFileSync(file, `${key}\n`, { mode: 0o600 });
  return key;
}

/**
 * Starts the in-process server: `models` (default the registry's default) loaded first, the
 * others when a line names them. Throws with the reason when the registry, a model or the data
 * directory cannot be used.
 */
export async function startLocalServer(
  o: { registryFile: string; models: string[]; dataDir?: string },
  io: Io,
): Promise<LocalServer> {
  const registry = loadRegistry(o.registryFile);
  const names = o.models.length > 0 ? o.models : [registry.default];
  const resolved = names.map((n) => {
    const r = resolveModel(registry, n);
    if (!r) throw new Error(`model "${n}" is not in the registry ${registry.file}`);
    return r;
  });
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), 'assay-batch-'));
  mkdirSync(dataDir, { recursive: true });
  const settings = resolveSettings(
    ['batchMaxLines', 'batchMaxBytes', 'batchWindow', 'batchRetention', 'batchReadRetention', 'batchLease'],
    {},
    io.env,
  );
  const opened = await openBatches({
    dataDir,
    maxLines: settings.batchMaxLines,
    maxBytes: settings.batchMaxBytes,
    windowMs: settings.batchWindow,
    keepMs: settings.batchRetention,
    keepReadMs: settings.batchReadRetention,
    leaseMs: settings.batchLease,
  });
  if (!('batches' in opened)) throw new Error(opened.unavailable);
  const pool = await openLocalModel(registry, resolved[0]!, io, {}, 'batch').catch(async (e: unknown) => {
    await opened.batches.close();
    throw e;
  });
  try {
    for (const r of resolved.slice(1)) await pool.load(r.id);
    const key = localKey(dataDir);
    const app = await buildServer({
      registry,
      models: pool,
      keys: keysFromList(key),
      logging: false,
      docs: false,
      playground: false,
      mcp: false,
      batches: opened.batches,
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    return {
      url,
      key,
      dataDir,
      async close() {
        await app.close();
        await pool.close();
      },
    };
  } catch (e) {
    await opened.batches.close();
    await pool.close();
    throw e;
  }
}
