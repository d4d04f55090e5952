// The model registry: which names the `model` field accepts and which folder answers each
// (registry.ts: read, checked, written back by `assay models fetch`), its file's schema (schema.ts:
// docs/file-formats.md is generated from it), and the names a key may list (model-list.ts).
// The layer's one entry: code outside src/registry/ imports it only from here (eslint).
export * from './registry.js';
export * from './schema.js';
export * from './model-list.js';
