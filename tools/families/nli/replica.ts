// Synthetic replicas of the zero-shot NLI cross-encoders (`nli-pairs`, development only, never
// packed): a tiny BERT-like sequence classifier with seeded random weights, written in the layout
// of the published ONNX exports so the family's runner can be built and tested offline. The
// answers are MEANINGLESS; the interface is real. Two flavors:
//
//   deberta     stands for the DeBERTa-v3 NLI exports (cross-encoder/nli-deberta-v3-*, their
//               transformers.js ports): transformers.js layout
//                 config.json, tokenizer.json, tokenizer_config.json, special_tokens_map.json
//                 onnx/model.onnx + onnx/model.onnx_data   fp32, weights as external data
//                 onnx/model_quantized.onnx                int8, as quantize_dynamic writes it
//               input_ids, attention_mask, token_type_ids i64[batch, sequence] → logits f32[batch, 3],
//               labels {0: contradiction, 1: entailment, 2: neutral} (cross-encoder's order)
//   modernbert  stands for the ModernBERT-large zero-shot exports: Optimum layout
//                 config.json, tokenizer files, model.onnx (fp32, inline weights) at the root
//               input_ids, attention_mask i64[batch, sequence] → logits f32[batch, 2],
//               labels {0: entailment, 1: not_entailment}
// Both folders also hold weights.safetensors (the same weights, PyTorch names and orientation) for
// the independent numpy reference (tools/families/nli/nli_forward.py) and assay.json (synthetic).
// Tokenizers: the family's stand-ins (nli-tokenizers.ts), with their baked truncation and padding
// kept in tokenizer.json on purpose (the loader must disable them).
//
// The architecture (docs/families/nli-pairs.md, "The replica") is the same for both flavors and is
// NOT DeBERTa's (no disentangled attention, no relative positions: the real DeBERTa-v3 has
// type_vocab_size 0 and ignores token_type_ids) nor ModernBERT's (no rotary, no local attention):
// word embedding + learned absolute position (+ token type, deberta only) → LayerNorm; 2 post-LN
// layers of bidirectional multi-head attention (biases; padded keys masked by attention_mask) and
// a GELU MLP; the state at position 0 ([CLS]) → dense → GELU → classifier. The shape is tiny
// (hidden 32); the vocabulary is the tokenizer's. Query and key weights are scaled up so attention
// is uneven and the [CLS] state depends on every token of both sides: a row built wrongly (type
// ids, a lost [SEP], the premise cut at the wrong end) moves the logits by far more than rounding.
// The modernbert flavor is shortened to 1,024 positions (ModernBERT reads 8,192) so the reference
// can run a truncated row; tokenizer_config.json says so (model_max_length 1024).
//
// Shapes (NLI_SHAPES): `tiny` above (the default), and the DeBERTa-v3 NLI encoders at a real size
// (`deberta-v3-large`, deberta flavor), for measuring: ensureNliReplicaShape writes only the
// flavors asked for (fp32, int8, safetensors), each weight generated when needed and written at
// once, into models/generated/nli-<shape>/ (replica-kit's flavored folders, as the Laya replica's).
//
//   npx tsx tools/families/nli/replica.ts deberta|modernbert DIR     writes the folder
//   npx tsx tools/families/nli/replica.ts deberta-v3-large DIR [fp32,int8,safetensors]
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DataType, GENERATED_DIR, GraphBuilder, quantizeSymmetric } from '../../../src/internal.js';
import { debertaTestTokenizer, modernbertTestTokenizer } from './tokenizers.js';
import type { TestTokenizer } from '../kit/tokenizer-kit.js';
import * as kit from '../kit/replica-kit.js';
import type { Net, Tensor } from '../kit/replica-kit.js';
import { SpoolGraph } from '../kit/spool-graph.js';

/** Bumped when the graph or the weights change: a cached folder of another version is rewritten. */
export const NLI_REPLICA_VERSION = 1;
export const NLI_REPLICA_SEED = 41;

export type NliFlavor = 'deberta' | 'modernbert';

