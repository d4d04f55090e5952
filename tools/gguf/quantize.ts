// ggml's reference block quantizers (quantize_row_q8_0_ref, quantize_row_q4_0_ref): rows of 32-value
// blocks, each a float16 scale followed by its quantized values.
import { toHalf } from '../../src/internal.js';

export function toF32Bytes(x: Float32Array): Uint8Array {
  return new Uint8Array(x.buffer, x.byteOffset, x.byteLength);
}

/** Q8_0: d = max|x| / 127, q = round(x / d); 34 bytes per 32 values. */
export function quantizeQ8_0(x: Float32Array): Uint8Array {
  const out = new Uint8Array((x.length / 32) * 34);
  const view = new DataView(out.buffer);
  for (let b = 0; b < x.length / 32; b++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]!));
    const d = amax / 127;
    const id = d ? 1 / d : 0;
    view.setUint16(b * 34, toHalf(d), true);
    for (let j = 0; j < 32; j++) {
      const v = x[b * 32 + j]! * id;
      view.setInt8(b * 34 + 2 + j, Math.sign(v) * Math.round(Math.abs(v))); // roundf: half away from zero
    }
  }
  return out;
}

/** Q4_0: d = (the value of largest magnitude) / -8, q = min(15, trunc(x / d + 8.5)); 18 bytes per 32 values. */
export function quantizeQ4_0(x: Float32Array): Uint8Array {
  const out = new Uint8Array((x.length / 32) * 18);
  const view = new DataView(out.buffer);
  for (let b = 0; b < x.length / 32; b++) {
    let amax = 0;
    let max = 0;
    for (let j = 0; j < 32; j++) {
      const v = x[b * 32 + j]!;
      if (Math.abs(v) > amax) {
        amax = Math.abs(v);
        max = v;
      }
    }
    const d = max / -8;
    const id = d ? 1 / d : 0;
    view.setUint16(b * 18, toHalf(d), true);
    for (let j = 0; j < 16; j++) {
      const q0 = Math.min(15, Math.trunc(x[b * 32 + j]! * id + 8.5));
      const q1 = Math.min(15, Math.trunc(x[b * 32 + 16 + j]! * id + 8.5));
      out[b * 18 + 2 + j] = q0 | (q1 << 4);
    }
  }
  return out;
}
