// The shared helpers (src/common): the seeded generator gives the numbers it always gave (splits,
// resamples and synthetic weights depend on them), HTML escaping covers every character that can
// end a text node or a quoted attribute, and the ONNX enums carry onnx.proto's numbers.
import { describe, expect, it } from 'vitest';
import { AttributeType, DataType, escapeHtml, mulberry32, seededRandom } from '../../src/common/index.js';
import { fillRandom } from '../../src/model-files/synth/random.js';

describe('seededRandom (mulberry32)', () => {
  it("gives mulberry32's reference sequence, the same for the same seed", () => {
    const r = seededRandom(1);
    expect([r(), r(), r()]).toEqual([0.6270739405881613, 0.002735721180215478, 0.5274470399599522]);
    const a = seededRandom(7);
    const b = seededRandom(7);
    expect([a(), a()]).toEqual([b(), b()]);
    expect(mulberry32(1)()).toBe(0.6270739405881613 * 2 ** 32);
  });

  it('synthetic weights are the ones earlier releases wrote (their streams run on it)', () => {
    expect(Array.from(fillRandom(new Float32Array(4), 42, 'layer.0.q', 0.02))).toEqual([
      0.030457904562354088, -0.021624401211738586, 0.018171584233641624, -0.0015772776678204536,
    ]);
    expect(Array.from(fillRandom(new Float32Array(3), -5, 'x', 1, 0.5))).toEqual([
      0.8275654315948486, 0.3236962556838989, 1.0131758451461792,
    ]);
  });
});

describe('escapeHtml', () => {
  it('writes & < > " and \' as entities, and nothing else', () => {
    expect(escapeHtml(`<a title="x">Tom & 'Jerry'</a> é ✓`)).toBe(
      '&lt;a title=&quot;x&quot;&gt;Tom &amp; &#39;Jerry&#39;&lt;/a&gt; é ✓',
    );
  });
});

describe('ONNX enums', () => {
  it("carry onnx.proto's numbers", () => {
    expect([DataType.FLOAT, DataType.UINT8, DataType.INT8, DataType.INT32, DataType.INT64, DataType.FLOAT16]).toEqual([
      1, 2, 3, 6, 7, 10,
    ]);
    expect([AttributeType.FLOAT, AttributeType.INT, AttributeType.INTS]).toEqual([1, 2, 7]);
  });
});