/** What the two flavors differ in. */
interface Flavor {
  labels: readonly string[];
  typeIds: boolean;
  positions: number;
  eps: number;
  tokenizer: () => TestTokenizer;
  /** Where the fp32 graph goes: transformers.js's onnx/ folder (external data) or Optimum's root. */
  layout: 'transformers.js' | 'optimum';
}

export const NLI_FLAVORS: Readonly<Record<NliFlavor, Flavor>> = {
  deberta: {
    labels: ['contradiction', 'entailment', 'neutral'],
    typeIds: true,
    positions: 512,
    eps: 1e-7,
    tokenizer: debertaTestTokenizer,
    layout: 'transformers.js',
  },
  modernbert: {
    labels: ['entailment', 'not_entailment'],
    typeIds: false,
    positions: 1024,
    eps: 1e-5,
    tokenizer: modernbertTestTokenizer,
    layout: 'optimum',
  },
};

/** An encoder's shape. */
export interface NliShape {
  hidden: number;
  heads: number;
  intermediate: number;
  layers: number;
  types: number;
  /** Rows of the word embedding: the real vocabulary; absent, the flavor's tokenizer's. */
  vocab?: number;
}

/**
 * The shapes: `tiny` (the default, both flavors, for tests) and the published NLI encoders at
 * their real sizes, deberta flavor only (3 labels, token types, 512 positions), for measuring:
 * `deberta-v3-large` is cross-encoder/nli-deberta-v3-large's and MoritzLaurer's DeBERTa-v3-large
 * zero-shot models' config.json (hidden 1024, 24 layers, 16 heads, 4096, vocabulary 128,100; the
 * stand-in tokenizer's ids are far fewer, the rows past them never read). Its BERT-like stand-in
 * has 435.1M numbers (nliParameters), DeBERTa-v3-large 435M: the absolute position table (512
 * rows) stands where DeBERTa's relative embeddings (512 rows) are, the token type rows (2) and
 * pooler are the replica's.
 */
export const NLI_SHAPES = {
  tiny: { hidden: 32, heads: 2, intermediate: 64, layers: 2, types: 2 },
  'deberta-v3-large': { hidden: 1024, heads: 16, intermediate: 4096, layers: 24, types: 2, vocab: 128_100 },
} as const satisfies Record<string, NliShape>;

export type NliShapeName = keyof typeof NLI_SHAPES;
/** The shapes at a real size (deberta flavor). */
export type NliRealShape = Exclude<NliShapeName, 'tiny'>;

/** The tiny replica's shape (the default; the vocabulary is the flavor's tokenizer's). */
export const NLI_REPLICA: NliShape = NLI_SHAPES.tiny;

/** The folder of a flavor under models/generated/. */
export function nliReplicaDir(flavor: NliFlavor): string {
  return fileURLToPath(new URL(`../../../models/generated/nli-replica-${flavor}/`, import.meta.url));
}

/** The graph files of a flavor, relative to its folder: fp32 first, then int8 where there is one. */
export function nliReplicaGraphs(flavor: NliFlavor): { fp32: string; int8?: string } {
  return NLI_FLAVORS[flavor].layout === 'optimum'
    ? { fp32: 'model.onnx' }
    : { fp32: 'onnx/model.onnx', int8: 'onnx/model_quantized.onnx' };
}

/** The tokenizer's vocabulary size: its Unigram / BPE vocabulary and its added tokens. */
function vocabSize(tokenizer: Record<string, unknown>): number {
  const model = tokenizer.model as { vocab: Array<[string, number]> | Record<string, number> };
  const ids = Array.isArray(model.vocab) ? [model.vocab.length - 1] : Object.values(model.vocab);
  const added = (tokenizer.added_tokens as Array<{ id: number }>).map((t) => t.id);
  return [...ids, ...added].reduce((a, b) => Math.max(a, b), 0) + 1;
}

/**
 * The weights' shapes and distributions, in the PyTorch names, orientation (Linear [out, in])
 * and state-dict order of a BERT-style sequence classifier. LayerNorms keep activations O(1);
 * queries and keys have gain 2 (scores of spread ~4: attention uneven but not one-hot); the
 * classifier gain 3 makes logits of a few units.
 */
