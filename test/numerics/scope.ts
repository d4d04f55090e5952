// What the numerics suite runs. Natively (inside `npm test`) it runs every case. The emulated AVX2
// run (test/numerics/avx2.sh, ASSAY_NUMERICS=kernels) runs only the cases whose numbers depend on
// the int8 and 4-bit kernels onnxruntime picks from CPUID (MatMulInteger, MatMulNBits with int8 or
// fp32 arithmetic), each on the smallest fixture that shows it: fp32 and fp16 graphs, layouts and
// templates compute the same there, and QEMU costs 10 to 70 times native, so the whole matrices
// stay in the native run. Mark such a case `kernels: true`; docs/cpu.md says why the CPU matters.
export const kernelsOnly = process.env.ASSAY_NUMERICS === 'kernels';

/** The cases this run takes: all of them, or in the emulated run those marked `kernels`. */
export function inScope<T extends { kernels?: boolean }>(cases: readonly T[]): T[] {
  return cases.filter((c) => !kernelsOnly || c.kernels === true);
}
