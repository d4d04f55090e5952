// Export flavors of a synthetic model for the loader's tests (development only, not packed): the
// dtype variants of src/model-files/variants.ts (fp16, q4, q4f16, in the Hugging Face layout) in
// other layouts and templates, and a GroupQueryAttention graph:
//   layouts: hf (onnx/<file>), optimum (model.onnx at the root), genai (genai_config.json and
//            model.onnx + model.onnx.data at the root, no config.json, as onnxruntime-genai's
//            builder writes);
//   templates: in tokenizer_config.json, or only in chat_template.jinja / chat_template.json;
//   attention: plain, or gqa (GroupQueryAttention with rotary inside, no position_ids input).
// The plain Hugging Face ones are the product's variants, the same folders.
//
// The answers of these models are MEANINGLESS (random weights); numerics are real.
import { copyFileSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import onnxProto from 'onnx-proto';
import {
  buildDecoder,
  DEFAULT_SEED,
  derivedManifest,
  ensureSynthModel,
  ensureSynthVariant,
  externalize,
  GENERATED_DIR,
  GraphBuilder,
  loadShapes,
  VARIANT_FILE,
  variantCurrent,
  variantModel,
  writeModelFile,
  type Model,
  type ShapeName,
} from '../src/internal.js';

const onnx = onnxProto.onnx;

export type FlavorDtype = 'fp16' | 'q4' | 'q4f16';
export type FlavorLayout = 'hf' | 'optimum' | 'genai';
export type FlavorTemplate = 'tokenizer_config' | 'jinja' | 'json';

export interface FlavorOptions {
  dtype: 'fp32' | FlavorDtype;
  /** The synthetic shape whose fp32 weights are converted (default tiny; gqa: tiny only). */
  shape?: ShapeName;
  layout?: FlavorLayout;
  template?: FlavorTemplate;
  /** 'gqa': GroupQueryAttention with rotary inside, as onnxruntime-genai's builder emits (no position_ids input). */
  attention?: 'plain' | 'gqa';
  /** MatMulNBits accuracy_level (4: int8 dot products on CPU). Default 4. */
  accuracyLevel?: number;
}

export function flavorName(o: FlavorOptions): string {
  const acc =
    (o.dtype === 'q4' || o.dtype === 'q4f16') && o.accuracyLevel !== undefined && o.accuracyLevel !== 4
      ? `acc${o.accuracyLevel}`
      : '';
  return [
    o.shape ?? 'tiny',
    o.dtype,
    acc,
    o.attention === 'gqa' ? 'gqa' : '',
    o.layout && o.layout !== 'hf' ? o.layout : '',
    o.template && o.template !== 'tokenizer_config' ? `template-${o.template}` : '',
  ]
    .filter(Boolean)
    .join('-');
}

// ------------------------------------------------------------------------------ folders

function genaiConfig(config: Record<string, number | number[] | unknown>, file: string): object {
  return {
    model: {
      bos_token_id: config.bos_token_id,
      context_length: config.max_position_embeddings,
      decoder: {
        session_options: { log_id: 'onnxruntime-genai', provider_options: [] },
        filename: file,
        head_size: config.head_dim,
        hidden_size: config.hidden_size,
        inputs: {
          input_ids: 'input_ids',
          attention_mask: 'attention_mask',
          position_ids: 'position_ids',
          past_key_names: 'past_key_values.%d.key',
          past_value_names: 'past_key_values.%d.value',
        },
        outputs: { logits: 'logits', present_key_names: 'present.%d.key', present_value_names: 'present.%d.value' },
        num_attention_heads: config.num_attention_heads,
        num_hidden_layers: config.num_hidden_layers,
        num_key_value_heads: config.num_key_value_heads,
      },
      eos_token_id: [151645, 151643],
      pad_token_id: 151643,
      type: config.model_type,
      vocab_size: config.vocab_size,
    },
    search: { max_length: config.max_position_embeddings, do_sample: false, num_beams: 1 },
  };
}

/** The tiny shape with GroupQueryAttention, from the same seeded weight streams as tiny-fp32. */
function gqaModel(): Model {
  const g = new GraphBuilder('main_graph');
  buildDecoder(g, loadShapes().tiny, { quantized: false, positionIds: false, seed: DEFAULT_SEED, attention: 'gqa' });
  return onnx.ModelProto.decode(onnx.ModelProto.encode(g.toModel({ opset: 17 })).finish());
}

/** A synthetic model in one flavor (generated once, from the fp32 twin's weights). */
export async function ensureFlavor(o: FlavorOptions): Promise<string> {
  const shape = o.shape ?? 'tiny';
  const layout = o.layout ?? 'hf';
  const template = o.template ?? 'tokenizer_config';
  // The plain Hugging Face ones are the product's dtype variants.
  if (layout === 'hf' && template === 'tokenizer_config' && o.attention !== 'gqa') return ensureSynthVariant(o);
  const out = join(GENERATED_DIR, flavorName(o));
  if (o.attention === 'gqa' && shape !== 'tiny') throw new Error('the gqa flavor is made for the tiny shape only');
  if (variantCurrent(out)) return out;
  const source = await ensureSynthModel({ shape, dtype: 'fp32' });
  const tmp = `${out}.${process.pid}.tmp`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const model = o.attention === 'gqa' ? variantModel(source, o, gqaModel()) : variantModel(source, o);
  const config = JSON.parse(readFileSync(join(source, 'config.json'), 'utf8')) as Record<string, unknown>;
  const tokenizerConfig = JSON.parse(readFileSync(join(source, 'tokenizer_config.json'), 'utf8')) as Record<
    string,
    unknown
  >;
  copyFileSync(join(source, 'tokenizer.json'), join(tmp, 'tokenizer.json'));
  const file = layout === 'hf' ? VARIANT_FILE[o.dtype] : 'model.onnx';
  if (layout === 'genai') {
    // The builder always writes its weights as external data next to model.onnx.
    await externalize(model, join(tmp, 'model.onnx.data'), 'model.onnx.data');
    writeFileSync(join(tmp, 'model.onnx'), onnx.ModelProto.encode(model).finish());
    writeFileSync(join(tmp, 'genai_config.json'), `${JSON.stringify(genaiConfig(config, 'model.onnx'), null, 4)}\n`);
  } else {
    const dir = layout === 'hf' ? join(tmp, 'onnx') : tmp;
    mkdirSync(dir, { recursive: true });
    await writeModelFile(model, dir, file);
    writeFileSync(join(tmp, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
    copyFileSync(join(source, 'generation_config.json'), join(tmp, 'generation_config.json'));
  }
  if (template !== 'tokenizer_config') {
    const text = tokenizerConfig.chat_template as string;
    delete tokenizerConfig.chat_template;
    if (template === 'jinja') writeFileSync(join(tmp, 'chat_template.jinja'), text);
    else writeFileSync(join(tmp, 'chat_template.json'), `${JSON.stringify({ chat_template: text }, null, 2)}\n`);
  }
  writeFileSync(join(tmp, 'tokenizer_config.json'), `${JSON.stringify(tokenizerConfig, null, 2)}\n`);
  const manifest = derivedManifest(source, o, {
    position_ids: o.attention !== 'gqa',
    model_file: layout === 'hf' ? `onnx/${file}` : 'model.onnx',
    external_data: layout === 'genai' ? 'model.onnx.data' : null,
    flavor: { dtype: o.dtype, attention: o.attention ?? 'plain', layout, template },
  });
  writeFileSync(join(tmp, 'assay.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  rmSync(out, { recursive: true, force: true });
  renameSync(tmp, out);
  return out;
}

// CLI: npm run models:flavor -- [--shape tiny|qwen2.5-0.5b] --dtype fp32|fp16|q4|q4f16 [--attention plain|gqa] [--layout hf|optimum|genai] [--template tokenizer_config|jinja|json]
if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const { values } = parseArgs({
    options: {
      shape: { type: 'string' },
      dtype: { type: 'string', default: 'fp32' },
      attention: { type: 'string' },
      layout: { type: 'string' },
      template: { type: 'string' },
      'accuracy-level': { type: 'string' },
    },
  });
  const dir = await ensureFlavor({
    shape: values.shape as ShapeName | undefined,
    dtype: values.dtype as FlavorOptions['dtype'],
    attention: values.attention as FlavorOptions['attention'],
    layout: values.layout as FlavorLayout | undefined,
    template: values.template as FlavorTemplate | undefined,
    accuracyLevel: values['accuracy-level'] === undefined ? undefined : Number(values['accuracy-level']),
  });
  process.stdout.write(`${dir}\n`);
}