function weightSpecs(flavor: NliFlavor, shape: NliShape): Map<string, kit.Spec> {
  const f = NLI_FLAVORS[flavor];
  const { hidden: H, intermediate: I, layers, types } = shape;
  const vocab = shape.vocab ?? vocabSize(f.tokenizer().tokenizer);
  const w = new Map<string, kit.Spec>();
  const set = (name: string, dims: number[], std: number, mean = 0): void => {
    w.set(name, { shape: dims, std, mean });
  };
  const dense = (name: string, out: number, inp: number, gain = 1): void => {
    set(`${name}.weight`, [out, inp], gain / Math.sqrt(inp));
    set(`${name}.bias`, [out], 0.1);
  };
  const norm = (name: string): void => {
    set(`${name}.weight`, [H], 0.1, 1);
    set(`${name}.bias`, [H], 0.1);
  };
  set('embeddings.word_embeddings.weight', [vocab, H], 1);
  set('embeddings.position_embeddings.weight', [f.positions, H], 0.5);
  if (f.typeIds) set('embeddings.token_type_embeddings.weight', [types, H], 1);
  norm('embeddings.LayerNorm');
  for (let i = 0; i < layers; i++) {
    const p = `encoder.layer.${i}`;
    dense(`${p}.attention.self.query`, H, H, 2);
    dense(`${p}.attention.self.key`, H, H, 2);
    dense(`${p}.attention.self.value`, H, H);
    dense(`${p}.attention.output.dense`, H, H);
    norm(`${p}.attention.output.LayerNorm`);
    dense(`${p}.intermediate.dense`, I, H);
    dense(`${p}.output.dense`, H, I);
    norm(`${p}.output.LayerNorm`);
  }
  dense('pooler.dense', H, H);
  dense('classifier', f.labels.length, H, 3);
  return w;
}

/** The tiny replica's weights, all of them (the shapes at real sizes generate each when needed). */
export function nliReplicaWeights(flavor: NliFlavor, seed = NLI_REPLICA_SEED): Map<string, Tensor> {
  const specs = weightSpecs(flavor, NLI_REPLICA);
  const w = kit.generated(specs, seed);
  return new Map([...specs.keys()].map((name) => [name, w.get(name)!]));
}

/** Parameter count of a shape (embeddings included; deberta flavor unless named). */
export function nliParameters(shape: NliShapeName, flavor: NliFlavor = 'deberta'): number {
  return kit.parameterCount(weightSpecs(flavor, NLI_SHAPES[shape]));
}

/**
 * An embedding lookup. Quantized: the table in int8 (symmetric, per tensor) gathered and then
 * dequantized, as quantize_dynamic writes a Gather over an initializer.
 */
function embedding(n: Net, name: string, indices: string): string {
  const { g } = n;
  if (!n.quantized) return g.op('Gather', [kit.param(n, name), indices], { axis: { i: 0 } });
  const t = n.w.get(name)!;
  const { q, scale } = quantizeSymmetric(t.data);
  const table = g.initializer(`${name}_quantized`, DataType.INT8, t.shape, q);
  const s = g.initializer(`${name}_scale`, kit.F, [], Float32Array.of(scale));
  const zp = g.initializer(`${name}_zero_point`, DataType.INT8, [], Int8Array.of(0));
  return g.op('DequantizeLinear', [g.op('Gather', [table, indices], { axis: { i: 0 } }), s, zp]);
}

/** The graph pieces' Net (replica-kit.ts) and the shape it builds. */
interface NliNet extends Net {
  shape: NliShape;
}

