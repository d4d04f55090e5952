#!/usr/bin/env bash
# The numerics suite (vitest.numerics.config.ts) on an emulated AVX2 CPU without VNNI: QEMU user
# mode ("Haswell-noTSX") runs Node, worker threads included, and onnxruntime picks the kernels such
# a CPU gets (the same numbers as a real AVX2 EPYC). 10 to 70 times slower than native; timings mean
# nothing there. Only the cases whose numbers depend on those kernels run here (ASSAY_NUMERICS=kernels,
# test/numerics/scope.ts): at most 10 minutes, where the whole matrices took 44. CI runs it after
# `npm test`; needs qemu-user (Debian: apt-get install qemu-user).
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
  echo "test/numerics/avx2.sh: qemu-x86_64 is missing (apt-get install -y qemu-user)" >&2
  exit 3
fi
export ASSAY_EXPECT_CPU=avx2
export ASSAY_NUMERICS=kernels
# QEMU warns once per CPU feature its TCG lacks (pcid, x2apic, ...): harmless, filtered out.
exec qemu-x86_64 -cpu Haswell-noTSX "$(command -v node)" node_modules/vitest/vitest.mjs run --config vitest.numerics.config.ts "$@" \
  2> >(grep -v "TCG doesn't support requested feature" >&2)
