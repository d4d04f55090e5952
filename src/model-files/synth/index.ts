// The synthetic model generator: random-weight decoders in the Hugging Face ONNX export layout.
// A tool layer: commands and tests use it; the server (src/api, src/service, src/engine) never does.
export * from './shapes.js';
export { buildDecoder } from './decoder.js';
export { int8Product, type DynamicQuantized, type QuantizedNames } from './int8-product.js';
export { synthesize, type SynthOptions, type SynthResult } from './folder.js';
export { ensureSynthModel, synthModelCurrent, synthModelDir, GENERATED_DIR, type EnsureOptions } from './ensure.js';
