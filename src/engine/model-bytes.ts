// What the session is created from: the export's own file, or its rewritten graph (graph-rewrite.ts).
// A graph with inline weights is rewritten in memory; one with external weights is written once as
// a small graph-only file beside the export (onnx/<name>.assay-<id>.onnx) that shares its weights.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { REWRITE_VERSION, rewriteHead } from './graph-rewrite.js';
import type { ModelFolder } from './model-folder.js';

export async function loadModelBytes(folder: ModelFolder, rewrite: boolean): Promise<string | Uint8Array> {
  const vocab = typeof folder.config.vocab_size === 'number' ? folder.config.vocab_size : 0;
  if (!rewrite || !vocab) return folder.onnxPath;
  const rewritten = rewriteHead(readFileSync(folder.onnxPath), vocab);
  if (!rewritten) return folder.onnxPath;
  if (rewritten.externalFiles.length === 0) return rewritten.bytes;

  // onnxruntime only reads external data from the model file's own folder (links are resolved and
  // refused), so the rewritten graph is written beside the export, named by the source's identity.
  const stat = statSync(folder.onnxPath);
  const id = createHash('sha256').update(`${REWRITE_VERSION}:${stat.size}:${stat.mtimeMs}`).digest('hex').slice(0, 12);
  const target = folder.onnxPath.replace(/\.onnx$/, `.assay-${id}.onnx`);
  if (!existsSync(target)) {
    const partial = `${target}.${process.pid}.tmp`;
    try {
      writeFileSync(partial, rewritten.bytes);
      renameSync(partial, target);
    } catch {
      return folder.onnxPath; // a read-only model folder: run the export as is
    }
  }
  return target;
}