/** The classifier: inputs → logits [batch, labels]. */
function classifier(n: NliNet, ids: string, mask: string, types: string | undefined): string {
  const { g } = n;
  const { hidden: H, heads, layers } = n.shape;
  const d = H / heads;
  const seqLen = g.op('Gather', [g.op('Shape', [ids]), g.constI64([1], [])], { axis: { i: 0 } });
  const positions = g.op('Range', [g.constI64([0], []), seqLen, g.constI64([1], [])]);
  let x = g.op('Add', [
    embedding(n, 'embeddings.word_embeddings.weight', ids),
    embedding(n, 'embeddings.position_embeddings.weight', positions),
  ]);
  if (types) x = g.op('Add', [x, embedding(n, 'embeddings.token_type_embeddings.weight', types)]);
  // Linear and LayerNorm layers by their module name (`<name>.weight`, `<name>.bias`).
  const dense = (x: string, name: string) => kit.linear(n, x, `${name}.weight`, `${name}.bias`);
  const norm = (x: string, name: string) => kit.layerNorm(n, x, `${name}.weight`, `${name}.bias`);
  x = norm(x, 'embeddings.LayerNorm');
  const bias = kit.maskBias(n, kit.keysValid(n, mask));
  for (let i = 0; i < layers; i++) {
    const p = `encoder.layer.${i}`;
    const proj = (which: string) => kit.splitHeads(n, dense(x, `${p}.attention.self.${which}`), heads, d);
    const a = kit.attend(n, proj('query'), proj('key'), proj('value'), bias, heads, d);
    x = norm(g.op('Add', [x, dense(a, `${p}.attention.output.dense`)]), `${p}.attention.output.LayerNorm`);
    const m = kit.gelu(n, dense(x, `${p}.intermediate.dense`));
    x = norm(g.op('Add', [x, dense(m, `${p}.output.dense`)]), `${p}.output.LayerNorm`);
  }
  const cls = g.op('Gather', [x, g.constI64([0], [])], { axis: { i: 1 } });
  return dense(kit.gelu(n, dense(cls, 'pooler.dense')), 'classifier');
}

/**
 * One graph file: fp32 (inline, or external data next to it) or int8. At a real size (`shape`
 * not tiny) the int8 graph's weights are spooled to disk as they are added (SpoolGraph), and its
 * DynamicQuantizeLinear outputs named as quantize_dynamic names them.
 */
function writeGraph(
  file: string,
  flavor: NliFlavor,
  w: kit.WeightSource,
  opts: { external?: string; quantized?: boolean; shape?: NliShape },
): void {
  const f = NLI_FLAVORS[flavor];
  const shape = opts.shape ?? NLI_REPLICA;
  const tiny = shape === NLI_REPLICA;
  const external = opts.external ? { path: join(dirname(file), opts.external), location: opts.external } : undefined;
  const g = external || tiny ? new GraphBuilder('main_graph', external) : new SpoolGraph('main_graph', `${file}.spool`);
  // quantizedNames 'fresh' (tiny): the int8 graph as version 1 wrote it (its bytes unchanged).
  const n: NliNet = {
    g,
    w,
    shape,
    half: false,
    eps: f.eps,
    added: new Set(),
    quantized: opts.quantized,
    quantizedNames: tiny ? 'fresh' : 'activation',
  };
  try {
    const dims = ['batch_size', 'sequence_length'];
    const ids = g.input('input_ids', kit.I64, dims);
    const mask = g.input('attention_mask', kit.I64, dims);
    const types = f.typeIds ? g.input('token_type_ids', kit.I64, dims) : undefined;
    g.output('logits', kit.F, ['batch_size', f.labels.length]);
    g.node('Identity', [classifier(n, ids, mask, types)], { outputs: ['logits'] });
    g.save(file, {
      opset: 18,
      producer: 'assay-nli-replica',
      docString: `NLI replica (${flavor}): random weights, MEANINGLESS answers.`,
    });
  } catch (e) {
    g.abort();
    throw e;
  }
}

