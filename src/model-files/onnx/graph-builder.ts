// A small ONNX graph builder on top of the `onnx-proto` protobuf bindings.
//
// It writes models the way the PyTorch/Optimum exporter does: named initializers (inline raw_data,
// or in an external `*.onnx_data` file with location/offset/length for models past protobuf's 2 GB
// limit), nodes, typed graph inputs/outputs with symbolic dim names, and opset imports for the
// default domain and com.microsoft.
import { closeSync, openSync, writeSync, writeFileSync } from 'node:fs';
import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';
import { AttributeType, DataType } from '../../common/index.js';

const onnx = onnxProto.onnx;

/** The element types the builder's tensors and values take (onnx-proto's TensorProto.DataType). */
export { DataType };

/** An attribute value, tagged by its ONNX kind. */
export type Attr =
  | { i: number }
  | { f: number }
  | { s: string }
  | { ints: number[] }
  | { floats: number[] }
  | { t: OnnxTypes.ITensorProto };

/** A dimension: a fixed size or a symbolic name such as "batch_size". */
export type Dim = number | string;

export interface NodeOptions {
  /** Number of outputs (default 1) or their explicit names. */
  outputs?: number | string[];
  attrs?: Record<string, Attr>;
  domain?: string;
  name?: string;
}

export interface ExternalDataOptions {
  /** Path of the data file to write (e.g. `<dir>/onnx/model.onnx_data`). */
  path: string;
  /** Location recorded in the model, relative to the model file (e.g. `model.onnx_data`). */
  location: string;
  /** Tensors of at least this many bytes go to the data file; smaller ones stay inline. Default 1024. */
  minBytes?: number;
  /** Offsets are aligned to this many bytes (as onnx's save_model does). Default 4096. */
  align?: number;
}

type Bytes = Uint8Array | Float32Array | Int8Array | Int32Array | BigInt64Array;

