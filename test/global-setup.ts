// Generates the synthetic models the suite runs on (once; later runs reuse the folders), and gives
// the run a graph cache of its own (load-time rewrites; src/engine/model/graph-file.ts), emptied at the
// start: tests load many temporary copies of models, each a rewrite of its own, which must not
// pile up in the user's ~/.cache.
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureSynthModel } from '../src/model-files/synth/ensure.js';

export default async function setup(): Promise<void> {
  const cache = join(tmpdir(), 'assay-test-cache');
  rmSync(cache, { recursive: true, force: true });
  process.env.XDG_CACHE_HOME = cache;
  await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  await ensureSynthModel({ shape: 'tiny', dtype: 'int8' });
  await ensureSynthModel({ shape: 'tiny', dtype: 'fp32', positionIds: false });
}
