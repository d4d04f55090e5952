// Tokenizer time on pathological runs, through the engine's TextCodec (any checkout: --repo DIR).
//   npx tsx bench/engine/tokenize-runs.ts [--repo DIR]
import { resolve } from 'node:path';
import { ensureSynthModel } from '../../src/internal.js';

const args = process.argv.slice(2);
const repo = resolve((args.includes('--repo') ? args[args.indexOf('--repo') + 1] : undefined) ?? '.');
const { TextCodec } = (await import(
  resolve(repo, 'src/engine/prompting/tokenizer.ts')
)) as typeof import('../../src/engine/prompting/tokenizer.js');
const codec = await TextCodec.load(await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' }));
const cases: Array<[string, string]> = [
  ['80,000 spaces', ' '.repeat(80_000)],
  ['300,000 spaces', ' '.repeat(300_000)],
  ['400,000 × "a"', 'a'.repeat(400_000)],
  ['8 MiB of "-"', '-'.repeat(8 * 2 ** 20)],
];
for (const [name, text] of cases) {
  const t0 = performance.now();
  const n = codec.encode(text).length;
  console.log(`${name}: ${((performance.now() - t0) / 1000).toFixed(2)} s, ${n} tokens`);
}