function asBytes(data: Bytes): Uint8Array {
  return data instanceof Uint8Array && data.constructor === Uint8Array
    ? data
    : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

function attrProto(name: string, a: Attr): OnnxTypes.IAttributeProto {
  const T = AttributeType;
  if ('i' in a) return { name, type: T.INT, i: a.i };
  if ('f' in a) return { name, type: T.FLOAT, f: a.f };
  if ('s' in a) return { name, type: T.STRING, s: new TextEncoder().encode(a.s) };
  if ('ints' in a) return { name, type: T.INTS, ints: a.ints };
  if ('floats' in a) return { name, type: T.FLOATS, floats: a.floats };
  return { name, type: T.TENSOR, t: a.t };
}

function valueInfo(name: string, elemType: DataType, dims: Dim[]): OnnxTypes.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === 'number' ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

export class GraphBuilder {
  readonly nodes: OnnxTypes.INodeProto[] = [];
  readonly initializers: OnnxTypes.ITensorProto[] = [];
  readonly inputs: OnnxTypes.IValueInfoProto[] = [];
  readonly outputs: OnnxTypes.IValueInfoProto[] = [];
  readonly valueInfos: OnnxTypes.IValueInfoProto[] = [];
  /** Bytes of tensor data held by initializers (inline and external). */
  weightBytes = 0;
  private counter = 0;
  private readonly constCache = new Map<string, string>();
  private extFd: number | null = null;
  private extOffset = 0;

  constructor(
    readonly name: string,
    private readonly external?: ExternalDataOptions,
  ) {
    if (external) this.extFd = openSync(external.path, 'w');
  }

  /** A fresh, unique tensor name with the given prefix. */
  fresh(prefix: string): string {
    return `${prefix}_${this.counter++}`;
  }

  /** Adds an initializer; large ones go straight to the external data file when one is configured. */
  initializer(name: string, dataType: DataType, dims: number[], data: Bytes): string {
    const bytes = asBytes(data);
    this.weightBytes += bytes.byteLength;
    const ext = this.external;
    if (ext && this.extFd !== null && bytes.byteLength >= (ext.minBytes ?? 1024)) {
      const align = ext.align ?? 4096;
      const offset = Math.ceil(this.extOffset / align) * align;
      let pos = offset;
      let done = 0;
      while (done < bytes.byteLength) {
        // Write in chunks: writeSync caps single writes at ~2 GB.
        const n = writeSync(this.extFd, bytes, done, Math.min(bytes.byteLength - done, 1 << 30), pos);
        done += n;
        pos += n;
      }
      this.extOffset = offset + bytes.byteLength;
      this.initializers.push({
        name,
        dataType,
        dims,
        dataLocation: onnx.TensorProto.DataLocation.EXTERNAL,
        externalData: [
          { key: 'location', value: ext.location },
          { key: 'offset', value: String(offset) },
          { key: 'length', value: String(bytes.byteLength) },
        ],
      });
    } else {
      // Copy: callers may reuse their scratch buffers.
      this.initializers.push({ name, dataType, dims, rawData: bytes.slice() });
    }
    return name;
  }

  /** A small int64 constant (cached by value), as an initializer. */
  constI64(values: number[], dims: number[] = [values.length]): string {
    return this.cachedConst('i64', DataType.INT64, dims, values, () => BigInt64Array.from(values, (v) => BigInt(v)));
  }

  /** A small float32 constant (cached by value), as an initializer. */
  constF32(values: number[], dims: number[] = [values.length]): string {
    return this.cachedConst('f32', DataType.FLOAT, dims, values, () => Float32Array.from(values));
  }

  private cachedConst(kind: string, dataType: DataType, dims: number[], values: number[], make: () => Bytes): string {
    const key = `${kind}:${dims.join('x')}:${values.join(',')}`;
    let name = this.constCache.get(key);
    if (!name) {
      name = this.initializer(this.fresh(`const_${kind}`), dataType, dims, make());
      this.constCache.set(key, name);
    }
    return name;
  }

  /** A float32 scalar constant (rank 0). */
  scalarF32(value: number): string {
    return this.constF32([value], []);
  }

  /** Adds a node; returns its output names. */
  node(opType: string, inputs: string[], opts: NodeOptions = {}): string[] {
    const outs =
      typeof opts.outputs === 'object'
        ? opts.outputs
        : Array.from({ length: opts.outputs ?? 1 }, () => this.fresh(opType));
    const name = opts.name ?? this.fresh(`/${opType}`);
    this.nodes.push({
      name,
      opType,
      input: inputs,
      output: outs,
      domain: opts.domain ?? '',
      attribute: Object.entries(opts.attrs ?? {}).map(([k, v]) => attrProto(k, v)),
    });
    return outs;
  }

  /** Adds a single-output node; returns its output name. */
  op(opType: string, inputs: string[], attrs?: Record<string, Attr>, opts: Omit<NodeOptions, 'attrs'> = {}): string {
    return this.node(opType, inputs, { ...opts, attrs })[0]!;
  }

  input(name: string, elemType: DataType, dims: Dim[]): string {
    this.inputs.push(valueInfo(name, elemType, dims));
    return name;
  }

  output(name: string, elemType: DataType, dims: Dim[]): string {
    this.outputs.push(valueInfo(name, elemType, dims));
    return name;
  }

  /** Records a value_info entry (type/shape annotation) for an intermediate tensor. */
  annotate(name: string, elemType: DataType, dims: Dim[]): void {
    this.valueInfos.push(valueInfo(name, elemType, dims));
  }

  /** Assembles the ModelProto. */
  toModel(meta: { opset: number; msOpset?: number; producer?: string; docString?: string }): OnnxTypes.IModelProto {
    return {
      irVersion: 8,
      producerName: meta.producer ?? 'assay-synth',
      producerVersion: '1',
      docString: meta.docString ?? '',
      opsetImport: [
        { domain: '', version: meta.opset },
        { domain: 'com.microsoft', version: meta.msOpset ?? 1 },
      ],
      graph: {
        name: this.name,
        node: this.nodes,
        initializer: this.initializers,
        input: this.inputs,
        output: this.outputs,
        valueInfo: this.valueInfos,
      },
    };
  }

  /** Encodes the model and writes it to `path` (closing the external data file, if any). */
  save(path: string, meta: Parameters<GraphBuilder['toModel']>[0]): { modelBytes: number; externalBytes: number } {
    const bytes = onnx.ModelProto.encode(this.toModel(meta)).finish();
    writeFileSync(path, bytes);
    if (this.extFd !== null) {
      closeSync(this.extFd);
      this.extFd = null;
    }
    return { modelBytes: bytes.byteLength, externalBytes: this.extOffset };
  }

  /** Closes the external data file without writing a model (on error). */
  abort(): void {
    if (this.extFd !== null) {
      closeSync(this.extFd);
      this.extFd = null;
    }
  }
}
