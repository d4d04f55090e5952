// Small helpers every layer may use, below all of them: each file imports nothing of the project.
// The layer's one entry.
export * from './random.js';
export * from './html.js';
export * from './onnx.js';
export * from './version.js';
export * from './hosts.js';
export * from './softmax.js';
