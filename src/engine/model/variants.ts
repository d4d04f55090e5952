// Which ONNX file of an export folder a variant names: the one list of variants, shared by the
// loader (model-folder.ts), the registry and the hub fetcher.
//
// transformers.js names each dtype's file by a suffix (its `DEFAULT_DTYPE_SUFFIX_MAPPING`):
// fp32 '', fp16 '_fp16', int8 '_int8', uint8 '_uint8', q8 '_quantized', q4 '_q4', q4f16 '_q4f16',
// bnb4 '_bnb4'. Exports keep them under onnx/ (transformers.js, onnx-community) or at the folder
// root (optimum-cli's model.onnx, onnxruntime-genai's builder).

export const VARIANTS = ['fp32', 'fp16', 'int8', 'uint8', 'quantized', 'q4', 'q4f16', 'bnb4'] as const;
export type Variant = (typeof VARIANTS)[number];

/** Names accepted for a variant besides its own: transformers.js calls `quantized` q8. */
const ALIASES: Record<string, Variant> = { q8: 'quantized' };

const SUFFIX: Record<Variant, string> = {
  fp32: '',
  fp16: '_fp16',
  int8: '_int8',
  uint8: '_uint8',
  quantized: '_quantized',
  q4: '_q4',
  q4f16: '_q4f16',
  bnb4: '_bnb4',
};

/** Which variant the loader picks when none is named: the fastest on a CPU first. */
export const DEFAULT_ORDER: readonly Variant[] = ['int8', 'quantized', 'fp32', 'q4', 'uint8', 'fp16', 'q4f16', 'bnb4'];

/** The variant a name stands for (aliases resolved), or undefined for an unknown name. */
export function parseVariant(name: string): Variant | undefined {
  return (VARIANTS as readonly string[]).includes(name) ? (name as Variant) : ALIASES[name];
}

/**
 * File names a variant may have, in order of preference. `int8` also finds model_quantized.onnx:
 * onnxruntime's dynamic int8 quantization is what transformers.js ships as `_quantized`, and
 * registries written before `quantized` existed call that file int8.
 */
export function variantFileNames(variant: Variant): string[] {
  const names = [`model${SUFFIX[variant]}.onnx`];
  if (variant === 'int8') names.push('model_quantized.onnx');
  return names;
}

/** Where exporters put the ONNX files of a folder, relative to it. */
export const ONNX_DIRS = ['onnx', '.'] as const;
