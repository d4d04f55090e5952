// llama.cpp as a peer, through npm node-llama-cpp and its prebuilt CPU package, installed on
// demand into a cache folder outside the project (never a project dependency: its default install
// pulls ~640 MB of GPU builds). Nothing is downloaded at run time.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeQwenGguf } from '../../tools/gguf/qwen2.js';

export const PEER_VERSION = '3.22.1';
export const PEER_DIR = process.env.ASSAY_PEERS_DIR
  ? join(process.env.ASSAY_PEERS_DIR, 'node-llama-cpp')
  : join(homedir(), '.cache', 'assay', 'peers', 'node-llama-cpp');

/** The few node-llama-cpp calls used here (the package is not a dependency, so no types). */
export interface NodeLlamaCpp {
  getLlama(options: object): Promise<{
    loadModel(options: { modelPath: string }): Promise<{
      createContext(options: object): Promise<{ getSequence(): LlamaSequence; dispose(): Promise<void> }>;
      dispose(): Promise<void>;
    }>;
    dispose(): Promise<void>;
  }>;
}

export interface LlamaSequence {
  controlledEvaluate(
    input: Array<number | [number, object]>,
  ): Promise<Array<{ next?: { logits?: Map<number, number> } } | undefined>>;
}

/** node-llama-cpp, installing it into PEER_DIR first if needed; why not (a string) when it cannot be had. */
export async function loadNodeLlamaCpp(log: (line: string) => void): Promise<NodeLlamaCpp | string> {
  const entry = join(PEER_DIR, 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
  if (!existsSync(entry)) {
    log(`installing node-llama-cpp@${PEER_VERSION} (CPU build only) into ${PEER_DIR}`);
    try {
      mkdirSync(PEER_DIR, { recursive: true });
      writeFileSync(join(PEER_DIR, 'package.json'), '{"name":"assay-peer-llamacpp","private":true}\n');
      execFileSync(
        'npm',
        [
          'install',
          '--omit=optional',
          '--no-save',
          '--no-package-lock',
          '--no-audit',
          '--no-fund',
          '--prefix',
          PEER_DIR,
          `node-llama-cpp@${PEER_VERSION}`,
          `@node-llama-cpp/linux-x64@${PEER_VERSION}`,
        ],
        { cwd: PEER_DIR, stdio: ['ignore', 'ignore', 'pipe'] },
      );
    } catch (error) {
      return `node-llama-cpp could not be installed (${(error as Error).message.split('\n')[0]})`;
    }
  }
  try {
    return (await import(pathToFileURL(entry).href)) as NodeLlamaCpp;
  } catch (error) {
    return `node-llama-cpp in ${PEER_DIR} could not be loaded (${(error as Error).message.split('\n')[0]}); delete that folder to reinstall`;
  }
}

/** The GGUF of an fp32 synthetic folder's weights, written once (reused while newer than the ONNX weights). */
export function ggufOf(dir: string, type: 'F32' | 'Q8_0' | 'Q4_0', log: (line: string) => void): string {
  const out = join(dir, `assay-${type.toLowerCase()}.gguf`);
  const onnx = join(dir, 'onnx', 'model.onnx');
  if (existsSync(out) && statSync(out).mtimeMs >= statSync(onnx).mtimeMs) return out;
  log(`  writing ${out}`);
  return writeQwenGguf(dir, type);
}
