// Deterministic random weights: every tensor gets its own stream from the seed and its name.
import { mulberry32 } from '../../common/index.js';

/** FNV-1a hash of a string, mixed with the seed: every tensor gets its own stream. */
export function streamSeed(seed: number, name: string): number {
  let h = 0x811c9dc5 ^ seed;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/**
 * Fills `out` with a symmetric triangular distribution (sum of two uniforms: "normal-ish") of the
 * given mean and standard deviation, from a mulberry32 stream. One 32-bit draw per value.
 */
export function fillRandom(out: Float32Array, seed: number, name: string, std: number, mean = 0): Float32Array {
  const next = mulberry32(streamSeed(seed, name));
  // Triangular on (-1, 1) has std 1/sqrt(6).
  const k = (std * Math.sqrt(6)) / 65536;
  const n = out.length;
  for (let i = 0; i < n; i++) {
    const t = next();
    out[i] = mean + ((t & 0xffff) + (t >>> 16) - 65535) * k;
  }
  return out;
}

/** Symmetric per-tensor int8 quantization, as onnxruntime's quantizer does for QInt8 weights. */
export function quantizeSymmetric(w: Float32Array): { q: Int8Array; scale: number } {
  let absmax = 0;
  for (let i = 0; i < w.length; i++) {
    const v = Math.abs(w[i]!);
    if (v > absmax) absmax = v;
  }
  const scale = Math.fround(absmax > 0 ? absmax / 127 : 1);
  const q = new Int8Array(w.length);
  const inv = 1 / scale;
  for (let i = 0; i < w.length; i++) {
    const r = Math.round(w[i]! * inv);
    q[i] = r > 127 ? 127 : r < -127 ? -127 : r;
  }
  return { q, scale };
}
