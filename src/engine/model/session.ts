// onnxruntime sessions as every model of the engine opens them (the decoder runner, the encoder
// families): the operator's threads, provider and optimization level, exact int8 on CPUs whose
// default kernel saturates (cpu.ts), and a load error that names the file and what to do.
import { readFile } from 'node:fs/promises';
import * as ort from 'onnxruntime-node';
import { ModelLoadError } from '../errors.js';
import type { ResolvedEngineConfig } from '../config.js';
import { int8SessionConfig } from './cpu.js';

export type SessionOptions = ort.InferenceSession.SessionOptions;

/** The options of the model's sessions, from its resolved config. */
export async function sessionOptions(c: ResolvedEngineConfig): Promise<SessionOptions> {
  const provider = c.provider;
  const graphOptimizationLevel = c.graphOptimization;
  // Exact int8 on CPUs whose default int8 kernel saturates (cpu.ts); int8 nodes run on the CPU
  // provider under CUDA too, so it applies there as well.
  const int8 = (await int8SessionConfig(c.exactInt8, graphOptimizationLevel)) as { session?: Record<string, string> };
  // onnxruntime's pool threads spin after a pass for the next one; between passes they would take
  // the cores the rest of the server needs (a request's planning, HTTP, the batch lane's work):
  // they stop when a pass returns, and spin again within the next (docs/engine.md, Threads).
  const extra = { ...int8, session: { ...int8.session, force_spinning_stop: '1' } };
  return {
    executionProviders: provider === 'cuda' ? ['cuda', 'cpu'] : ['cpu'],
    graphOptimizationLevel,
    extra,
    intraOpNumThreads: c.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    // With CUDA, warnings stay on: onnxruntime then logs each node it places on the CPU instead.
    logSeverityLevel: provider === 'cuda' ? 2 : 3,
  };
}

/**
 * Opens a session on an ONNX file. `externalDataDir`: the file's weights stay in another folder (a
 * rewritten graph whose weights are in the read-only export folder): it is read from its bytes and
 * onnxruntime is told where the weights are (it refuses external data outside the model file's folder).
 */
export async function openSession(
  path: string,
  options: SessionOptions,
  externalDataDir?: string,
): Promise<ort.InferenceSession> {
  const cuda = (options.executionProviders ?? []).includes('cuda');
  try {
    if (externalDataDir) {
      const extra = (options.extra ?? {}) as Record<string, unknown>;
      const session = {
        ...(extra.session as object | undefined),
        model_external_initializers_file_folder_path: externalDataDir,
      };
      return await ort.InferenceSession.create(await readFile(path), { ...options, extra: { ...extra, session } });
    }
    return await ort.InferenceSession.create(path, options);
  } catch (error) {
    const message = (error as Error).message;
    if (cuda && /cuda|provider/i.test(message)) {
      throw new ModelLoadError(
        `cannot start the CUDA execution provider (${message}). Install onnxruntime-node with its CUDA 12 binaries ` +
          ('(after npm ci: node node_modules/onnxruntime-node/script/install ' +
            '--onnxruntime-node-install=cuda12) on a machine with an NVIDIA driver, CUDA 12 and cuDNN ' +
            '9, or set the provider to cpu.'),
      );
    }
    throw new ModelLoadError(`${path}: onnxruntime cannot load it (${message})`);
  }
}
