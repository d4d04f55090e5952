// Which int8 and 4-bit kernels onnxruntime runs on this CPU, and the session setting that keeps
// int8 exact everywhere.
//
// onnxruntime's default int8 GEMM multiplies uint8 activations by int8 weights (U8S8). On x86
// CPUs without VNNI (AVX2, AVX-512 without VNNI) it sums pairs of products into int16 with
// `vpmaddubsw`, which saturates: 255 × 127 × 2 = 64,770 is clamped to 32,767 (onnxruntime issues
// #5849, #6004, #14642). With VNNI or AMX the sums are 32-bit and exact. The session config
// `session.x64quantprecision = 1` makes onnxruntime rewrite int8 weights to uint8 at load (its
// Avx2WeightS8ToU8Transformer, a graph-optimization level 2 pass) so the exact U8U8 kernel runs.
//
// The CPU's flags (/proc/cpuinfo) name the CPU; what onnxruntime really does is measured by a probe:
// a one-node graph whose exact product saturates a 16-bit pair sum, run with the model's settings.
// The probe is the truth where flags mislead (a hypervisor or an emulator that hides features).
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import onnxProto from 'onnx-proto';
import * as ort from 'onnxruntime-node';
import { DataType } from '../../common/index.js';

const onnx = onnxProto.onnx;

/** The session config entry that makes onnxruntime's int8 GEMM exact on x86 CPUs without VNNI. */
export const EXACT_INT8_CONFIG = { session: { x64quantprecision: '1' } } as const;

/** Flags that decide onnxruntime's int8 and 4-bit kernels on x86-64, widest last. */
const KERNEL_FLAGS = ['sse4_1', 'avx2', 'avx512f', 'avx512bw', 'avx_vnni', 'avx512_vnni', 'amx_int8'] as const;

export interface CpuFacts {
  /** The CPU's name as the OS reports it ("AMD EPYC 7763 64-Core Processor"). */
  model: string;
  cores: number;
  /** The kernel-relevant flags the OS reports (subset of KERNEL_FLAGS). */
  flags: string[];
}

let facts: CpuFacts | undefined;

/** The CPU's name and kernel-relevant flags, read once (Linux /proc/cpuinfo; elsewhere the name only). */
export function cpuFacts(): CpuFacts {
  if (facts) return facts;
  let text = '';
  try {
    text = readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    // Not Linux: no flags; the probe still tells the int8 path.
  }
  const flagLine = /^flags\s*:\s*(.*)$/m.exec(text)?.[1] ?? '';
  const present = new Set(flagLine.split(/\s+/));
  const model = /^model name\s*:\s*(.*)$/m.exec(text)?.[1]?.trim() ?? cpus()[0]?.model ?? 'unknown';
  facts = { model, cores: cpus().length, flags: KERNEL_FLAGS.filter((f) => present.has(f)) };
  return facts;
}

/** What the probe measured: whether the int8 GEMM saturates by default, and with the exact setting. */
export interface Int8Probe {
  saturates: boolean;
  saturatesExact: boolean;
}

const PROBE_M = 4;
const PROBE_K = 64;
const PROBE_N = 8;
/** Every product is 255 × 127: exact sum K × 32,385; a saturating pair sum gives K / 2 × 32,767. */
const PROBE_EXACT = PROBE_K * 255 * 127;

/** MatMulInteger(A: uint8 [M, K], B: int8 constant 127 [K, N]) → int32: the kernel DynamicQuantizeMatMul uses. */
function probeGraph(): Uint8Array {
  const b = new Int8Array(PROBE_K * PROBE_N).fill(127);
  const model = onnx.ModelProto.create({
    irVersion: 8,
    opsetImport: [{ domain: '', version: 17 }],
    graph: {
      name: 'assay-int8-probe',
      node: [{ opType: 'MatMulInteger', input: ['a', 'b'], output: ['y'], name: 'probe' }],
      initializer: [
        { name: 'b', dataType: DataType.INT8, dims: [PROBE_K, PROBE_N], rawData: new Uint8Array(b.buffer) },
      ],
      input: [
        {
          name: 'a',
          type: {
            tensorType: { elemType: DataType.UINT8, shape: { dim: [{ dimValue: PROBE_M }, { dimValue: PROBE_K }] } },
          },
        },
      ],
      output: [
        {
          name: 'y',
          type: {
            tensorType: { elemType: DataType.INT32, shape: { dim: [{ dimValue: PROBE_M }, { dimValue: PROBE_N }] } },
          },
        },
      ],
    },
  });
  return onnx.ModelProto.encode(model).finish();
}

