// Generates the synthetic models the suite runs on (once; later runs reuse the folders).
import { ensureSynthModel } from '../src/tools/synth/ensure.js';

export default async function setup(): Promise<void> {
  await ensureSynthModel({ shape: 'tiny', dtype: 'fp32' });
  await ensureSynthModel({ shape: 'tiny', dtype: 'int8' });
  await ensureSynthModel({ shape: 'tiny', dtype: 'fp32', positionIds: false });
}
