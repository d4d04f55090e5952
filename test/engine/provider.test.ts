// The CUDA execution provider path on a machine without it: onnxruntime-node here is installed
// with --onnxruntime-node-install=skip, so libonnxruntime_providers_cuda.so is absent. Asking for
// CUDA must fail at load time with a ModelLoadError that says what to install, not crash later
// inside a request, and must not quietly run on the CPU instead.
import { describe, expect, it } from 'vitest';
import { ensureSynthModel } from '../../src/model-files/synth/ensure.js';
import { loadEvaluator, ModelLoadError } from '../../src/engine/index.js';

describe('provider: cuda without the CUDA provider library', () => {
  it('rejects at load with a ModelLoadError that names CUDA and the install flag', async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'int8' });
    const err = await loadEvaluator({ modelDir, provider: 'cuda' }).then(
      async (ev) => {
        await ev.close();
        return undefined;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ModelLoadError);
    expect((err as Error).message).toMatch(/CUDA/);
    expect((err as Error).message).toContain('--onnxruntime-node-install=cuda12');
  });

  it('the same folder loads and answers on the CPU provider (the failure above is the provider, not the model)', async () => {
    const modelDir = await ensureSynthModel({ shape: 'tiny', dtype: 'int8' });
    const ev = await loadEvaluator({ modelDir, provider: 'cpu' });
    try {
      const res = await ev.evaluate({
        state: 'The sky is blue.',
        questions: { q: { type: 'noul', instructions: 'Is the sky blue?' } },
      });
      expect(res.answers.q!.type).toBe('noul');
    } finally {
      await ev.close();
    }
  });
});