async function probeOnce(bytes: Uint8Array, options: ort.InferenceSession.SessionOptions): Promise<boolean> {
  const session = await ort.InferenceSession.create(bytes, {
    ...options,
    executionProviders: ['cpu'],
    logSeverityLevel: 3,
  });
  try {
    const a = new ort.Tensor('uint8', new Uint8Array(PROBE_M * PROBE_K).fill(255), [PROBE_M, PROBE_K]);
    const y = (await session.run({ a })).y!.data as Int32Array;
    return y.some((v) => v !== PROBE_EXACT);
  } finally {
    await session.release();
  }
}

const probes = new Map<string, Promise<Int8Probe>>();

/**
 * Runs the probe once per process and graph-optimization level (the exact setting is a level-2
 * rewrite: at 'basic' or 'disabled' it does nothing). A few milliseconds.
 */
export function probeInt8(
  graphOptimization: ort.InferenceSession.SessionOptions['graphOptimizationLevel'] = 'all',
): Promise<Int8Probe> {
  const key = graphOptimization ?? 'all';
  let probe = probes.get(key);
  if (!probe) {
    const bytes = probeGraph();
    const options = { graphOptimizationLevel: key, intraOpNumThreads: 1 };
    probe = Promise.all([probeOnce(bytes, options), probeOnce(bytes, { ...options, extra: EXACT_INT8_CONFIG })]).then(
      ([saturates, saturatesExact]) => ({
        saturates,
        saturatesExact,
      }),
    );
    probes.set(key, probe);
  }
  return probe;
}

/** The kernels a model's sessions run, as the startup log, /metrics and bench headers name them. */
export interface KernelPaths {
  cpu: string;
  flags: string;
  /** e.g. "avx512-vnni (exact)", "u8u8 (exact, x64quantprecision)", "u8s8 (saturating)". */
  int8: string;
  /**
   * 4-bit exports (MatMulNBits): "int8 kernels via load-time conversion: …" with the int8 kernel
   * the converted weights run (q4-to-int8.ts: the int8 exports' own), or onnxruntime's native 4-bit kernel and the
   * widest SIMD the flags name.
   */
  q4: string;
  /** Whether int8 answers equal the exact integer arithmetic (the probe found no saturation). */
  int8Exact: boolean;
}

/** Names the paths from the CPU facts and the probe; `exactInt8` says whether sessions get the exact setting, `q4Kernels` how 4-bit exports run. */
export function kernelPaths(
  cpu: CpuFacts,
  probe: Int8Probe,
  exactInt8: boolean,
  q4Kernels: 'int8' | 'native' = 'int8',
): KernelPaths {
  const has = (f: string) => cpu.flags.includes(f);
  const saturating = exactInt8 ? probe.saturatesExact : probe.saturates;
  let int8: string;
  if (saturating) int8 = 'u8s8 (saturating: int8 answers drift; exact int8 is off)';
  else if (probe.saturates) int8 = 'u8u8 (exact, x64quantprecision)';
  else if (has('amx_int8')) int8 = 'amx (exact)';
  else if (has('avx512_vnni')) int8 = 'avx512-vnni (exact)';
  else if (has('avx_vnni')) int8 = 'avx-vnni (exact)';
  else int8 = 'u8u8 (exact)';
  // A CPU whose int8 GEMM saturates has no VNNI, whatever its flags claim (an emulator passes the host's through).
  const vnni = !probe.saturates;
  const simd =
    vnni && has('avx512_vnni')
      ? 'avx512-vnni'
      : vnni && has('avx_vnni')
        ? 'avx-vnni'
        : has('avx512bw')
          ? 'avx512'
          : has('avx2')
            ? 'avx2'
            : 'sse/generic';
  const q4 =
    q4Kernels === 'int8'
      ? `int8 kernels via load-time conversion: ${int8}`
      : `native MatMulNBits, ${simd} (accuracy_level 4: int8 dot products)`;
  return { cpu: cpu.model, flags: cpu.flags.join(' ') || 'none reported', int8, q4, int8Exact: !saturating };
}

/**
 * The session config (`extra`) for int8 on this CPU: the exact setting where the default kernel saturates
 * (never elsewhere: on a VNNI CPU it changes no answer and costs speed, 409 → 255 tok/s measured on
 * the 0.5B int8 shape), nothing where it does not or where the operator turned exact int8 off.
 */
export async function int8SessionConfig(
  exactInt8 = true,
  graphOptimization?: ort.InferenceSession.SessionOptions['graphOptimizationLevel'],
): Promise<Record<string, unknown>> {
  if (!exactInt8) return {};
  return (await probeInt8(graphOptimization)).saturates ? EXACT_INT8_CONFIG : {};
}

/** The kernel paths sessions made with these settings run (for the startup log, /metrics, bench headers). */
export async function cpuKernels(
  exactInt8 = true,
  graphOptimization?: ort.InferenceSession.SessionOptions['graphOptimizationLevel'],
  q4Kernels: 'int8' | 'native' = 'int8',
): Promise<KernelPaths> {
  return kernelPaths(cpuFacts(), await probeInt8(graphOptimization), exactInt8, q4Kernels);
}
