// The Laya family (`laya-markers`): an encoder read at its option markers, known by its
// rl_agent_config.json; its rows run whole, batched. docs/families/laya-markers.md.
import { defineFamily, rowParts } from '../descriptor.js';
import { findSingleGraph, findSplitGraph } from '../files.js';
import { LAYA_CONFIG } from './calibration.js';
import { LayaOptionsTooLong } from './layout.js';

export const laya = defineFamily({
  name: 'laya-markers',
  engine: 'encoder-rows',
  reuses: 'nothing',
  detect: {
    by: (folder) => (folder.has(LAYA_CONFIG) ? LAYA_CONFIG : undefined),
    needs: 'a Laya decision model (laya-markers) needs rl_agent_config.json and its graph',
    lacks: (dir, has) =>
      findSingleGraph(has) === undefined && findSplitGraph(has) === undefined
        ? `${dir}: rl_agent_config.json (a Laya decision model) but no ONNX graph: expected onnx/model.onnx ` +
          `(or another dtype's file, under onnx/ or at the root), or onnx/encoder.onnx with onnx/head.onnx`
        : undefined,
  },
  fetch: {
    settings: LAYA_CONFIG,
    optional: [],
    split: true,
    oneGraph: 'a Laya model is one graph or its split export',
    help: `- a Laya decision model (laya-markers, by its rl_agent_config.json): rl_agent_config.json,
  config.json, the tokenizer files (in tokenizer/ or at the root), and one graph with its external
  data: the variant's file, or the split onnx/encoder.onnx + onnx/head.onnx (--split, or when the
  repo has no single graph);`,
  },
  rows: rowParts(async () => (await import('./family.js')).layaRows),
  refusals: [LayaOptionsTooLong],
});
