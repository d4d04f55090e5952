// Writes an ONNX model with its large initializers in an external-data file beside it (the layout
// onnx.save(..., save_as_external_data=True) and onnxruntime-genai's builder produce).
import { closeSync, openSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';

const ALIGN = 4096;

export function writeExternal(model: OnnxTypes.ModelProto, dir: string, file: string, dataFile: string): void {
  const fd = openSync(join(dir, dataFile), 'w');
  try {
    let offset = 0;
    for (const t of model.graph?.initializer ?? []) {
      const raw = t.rawData;
      if (!raw || raw.byteLength < 1024) continue;
      const start = Math.ceil(offset / ALIGN) * ALIGN;
      writeSync(fd, raw, 0, raw.byteLength, start);
      offset = start + raw.byteLength;
      t.rawData = new Uint8Array(0);
      t.dataLocation = 1;
      t.externalData = [
        { key: 'location', value: dataFile },
        { key: 'offset', value: String(start) },
        { key: 'length', value: String(raw.byteLength) },
      ];
    }
  } finally {
    closeSync(fd);
  }
  writeFileSync(join(dir, file), onnxProto.onnx.ModelProto.encode(model).finish());
}
