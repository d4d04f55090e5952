// A GraphBuilder whose inline weights go to disk as they are added, for single-file models of
// hundreds of megabytes (the fp16 and int8 exports of real-sized encoders): GraphBuilder keeps
// every inline initializer in memory and encodes the whole model once more on save, two copies
// of the weights; this one holds none.
//
// Each large initializer is written at once to a spool file as a GraphProto `initializer` field
// (an encoded TensorProto whose raw_data is written straight from the caller's buffer). save()
// writes the model's other fields, then the graph as one length-delimited field: the graph's
// own fields (nodes, small initializers, inputs, outputs), then the spool copied in. Protobuf
// reads fields in any order and a repeated field's entries wherever they are, so onnxruntime and
// onnx-proto read it as the model GraphBuilder would have written.
import { closeSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import onnxProto from 'onnx-proto';
import { type DataType, GraphBuilder } from '../../../src/internal.js';

const onnx = onnxProto.onnx;

// Field keys (field number << 3 | 2, length-delimited) from onnx.proto.
/** ModelProto.graph = 7. */
const MODEL_GRAPH = (7 << 3) | 2;
/** GraphProto.initializer = 5. */
const GRAPH_INITIALIZER = (5 << 3) | 2;
/** TensorProto.raw_data = 9. */
const TENSOR_RAW_DATA = (9 << 3) | 2;
/** Protobuf messages (and so onnxruntime's model files without external data) stop at 2 GB. */
const PROTOBUF_LIMIT = 2 ** 31 - 1;

/** A key followed by a varint length (lengths here stay below 2^31 but are not bit-twiddled). */
function keyAndLength(key: number, length: number): Uint8Array {
  const out = [key];
  let n = length;
  while (n >= 0x80) {
    out.push((n % 0x80) | 0x80);
    n = Math.floor(n / 0x80);
  }
  out.push(n);
  return Uint8Array.from(out);
}

/** Writes all of `bytes` at the file's position (writeSync writes at most ~2 GB at a time). */
export function writeAll(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.byteLength) done += writeSync(fd, bytes, done, Math.min(bytes.byteLength - done, 1 << 30));
}

type Bytes = Parameters<GraphBuilder['initializer']>[3];

function asBytes(data: Bytes): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

export class SpoolGraph extends GraphBuilder {
  private fd: number | null;
  private spooled = 0;

  /** `spool`: the scratch file (removed by save and abort); initializers under `minBytes` stay in memory. */
  constructor(
    name: string,
    private readonly spool: string,
    private readonly minBytes = 1024,
  ) {
    super(name);
    this.fd = openSync(spool, 'w');
  }

  override initializer(name: string, dataType: DataType, dims: number[], data: Bytes): string {
    const bytes = asBytes(data);
    if (bytes.byteLength < this.minBytes || this.fd === null) return super.initializer(name, dataType, dims, data);
    this.weightBytes += bytes.byteLength;
    const head = onnx.TensorProto.encode({ name, dataType, dims }).finish();
    const raw = keyAndLength(TENSOR_RAW_DATA, bytes.byteLength);
    const tensor = head.byteLength + raw.byteLength + bytes.byteLength;
    const open = keyAndLength(GRAPH_INITIALIZER, tensor);
    for (const part of [open, head, raw, bytes]) writeAll(this.fd, part);
    this.spooled += open.byteLength + tensor;
    if (this.spooled > PROTOBUF_LIMIT) throw new Error(`${name}: the graph passes protobuf's 2 GB: use external data`);
    return name;
  }

  override save(
    path: string,
    meta: Parameters<GraphBuilder['toModel']>[0],
  ): { modelBytes: number; externalBytes: number } {
    if (this.fd === null) throw new Error('SpoolGraph: saved twice');
    closeSync(this.fd);
    this.fd = null;
    const { graph, ...rest } = this.toModel(meta);
    const model = onnx.ModelProto.encode(rest).finish();
    const own = onnx.GraphProto.encode(graph!).finish();
    const length = own.byteLength + this.spooled;
    if (length > PROTOBUF_LIMIT) throw new Error(`the graph passes protobuf's 2 GB: use external data`);
    const open = keyAndLength(MODEL_GRAPH, length);
    const out = openSync(path, 'w');
    const spool = openSync(this.spool, 'r');
    try {
      for (const part of [model, open, own]) writeAll(out, part);
      const buf = Buffer.allocUnsafe(1 << 24);
      for (let n; (n = readSync(spool, buf, 0, buf.byteLength, null)) > 0;) writeAll(out, buf.subarray(0, n));
    } finally {
      closeSync(spool);
      closeSync(out);
      rmSync(this.spool, { force: true });
    }
    return { modelBytes: model.byteLength + open.byteLength + length, externalBytes: 0 };
  }

  override abort(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
    rmSync(this.spool, { force: true });
  }
}
