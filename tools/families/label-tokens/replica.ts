// The label-tokens replicas (development only, never packed): the decider replica's causal LM
// (tools/families/decider/replica.ts: the tiny Qwen2-shaped decoder with seeded random weights, the
// Qwen3 tokenizer, onnx/model.onnx fp32 and onnx/model_quantized.onnx int8, weights.safetensors for
// the reference forward), each folder with one of the test contracts
// (test/families/label-tokens/contracts/<contract>.json) as its decision.json and calibration.json
// from contracts/calibration.json (none where that says null). The decider replica's files are
// hard-linked (copied where a link cannot be made). Written into
// models/generated/label-tokens-<contract>/ on demand (tests call ensureLabelTokensReplica).
//
//   npx tsx tools/families/label-tokens/replica.ts CONTRACT
import {
  copyFileSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { GENERATED_DIR } from '../../../src/internal.js';
import { ensureDeciderReplica } from '../decider/replica.js';
import { ROOT } from '../kit/goldens-kit.js';

export const LABEL_TOKENS_CONTRACTS = ['generic', 'cua', 'jevos', 'winnow', 'tev'] as const;
export type LabelTokensContract = (typeof LABEL_TOKENS_CONTRACTS)[number];
export const CONTRACTS_DIR = join(ROOT, 'test', 'families', 'label-tokens', 'contracts');

/** The replica folder of a contract. */
export function labelTokensReplicaDir(contract: LabelTokensContract): string {
  return join(GENERATED_DIR, `label-tokens-${contract}`);
}

/** calibration.json's temperatures of a contract's replica (null: no calibration.json). */
export function replicaTemperature(contract: LabelTokensContract): [number, number, number] | null {
  const all = JSON.parse(readFileSync(join(CONTRACTS_DIR, 'calibration.json'), 'utf8')) as Record<string, unknown>;
  return (all[contract] ?? null) as [number, number, number] | null;
}

/** `from`'s files under `to`, hard-linked (or copied), except the decider's own contract files. */
function linkTree(from: string, to: string): void {
  mkdirSync(to, { recursive: true });
  for (const name of readdirSync(from)) {
    if (name === 'decision.json' || name === 'calibration.json') continue;
    const src = join(from, name);
    const dst = join(to, name);
    if (statSync(src).isDirectory()) linkTree(src, dst);
    else if (!existsSync(dst)) {
      try {
        linkSync(src, dst);
      } catch {
        copyFileSync(src, dst);
      }
    }
  }
}

/** The replica folder of a contract (generated when missing; its contract files rewritten every time). */
export async function ensureLabelTokensReplica(contract: LabelTokensContract): Promise<string> {
  const decider = await ensureDeciderReplica();
  const dir = labelTokensReplicaDir(contract);
  linkTree(decider, dir);
  const decision = readFileSync(join(CONTRACTS_DIR, `${contract}.json`), 'utf8');
  if (!existsSync(join(dir, 'decision.json')) || readFileSync(join(dir, 'decision.json'), 'utf8') !== decision)
    writeFileSync(join(dir, 'decision.json'), decision);
  const t = replicaTemperature(contract);
  const calibration = join(dir, 'calibration.json');
  const text = t ? `${JSON.stringify({ temperature: t })}\n` : undefined;
  if (text === undefined) rmSync(calibration, { force: true });
  else if (!existsSync(calibration) || readFileSync(calibration, 'utf8') !== text) writeFileSync(calibration, text);
  return dir;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  console.log(await ensureLabelTokensReplica((process.argv[2] ?? 'generic') as LabelTokensContract));
