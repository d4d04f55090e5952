// Goldens of the label-token contracts (label-tokens-v1), made by the independent Python reference
// (tools/families/label-tokens/label_tokens_layout.py, written from docs/families/label-tokens.md), never by
// Assay's layout code: for each test contract (test/families/label-tokens/contracts/<name>.json)
// the requests below (deterministic), the texts the reference names tokenized by the decider
// replica's Qwen tokenizer through Assay's TextCodec (template text: `encode`, its added-token
// strings control tokens; data: `encodeText`, never a control token), laid out by the reference,
// the label logits at each row's slot from the replica's fp32 torch forward
// (tools/families/decider/decider_forward.py), and the reference's readout of them with the contract's
// temperatures (contracts/calibration.json).
//
//   npx tsx tools/families/label-tokens/goldens.ts [contract ...]
//      rewrites test/families/label-tokens/<contract>.goldens.json (all five without arguments)
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Tokenizer } from '@huggingface/tokenizers';
import { TextCodec } from '../../../src/internal.js';
import { dataTokenizer } from '../decider/goldens.js';
import { ensureDeciderReplica } from '../decider/replica.js';
import * as kit from '../kit/goldens-kit.js';
import { labelTokenRequests, type LabelGoldenRequest } from './cases.js';

export const LABEL_CONTRACTS = ['generic', 'cua', 'jevos', 'winnow', 'tev'] as const;
export type LabelContract = (typeof LABEL_CONTRACTS)[number];
export const LABEL_DIR = join(kit.ROOT, 'test', 'families', 'label-tokens');
const REFERENCE = join(kit.ROOT, 'tools', 'families', 'label-tokens', 'label_tokens_layout.py');
const FORWARD = join(kit.ROOT, 'tools', 'families', 'decider', 'decider_forward.py');
const PYTHON = '/usr/bin/python3';

export const goldensFile = (contract: string): string => join(LABEL_DIR, `${contract}.goldens.json`);

/** The contract's decision.json. */
export function contractFile(contract: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(LABEL_DIR, 'contracts', `${contract}.json`), 'utf8')) as Record<string, unknown>;
}

/** calibration.json's temperatures the contract's replica is written with ([1, 1, 1] where it has none). */
export function contractTemperature(contract: string): [number, number, number] {
  const all = JSON.parse(readFileSync(join(LABEL_DIR, 'contracts', 'calibration.json'), 'utf8')) as Record<
    string,
    [number, number, number] | null
  >;
  return all[contract] ?? [1, 1, 1];
}

const about = (contract: string): string[] => [
  `Goldens of the label-tokens-v1 contract test/families/label-tokens/contracts/${contract}.json, made by tools/families/label-tokens/label_tokens_layout.py (Python, written from docs/families/label-tokens.md), not by Assay.`,
  'Tokenizer: the decider replica’s Qwen tokenizer through Assay’s TextCodec (contract text: encode; caller values and labels: encodeText). Chat template rendered by jinja2.',
  'probabilities: softmax(label logits / temperature) from the replica’s fp32 torch forward (tools/families/decider/decider_forward.py, weights.safetensors of tools/families/decider/replica.ts) at each row’s last token; choice in the options’ order, score in level order, noul [P(true), P(false)].',
  'Regenerate: npx tsx tools/families/label-tokens/goldens.ts [contract ...]',
];

function python(args: string[], job: unknown): Record<string, unknown> {
  const run = spawnSync(PYTHON, args, { input: JSON.stringify(job), encoding: 'utf8', maxBuffer: 1 << 29 });
  if (run.status !== 0) throw new Error(`${args.join(' ')} failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as Record<string, unknown>;
}

type Result = Record<string, unknown> & {
  name: string;
  prefix?: number[];
  rows?: Array<{ piece: number[]; labels: number[] }>;
};

/**
 * The reference's results for `requests` under the contract: its two passes around the
 * tokenizer, the forward at every row's slot, then the layout again with those label logits.
 */
export async function labelReferenceResults(
  dir: string,
  contract: string,
  requests: LabelGoldenRequest[],
): Promise<Result[]> {
  return referenceWith(await TextCodec.load(dir), dir, contract, requests);
}

function referenceWith(codec: TextCodec, dir: string, contract: string, requests: LabelGoldenRequest[]): Result[] {
  const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  const model = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { max_position_embeddings: number };
  const job: Record<string, unknown> = {
    contract: contractFile(contract),
    tokenizer_config: config,
    context: model.max_position_embeddings,
    temperature: contractTemperature(contract),
    requests,
  };
  const { segments } = python([REFERENCE, 'segments'], job) as { segments: Array<[string, 'template' | 'data']> };
  const tokens: { template: Record<string, number[]>; data: Record<string, number[]> } = { template: {}, data: {} };
  // Assay's TextCodec, checked against the tokenizer itself: template text as the whole tokenizer
  // encodes it, data as the tokenizer without its added tokens does.
  const whole = new Tokenizer(JSON.parse(readFileSync(join(dir, 'tokenizer.json'), 'utf8')) as object, config);
  const plain = dataTokenizer(dir);
  for (const [text, kind] of segments) {
    const ids = kind === 'template' ? codec.encode(text) : codec.encodeText(text);
    const check = (kind === 'template' ? whole : plain).encode(text, { add_special_tokens: false }).ids;
    if (JSON.stringify(ids) !== JSON.stringify(check))
      throw new Error(`TextCodec and the tokenizer differ on ${kind} text ${JSON.stringify(text.slice(0, 80))}`);
    tokens[kind][text] = ids;
  }
  const laid = (python([REFERENCE, 'layout'], { ...job, tokens }) as { results: Result[] }).results;
  // The forward: every row of every answered request, its label logits at the slot.
  const rows = laid.flatMap((r) =>
    (r.rows ?? []).map((row) => {
      const ids = [...r.prefix!, ...row.piece];
      return { ids, slot: ids.length - 1, labels: row.labels };
    }),
  );
  const { logits } = python([FORWARD], { weights: join(dir, 'weights.safetensors'), rows }) as { logits: number[][] };
  const labelLogits: Record<string, number[][]> = {};
  let at = 0;
  for (const r of laid) if (r.rows) labelLogits[r.name] = r.rows.map(() => logits[at++]!);
  return (python([REFERENCE, 'layout'], { ...job, tokens, label_logits: labelLogits }) as { results: Result[] })
    .results;
}

async function main(): Promise<void> {
  const dir = await ensureDeciderReplica();
  const wanted = process.argv.slice(2);
  for (const contract of LABEL_CONTRACTS) {
    if (wanted.length > 0 && !wanted.includes(contract)) continue;
    const requests = labelTokenRequests(contract, dir);
    const results = await labelReferenceResults(dir, contract, requests);
    kit.writeGoldens(
      goldensFile(contract),
      { about: about(contract), contract, temperature: contractTemperature(contract) },
      requests,
      results,
    );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
