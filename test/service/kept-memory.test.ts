// A model loaded after another was unloaded: the freed memory the allocator kept shows as little RSS
// growth, and the model's size must still count it, or the budget admits more than fits (the churn
// test's peak RSS went 170 MiB past budget + allowance when a 310 MiB model read 43 MiB).
import { describe, expect, it } from 'vitest';
import { KeptMemory } from '../../src/service/model-size.js';

const MiB = 2 ** 20;

describe('memory an unload freed and the allocator kept', () => {
  it('is counted in the next load that grew RSS by less than it', () => {
    const k = new KeptMemory();
    k.unloaded(310 * MiB, 1000 * MiB);
    k.loading(990 * MiB); // RSS fell by only 10 MiB: 300 kept
    expect(k.loaded(43 * MiB, undefined)).toBe(343 * MiB);
  });

  it('is not counted where RSS fell by what the unload freed (returned to the system)', () => {
    const k = new KeptMemory();
    k.unloaded(310 * MiB, 1000 * MiB);
    k.loading(690 * MiB);
    expect(k.loaded(305 * MiB, undefined)).toBe(305 * MiB);
  });

  it('is taken up to the most the folder measured before, the rest left for the next load', () => {
    const k = new KeptMemory();
    k.unloaded(300 * MiB, 1000 * MiB);
    k.unloaded(300 * MiB, 980 * MiB);
    k.loading(1000 * MiB);
    expect(k.loaded(40 * MiB, 310 * MiB)).toBe(310 * MiB);
    k.loading(1040 * MiB);
    expect(k.loaded(10 * MiB, undefined)).toBe(340 * MiB);
  });
});
