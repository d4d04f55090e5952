// The int8 path this CPU gets, seen through onnxruntime itself: the probe's MatMulInteger saturates a
// 16-bit pair sum where the CPU lacks VNNI, and the exact setting (the default) must remove that.
// CI runs this suite natively and again on an emulated AVX2 CPU with ASSAY_EXPECT_CPU=avx2 (test/numerics/avx2.sh), so the
// emulated run proves it really ran the saturating kernels (the emulator passes the host's
// /proc/cpuinfo through: only the probe tells).
import { describe, expect, it } from 'vitest';
import { cpuFacts, cpuKernels, probeInt8 } from '../../src/engine/model/cpu.js';

const expected = process.env.ASSAY_EXPECT_CPU;

describe('the int8 kernel path', () => {
  it('is exact with the default settings, on whatever CPU runs this', async () => {
    const kernels = await cpuKernels();
    expect(kernels.int8Exact, JSON.stringify(kernels)).toBe(true);
    expect(kernels.int8).toMatch(/\(exact/);
    expect(kernels.cpu).toBe(cpuFacts().model);
  });

  it('names the saturating kernel when exact int8 is turned off on a CPU whose kernel saturates', async () => {
    const probe = await probeInt8();
    const fast = await cpuKernels(false);
    expect(fast.int8Exact).toBe(!probe.saturates);
    if (probe.saturates) expect(fast.int8).toMatch(/^u8s8 \(saturating/);
  });

  it.runIf(expected === 'avx2')(
    'on the emulated AVX2 CPU: the default kernel saturates and the exact setting fixes it',
    async () => {
      expect(await probeInt8()).toEqual({ saturates: true, saturatesExact: false });
      expect((await cpuKernels()).int8).toBe('u8u8 (exact, x64quantprecision)');
    },
  );

  it.runIf(expected !== 'avx2')('on a CPU whose flags name VNNI or AMX: no saturation, no setting needed', async () => {
    const flags = cpuFacts().flags;
    if (!flags.some((f) => ['avx512_vnni', 'avx_vnni', 'amx_int8'].includes(f))) return;
    expect((await probeInt8()).saturates).toBe(false);
  });
});
