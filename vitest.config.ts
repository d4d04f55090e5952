import { defineConfig } from 'vitest/config';

// Tests run the real engine on the tiny synthetic model. onnxruntime uses both cores per
// session, so test files run one at a time: parallel files would oversubscribe 2 cores.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // The JSON report lets .ci/run print a plain 'N passed, N failed' closing line; the last one
    // names the suites a machine without Chromium, nginx or the other CPU class skipped.
    reporters: ['default', ['json', { outputFile: '.test-results.json' }], './test/reporters/skipped.ts'],
  },
});
