// The decider-labels replica (development only, never packed): an ordinary causal-LM export, as a
// decider folder is (docs/families/decider-labels.md): the project's tiny Qwen2-shaped decoder
// (models/shapes.json `tiny`, the Qwen3 tokenizer) with the trained tiny-tasks weights
// (models/trained/tiny-tasks.safetensors, whose independent torch forward is tools/train/train.py),
// written by the synthetic model generator, plus the family's files: decision.json (layout
// decider-labels-v1, no label table: computed from the tokenizer) and calibration.json (the
// [T, 1, T] format, T = 1.03 as decider-0.8b ships). Written into models/generated/decider-replica/
// on demand (tests call ensureDeciderReplica).
//
//   npx tsx tools/families/decider-replica.ts [DIR]
import { existsSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureSynthModel, GENERATED_DIR } from '../../src/internal.js';
import { ROOT } from './goldens-kit.js';

export const DECIDER_REPLICA_DIR = join(GENERATED_DIR, 'decider-replica');
export const DECIDER_WEIGHTS = join(ROOT, 'models', 'trained', 'tiny-tasks.safetensors');
/** calibration.json's temperature: [t_choice, t_score, t_noul]. */
export const DECIDER_TEMPERATURE = [1.03, 1, 1.03] as const;

/** The replica folder (generated when missing or stale). */
export async function ensureDeciderReplica(dir = DECIDER_REPLICA_DIR): Promise<string> {
  const out = await ensureSynthModel({ shape: 'tiny', dtype: 'fp32', weights: DECIDER_WEIGHTS, out: dir });
  const decision = join(out, 'decision.json');
  if (!existsSync(decision)) {
    writeFileSync(join(out, 'calibration.json'), `${JSON.stringify({ temperature: DECIDER_TEMPERATURE })}\n`);
    writeFileSync(decision, `${JSON.stringify({ layout: 'decider-labels-v1' }, null, 2)}\n`);
  }
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href)
  console.log(await ensureDeciderReplica(process.argv[2] ? resolve(process.argv[2]) : undefined));
