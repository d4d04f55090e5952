// What the session is created from: the export's own file, or its rewritten graph (graph-rewrite.ts).
// A rewritten graph with external weights is written to a temporary folder beside links to the
// weight files, since onnxruntime finds external data relative to the model file.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { rewriteHead } from './graph-rewrite.js';
import type { ModelFolder } from './model-folder.js';

export async function loadModelBytes(folder: ModelFolder, rewrite: boolean): Promise<string | Uint8Array> {
  const vocab = typeof folder.config.vocab_size === 'number' ? folder.config.vocab_size : 0;
  if (!rewrite || !vocab) return folder.onnxPath;
  const rewritten = rewriteHead(readFileSync(folder.onnxPath), vocab);
  if (!rewritten) return folder.onnxPath;
  if (rewritten.externalFiles.length === 0) return rewritten.bytes;

  const stat = statSync(folder.onnxPath);
  const id = createHash('sha256').update(`${resolve(folder.onnxPath)}:${stat.size}:${stat.mtimeMs}`).digest('hex').slice(0, 16);
  const dir = join(tmpdir(), `assay-graph-${id}`);
  const target = join(dir, basename(folder.onnxPath));
  if (!existsSync(target)) {
    mkdirSync(dir, { recursive: true });
    for (const file of rewritten.externalFiles) {
      const link = join(dir, file);
      if (!existsSync(link)) symlinkSync(resolve(dirname(folder.onnxPath), file), link);
    }
    const partial = `${target}.${process.pid}.tmp`;
    writeFileSync(partial, rewritten.bytes);
    renameSync(partial, target);
  }
  return target;
}
