// Which family a model folder is (src/engine/families/detect.ts): declared by the registry or by a
// decision.json layout id, else what its files show; a folder that matches no family is refused
// naming what each family needs, through the loader too (a 503 of the model pool, never a guess).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { detectFamily } from '../../src/engine/families/detect.js';
import { loadEvaluator, ModelLoadError } from '../../src/engine/index.js';

const root = mkdtempSync(join(tmpdir(), 'assay-detect-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
function folder(files: Record<string, string>): string {
  const dir = join(root, String(n++));
  for (const [rel, text] of Object.entries(files)) {
    mkdirSync(join(dir, rel, '..'), { recursive: true });
    writeFileSync(join(dir, rel), text);
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}
const GRAPH = { 'onnx/model.onnx': 'not read by detection' };

describe('detectFamily', () => {
  it('reads the files: rl_agent_config.json → laya-markers, a sequence classifier → nli-pairs, a config.json → decoder', () => {
    expect(detectFamily(folder({ 'rl_agent_config.json': '{}', ...GRAPH }))).toBe('laya-markers');
    expect(detectFamily(folder({ 'rl_agent_config.json': '{}', 'onnx/encoder.onnx': '', 'onnx/head.onnx': '' }))).toBe(
      'laya-markers',
    );
    const nli = JSON.stringify({ architectures: ['DebertaV2ForSequenceClassification'] });
    expect(detectFamily(folder({ 'config.json': nli, ...GRAPH }))).toBe('nli-pairs');
    expect(detectFamily(folder({ 'nli_config.json': '{}', 'config.json': '{}', ...GRAPH }))).toBe('nli-pairs');
    expect(detectFamily(folder({ 'config.json': JSON.stringify({ architectures: ['Qwen2ForCausalLM'] }) }))).toBe(
      'decoder',
    );
    expect(detectFamily(folder({ 'genai_config.json': '{}' }))).toBe('decoder');
  });

  it('a declaration wins: the registry family, then decision.json (with its -vN layout ids)', () => {
    const laya = folder({ 'rl_agent_config.json': '{}', ...GRAPH });
    expect(detectFamily(laya, 'nli-pairs')).toBe('nli-pairs');
    expect(detectFamily(folder({ 'decision.json': '{"layout":"nli-pairs-v1"}', 'config.json': '{}' }))).toBe(
      'nli-pairs',
    );
    expect(
      detectFamily(folder({ 'decision.json': '{"layout":"llm-logits-v1"}', 'rl_agent_config.json': '{}', ...GRAPH })),
    ).toBe('decoder');
    expect(() => detectFamily(laya, 'gliclass')).toThrow(
      /unknown model family 'gliclass'; known: decoder, decider-labels, label-tokens, laya-markers, nli-pairs, kev-pointer/,
    );
    expect(() => detectFamily(folder({ 'decision.json': '{"layout":"gliclass-v1"}' }))).toThrow(
      /decision\.json: layout/,
    );
  });

  it('a folder that matches no family is refused naming what each family needs, also by the loader', async () => {
    const none = folder({ 'tokenizer.json': '{}', ...GRAPH });
    expect(() => detectFamily(none)).toThrow(ModelLoadError);
    expect(() => detectFamily(none)).toThrow(
      /matches no model family \(it has an ONNX graph\): a decoder needs config\.json .*laya-markers\) needs rl_agent_config\.json .*nli-pairs\) needs config\.json with a \*ForSequenceClassification/,
    );
    await expect(loadEvaluator({ modelDir: none, engineThread: false })).rejects.toThrow(/matches no model family/);
    expect(() => detectFamily(folder({ 'rl_agent_config.json': '{}' }))).toThrow(
      /rl_agent_config\.json .* but no ONNX graph/,
    );
  });
});
