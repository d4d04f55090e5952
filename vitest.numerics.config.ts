import { defineConfig } from 'vitest/config';

// The numerics suite: quantized against fp32, prefix + suffix = whole pass, packed = one pass per
// question, cache hit = cold, on the tiny shapes. CI runs it natively (inside `npm test`) and again
// on an emulated AVX2 CPU (`npm run test:numerics:avx2`, QEMU user mode), where onnxruntime picks
// the kernels such a CPU gets. Worker threads, not forks: a forked child would run natively.
export default defineConfig({
  test: {
    include: [
      'test/numerics/**/*.test.ts',
      'test/tools/flavors.test.ts',
      'test/engine/flavors.test.ts',
      'test/engine/opset.test.ts',
    ],
    globalSetup: ['test/global-setup.ts'],
    pool: 'threads',
    fileParallelism: false,
    testTimeout: 600_000,
    hookTimeout: 900_000,
  },
});