/** config.json: the replica's own shape, in the field names of the model it stands for. */
function modelConfig(
  flavor: NliFlavor,
  shape: NliShape,
  vocab: number,
  specials: Record<string, number>,
): Record<string, unknown> {
  const f = NLI_FLAVORS[flavor];
  const { hidden, heads, intermediate, layers, types } = shape;
  const labels = {
    id2label: Object.fromEntries(f.labels.map((l, i) => [String(i), l])),
    label2id: Object.fromEntries(f.labels.map((l, i) => [l, i])),
  };
  const sizes = {
    hidden_size: hidden,
    num_hidden_layers: layers,
    num_attention_heads: heads,
    intermediate_size: intermediate,
    vocab_size: vocab,
    max_position_embeddings: f.positions,
  };
  if (flavor === 'deberta')
    return {
      architectures: ['DebertaV2ForSequenceClassification'],
      model_type: 'deberta-v2',
      ...sizes,
      hidden_act: 'gelu',
      layer_norm_eps: f.eps,
      // The replica's, not DeBERTa-v3's (type_vocab_size 0, relative attention, no absolute positions).
      type_vocab_size: types,
      relative_attention: false,
      position_biased_input: true,
      pooler_hidden_size: hidden,
      pooler_hidden_act: 'gelu',
      pad_token_id: specials['[PAD]'],
      ...labels,
      torch_dtype: 'float32',
    };
  return {
    architectures: ['ModernBertForSequenceClassification'],
    model_type: 'modernbert',
    ...sizes,
    hidden_activation: 'gelu',
    norm_eps: f.eps,
    classifier_pooling: 'cls',
    classifier_activation: 'gelu',
    cls_token_id: specials['[CLS]'],
    sep_token_id: specials['[SEP]'],
    pad_token_id: specials['[PAD]'],
    mask_token_id: specials['[MASK]'],
    ...labels,
    torch_dtype: 'float32',
  };
}

/** Writes a flavor's folder into `out` (created). */
export function writeNliReplica(flavor: NliFlavor, out: string, seed = NLI_REPLICA_SEED): void {
  const f = NLI_FLAVORS[flavor];
  const w = nliReplicaWeights(flavor, seed);
  mkdirSync(out, { recursive: true });
  if (f.layout === 'transformers.js') {
    const onnxDir = join(out, 'onnx');
    mkdirSync(onnxDir);
    writeGraph(join(onnxDir, 'model.onnx'), flavor, w, { external: 'model.onnx_data' });
    writeGraph(join(onnxDir, 'model_quantized.onnx'), flavor, w, { quantized: true });
  } else writeGraph(join(out, 'model.onnx'), flavor, w, {});
  writeCommon(flavor, NLI_REPLICA, out);
  kit.writeSafetensors(join(out, 'weights.safetensors'), w, w, { format: 'pt', flavor, seed: String(seed) });
  // Written last: its presence means the folder is complete.
  kit.writeJson(join(out, 'assay.json'), assayJson(flavor, seed));
}

/** assay.json: what wrote the folder (a real shape's adds its shape and flavors before the warning). */
function assayJson(flavor: NliFlavor, seed: number, more: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    synthetic: true,
    family: 'nli-pairs',
    generator: 'nli-replica',
    generator_version: NLI_REPLICA_VERSION,
    flavor,
    seed,
    ...more,
    warning: 'random weights: the answers are MEANINGLESS',
  };
}

/** The tokenizer files and config.json of a flavor at `shape`. */
function writeCommon(flavor: NliFlavor, shape: NliShape, out: string): void {
  const f = NLI_FLAVORS[flavor];
  const { tokenizer, config } = f.tokenizer();
  // tokenizer.json as the stand-in makes it: its truncation and padding stay in the file.
  writeFileSync(join(out, 'tokenizer.json'), JSON.stringify(tokenizer));
  kit.writeJson(join(out, 'tokenizer_config.json'), { ...config, model_max_length: f.positions });
  const added = tokenizer.added_tokens as Array<{ id: number; content: string }>;
  const specials = Object.fromEntries(added.map((t) => [t.content, t.id]));
  kit.writeJson(
    join(out, 'special_tokens_map.json'),
    Object.fromEntries(['cls', 'sep', 'pad', 'unk', 'mask'].map((k) => [`${k}_token`, config[`${k}_token`]])),
  );
  kit.writeJson(join(out, 'config.json'), modelConfig(flavor, shape, shape.vocab ?? vocabSize(tokenizer), specials));
}

/**
 * A flavor's folder (default models/generated/nli-replica-<flavor>/), written once and reused
 * while its assay.json names this generator version and seed; rewritten otherwise.
 */
export function ensureNliReplica(flavor: NliFlavor, dir = nliReplicaDir(flavor), seed = NLI_REPLICA_SEED): string {
  return kit.ensureFolder(dir, NLI_REPLICA_VERSION, seed, (out) => writeNliReplica(flavor, out, seed));
}

/** What a folder at a real shape can hold; only the flavors asked for are written. */
export type NliShapeFlavor = 'fp32' | 'int8' | 'safetensors';
export const NLI_SHAPE_FLAVORS: readonly NliShapeFlavor[] = ['fp32', 'int8', 'safetensors'];

