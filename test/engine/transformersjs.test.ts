// Our prompts and numerics against an independent implementation: transformers.js renders the same
// chat template to the same tokens, and its logits on those tokens equal ours (through our
// rewritten graph, so the rewrite is checked against a stock reader of the export too).
import { describe, expect, it } from 'vitest';
import { basename, dirname } from 'node:path';
import { openModelFolder } from '../../src/engine/model/model-folder.js';
import { ModelRunner } from '../../src/engine/model/runner.js';
import { TextCodec } from '../../src/engine/prompting/tokenizer.js';
import { planRequest } from '../../src/engine/prompting/plan.js';
import { promptSet } from '../../src/engine/prompting/prompts.js';
import { renderContent } from '../../src/engine/prompting/content.js';
import { choice, state, tinyFp32 } from './fixtures.js';

describe('transformers.js agrees with the engine', () => {
  it('on the prompt tokens and the logits of a chat-templated question', async () => {
    const dir = await tinyFp32();
    const { env, AutoTokenizer, AutoModelForCausalLM } = await import('@huggingface/transformers');
    env.allowRemoteModels = false;
    env.allowLocalModels = true;
    env.localModelPath = dirname(dir);
    const name = basename(dir);

    const codec = await TextCodec.load(dir);
    const prompts = promptSet();
    const plan = planRequest({ state, questions: { c: choice } }, codec, prompts, codec.eosTokenId!, {
      request: 1e9,
      question: 1e9,
      context: 1e9,
    });
    const ours = [...plan.prefix, ...plan.questions[0]!.suffix];

    const tokenizer = await AutoTokenizer.from_pretrained(name);
    const messages = [
      { role: 'system', content: prompts.system(renderContent(state)) },
      { role: 'user', content: prompts.user(choice) },
    ];
    // enable_thinking is a chat-template variable; transformers.js passes extra options to the template.
    const templateOptions = {
      add_generation_prompt: true,
      enable_thinking: false,
      tokenize: true,
      return_dict: true,
    } as const;
    const enc = tokenizer.apply_chat_template(messages, templateOptions) as unknown as {
      input_ids: { data: BigInt64Array };
    };
    expect(Array.from(enc.input_ids.data, Number)).toEqual(ours);

    const model = await AutoModelForCausalLM.from_pretrained(name, { dtype: 'fp32' });
    const runner = await ModelRunner.create(await openModelFolder(dir), { modelDir: dir, threads: 1 });
    try {
      expect(runner.rewritten).toBe(true);
      const out = (await model(enc)) as { logits: { data: Float32Array } };
      const vocab = 151936;
      const n = ours.length;
      const theirs = out.logits.data.subarray((n - 1) * vocab, n * vocab);
      const mine = (await runner.logits(ours)).at(-1)!;
      let max = 0;
      for (let i = 0; i < vocab; i++) max = Math.max(max, Math.abs(theirs[i]! - mine[i]!));
      expect(max).toBeLessThan(1e-4);
    } finally {
      await model.dispose();
      await runner.close();
    }
  });
});
