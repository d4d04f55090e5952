// The service: one function per use case (evaluate) for the route and the CLI, and the model pool.
// The layer's one entry: code outside src/service/ imports it only from here (eslint).
export * from './errors.js';
export * from './escalation.js';
export * from './escalation-notice.js';
export * from './evaluate.js';
export * from './model-pool.js';
export * from './provider.js';
export * from './registry-change.js';
export * from './residency.js';
export * from './batches/index.js';
export { inSpan, stageSpans, tracing } from './tracing.js';
