// What the family replicas' tests share: the Python that runs the numpy references, and what
// they read of an ONNX file without running it (the graph's inputs and outputs as
// `name:elemType[dims]`, symbolic dims by name; the external data files its initializers point
// to; the operator types it uses).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import onnxProto from 'onnx-proto';

/** Debian's Python, which runs the numpy references (tools/families/<family>/*_forward.py, tools/families/kit/). */
export const PYTHON = '/usr/bin/python3';

/** Whether PYTHON has numpy; when not, warns that `what` is skipped. */
export function hasNumpy(what: string): boolean {
  const ok = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import numpy']).status === 0;
  if (!ok)
    console.warn(
      `${PYTHON} has no numpy: ${what} is skipped (apt-get install -y --no-install-recommends python3-numpy)`,
    );
  return ok;
}

export interface GraphIo {
  inputs: string[];
  outputs: string[];
  external: string[];
}

function view(v: onnxProto.onnx.IValueInfoProto): string {
  const t = v.type!.tensorType!;
  return `${v.name}:${t.elemType}[${t.shape!.dim!.map((d) => d.dimParam || String(d.dimValue)).join(',')}]`;
}

/** The graph's I/O and external data files, and (separately) its operator types. */
export function graphIo(file: string): GraphIo & { ops: Set<string> } {
  const g = onnxProto.onnx.ModelProto.decode(readFileSync(file)).graph!;
  const external = g.initializer!.filter((t) => t.externalData?.length).map((t) => t.externalData![0]!.value!);
  return {
    inputs: g.input!.map(view),
    outputs: g.output!.map(view),
    external: [...new Set(external)],
    ops: new Set(g.node!.map((n) => n.opType!)),
  };
}
