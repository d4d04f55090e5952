// Answer-quality measures over labeled examples: metrics, calibration, run comparison, reliability diagrams. Pure functions.
// The layer's one entry: code outside src/quality/ imports it only from here (eslint).
export * from './calibration.js';
export * from './compare.js';
export * from './metrics.js';
export * from './reliability-svg.js';
export * from './bootstrap.js';
export * from './coverage.js';
export * from './risk-coverage-svg.js';