/** The folder of a real shape: models/generated/nli-<shape>/. */
export function nliShapeDir(shape: NliRealShape): string {
  return join(GENERATED_DIR, `nli-${shape}`);
}

/**
 * The deberta flavor at a real shape for replica-kit's flavored folders: the transformers.js
 * layout (onnx/model.onnx + model.onnx_data fp32, onnx/model_quantized.onnx int8, every Linear
 * and the embedding tables dynamically quantized as quantize_dynamic does, as the tiny's), the
 * tokenizer files, config.json, weights.safetensors when asked for. Every weight is generated
 * when a graph or file needs it and written at once: nothing holds them all.
 */
function nliShapeReplica(
  name: NliRealShape,
  seed: number,
  log: (line: string) => void,
): kit.FlavoredReplica<NliShapeFlavor> {
  const flavor: NliFlavor = 'deberta';
  const shape: NliShape = NLI_SHAPES[name];
  const specs = weightSpecs(flavor, shape);
  return {
    version: NLI_REPLICA_VERSION,
    seed,
    shape: name,
    all: NLI_SHAPE_FLAVORS,
    stamp: (flavors) => assayJson(flavor, seed, { shape: name, flavors }),
    writeFlavors: (out, flavors) => {
      const onnxDir = join(out, 'onnx');
      mkdirSync(onnxDir, { recursive: true });
      for (const which of NLI_SHAPE_FLAVORS.filter((f) => flavors.includes(f))) {
        const t0 = performance.now();
        const w = kit.generated(specs, seed);
        if (which === 'fp32')
          writeGraph(join(onnxDir, 'model.onnx'), flavor, w, { external: 'model.onnx_data', shape });
        else if (which === 'int8')
          writeGraph(join(onnxDir, 'model_quantized.onnx'), flavor, w, { quantized: true, shape });
        else
          kit.writeSafetensors(join(out, 'weights.safetensors'), specs, w, {
            format: 'pt',
            flavor,
            seed: String(seed),
          });
        log(`nli-${name} ${which}: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
      }
    },
    writeCommon: (out) => writeCommon(flavor, shape, out),
  };
}

/**
 * The NLI replica (deberta flavor) at a real `shape` with (at least) `flavors` (default fp32),
 * cached in models/generated/nli-<shape>/ and written only when missing: a current folder that
 * lacks some of them gets just those added. At deberta-v3-large fp32 is 1.74 GB.
 */
export function ensureNliReplicaShape(
  shape: NliRealShape,
  flavors: readonly NliShapeFlavor[] = ['fp32'],
  opts: { seed?: number; dir?: string; log?: (line: string) => void } = {},
): string {
  const replica = nliShapeReplica(shape, opts.seed ?? NLI_REPLICA_SEED, opts.log ?? (() => {}));
  return kit.ensureFlavored(opts.dir ?? nliShapeDir(shape), replica, flavors);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const [what, dir, list] = process.argv.slice(2);
  const shapes = Object.keys(NLI_SHAPES).filter((s) => s !== 'tiny');
  const flavors = (list?.split(',') ?? ['fp32']) as NliShapeFlavor[];
  if (what && shapes.includes(what) && dir && flavors.every((f) => NLI_SHAPE_FLAVORS.includes(f))) {
    const log = (line: string): void => console.log(line);
    kit.writeFlavored(nliShapeReplica(what as NliRealShape, NLI_REPLICA_SEED, log), resolve(dir), flavors);
    console.log(`wrote the NLI replica (deberta, ${what}) to ${dir}`);
  } else if ((what === 'deberta' || what === 'modernbert') && dir && !list) {
    writeNliReplica(what, resolve(dir));
    console.log(`wrote the NLI replica (${what}) to ${dir}`);
  } else {
    console.error('usage: npx tsx tools/families/nli/replica.ts deberta|modernbert DIR');
    console.error(
      `       npx tsx tools/families/nli/replica.ts ${shapes.join('|')} DIR [${NLI_SHAPE_FLAVORS.join(',')}]`,
    );
    process.exit(2);
  }
}
