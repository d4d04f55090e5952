// Kev replicas on real trunks at a published base's size, for measuring (the bench's row-families
// section; development only, never packed): random seeded weights, written on demand into
// models/generated/trunks/kev-<trunk>-<size>/ (git-ignored), never committed. The same folder as the
// tiny replica (tools/trunks/replicas.ts: tokenizer, decision.json, calibration.json, model.onnx +
// model.onnx_data with BF16 weights and a Cast each) without probe.json; the weights are drawn
// tensor by tensor and written as drawn.
//   0.5b   Qwen2.5-0.5B's dimensions (hidden 896, 24 layers, 14 heads / 2 KV of 64, SwiGLU 4,864)
//   0.8b   Qwen3.5-0.8B's (hidden 1,024, 24 layers 3 DeltaNet : 1 full, 8 heads / 2 KV of 256,
//          16 DeltaNet heads of 128, SwiGLU 3,584)
// on the attention-only trunk (qwen3) and the hybrid (qwen35); a size on the other trunk kind takes
// the same hidden size, layers and widths (tools/trunks/trunks.py `shape_of`).
//
//   npx tsx tools/trunks/sized.ts                       kev-qwen3-0.5b and kev-qwen35-0.8b
//   npx tsx tools/trunks/sized.ts qwen35:0.5b qwen3:0.8b  any trunk:size
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureTrunkReplicas, type TrunkKind, type TrunkReplica, type TrunkSize } from './replicas.js';

/** The bases' replicas the bench measures by default. */
export const SIZED_KEV: TrunkReplica[] = [
  { family: 'kev', trunk: 'qwen3', size: '0.5b' },
  { family: 'kev', trunk: 'qwen35', size: '0.8b' },
];

/** Whether this CPU runs AVX2 (OpenBLAS's Haswell kernel; Debian's torch otherwise picks a slow generic one on newer Xeons). */
function hasAvx2(): boolean {
  try {
    return /\bavx2\b/.test(readFileSync('/proc/cpuinfo', 'utf8'));
  } catch {
    return false;
  }
}

/** A folder's files and their sizes in bytes. */
export function folderSizes(dir: string): Record<string, number> {
  return Object.fromEntries(readdirSync(dir).map((f) => [f, statSync(join(dir, f)).size]));
}

/**
 * The sized Kev replicas' folders, written where missing, one at a time (a base's export holds its
 * float32 module, ~3 GB at 0.8B, while tracing).
 */
export async function ensureSizedKev(
  replicas: readonly TrunkReplica[] = SIZED_KEV,
  log?: (line: string) => void,
): Promise<string[]> {
  const env = { ...process.env };
  if (!env.OPENBLAS_CORETYPE && hasAvx2()) env.OPENBLAS_CORETYPE = 'Haswell';
  return ensureTrunkReplicas(replicas, { env, log, processes: 1 });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const picked = process.argv.slice(2).map((a): TrunkReplica => {
    const [trunk, size] = a.split(':') as [TrunkKind, TrunkSize];
    return { family: 'kev', trunk, size };
  });
  for (const r of picked.length ? picked : SIZED_KEV) {
    const started = Date.now();
    const [dir] = await ensureSizedKev([r], console.error);
    const sizes = folderSizes(dir!);
    const stamp = JSON.parse(readFileSync(join(dir!, 'assay.json'), 'utf8')) as { export_seconds?: number };
    const config = JSON.parse(readFileSync(join(dir!, 'config.json'), 'utf8')) as { parameters: number };
    console.log(
      `${dir}: ${(config.parameters / 1e6).toFixed(0)} M parameters, model.onnx ${(sizes['model.onnx']! / 2 ** 20).toFixed(1)} MiB, ` +
        `model.onnx_data ${(sizes['model.onnx_data']! / 2 ** 30).toFixed(2)} GiB; ${((Date.now() - started) / 1000).toFixed(0)} s here ` +
        `(export.py ${stamp.export_seconds} s)`,
    );
  }
}
