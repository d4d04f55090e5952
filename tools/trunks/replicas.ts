// The causal-row families' replicas on real trunks (development only, never packed): each family's
// head in its published whole-row contract (the same folder files, input and output names, pad id
// and heads as the toy replicas of tools/families/), on a trunk written as a torch module in a real
// architecture and exported by torch.onnx.export (tools/trunks/export.py; docs/families/trunks.md):
//   qwen3    attention only (Qwen3: RMSNorm, rotary, GQA with q/k norms, SwiGLU, tied embeddings)
//   qwen35   Qwen3.5 hybrid: Gated DeltaNet layers (an ONNX Scan over 64-token chunks from a zero
//            state, a causal conv with zero left padding) beside gated full-attention layers, 3 : 1
//   gemma3   Gemma 3: sliding-window local layers beside a global one, 5 : 1
// Every family on every trunk kind: models/generated/trunks/<family>-<trunk>/, written on first use
// by one Python run for all the missing folders (Debian's python3-torch and python3-onnx), reused
// while TRUNK_REPLICA_VERSION and the seed are current. A folder holds model.onnx + model.onnx_data,
// the family's tokenizer.json, decision.json and calibration.json (as its toy replica writes them),
// config.json (the spec export.py and forward.py read, and the weights' digest), probe.json (the
// torch module's outputs on a padded batch, which the graph is checked against) and assay.json.
//
//   npx tsx tools/trunks/replicas.ts [FAMILY-TRUNK ...]   writes (or finds) the tiny folders
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ARBITER_MAX_LEN } from '../families/arbiter/replica.js';
import { GOLDEN_CONFIG as DECISION_CONFIG } from '../families/decision/goldens.js';
import { DECISION_PAD_ID, DECISION_TEMPERATURE, QWEN_TOKENIZER } from '../families/decision/replica.js';
import { slotsDecision, slotsLabelTable, SLOTS_TEMPERATURE } from '../families/decider-slots/replica.js';
import { gemmaTestTokenizer, gemmaTestVocab } from '../families/arbiter/gemma-tokenizer.js';
import { kevDecision, KEV_REPLICA_TEMPERATURES } from '../families/kev/replica.js';
import { QWEN35_IDS, QWEN35_VOCAB, writeQwen35Tokenizer } from '../families/kit/qwen35-tokenizer.js';
import { readStamp, scratchBeside, writeJson } from '../families/kit/replica-kit.js';
import { writeTestTokenizer } from '../families/kit/tokenizer-kit.js';

/** Bumped when a trunk, a head, the weights' draw or the folder's files change: folders are rewritten. */
export const TRUNK_REPLICA_VERSION = 5;
export const TRUNK_REPLICA_SEED = 54;

export const TRUNK_KINDS = ['qwen3', 'qwen35', 'gemma3'] as const;
export type TrunkKind = (typeof TRUNK_KINDS)[number];
export const TRUNK_FAMILIES = ['kev', 'decision', 'decider-slots', 'arbiter'] as const;
export type TrunkFamily = (typeof TRUNK_FAMILIES)[number];
/** 'tiny' for the tests; a base's size for measuring (sized.ts). */
export type TrunkSize = 'tiny' | '0.5b' | '0.8b';

/** Debian's Python, which runs the export and the reference forward. */
export const PYTHON = '/usr/bin/python3';
const HERE = fileURLToPath(new URL('.', import.meta.url));
const EXPORT = join(HERE, 'export.py');
export const FORWARD = join(HERE, 'forward.py');

/** A replica: a family on a trunk kind at a size. */
export interface TrunkReplica {
  family: TrunkFamily;
  trunk: TrunkKind;
  size?: TrunkSize;
}

/** How a family's folder is written: its vocabulary, pad id, head settings and its own files. */
interface FamilyFolder {
  /** The layout id's family (assay.json), as the toy replica names it. */
  layout: string;
  vocab: number;
  padId: number;
  /** Head settings export.py and forward.py read (beside the spec). */
  head(size: TrunkSize): Record<string, unknown>;
  /** tokenizer.json, tokenizer_config.json, decision.json, calibration.json. */
  write(out: string): void;
}

const FAMILY_FOLDERS: Record<TrunkFamily, FamilyFolder> = {
  kev: {
    layout: 'kev-pointer',
    vocab: QWEN35_VOCAB,
    padId: QWEN35_IDS.endoftext,
    head: () => ({}),
    write(out) {
      writeQwen35Tokenizer(out);
      writeJson(join(out, 'decision.json'), kevDecision());
      writeJson(join(out, 'calibration.json'), { temperature: [...KEV_REPLICA_TEMPERATURES] });
    },
  },
  decision: {
    layout: 'decision-endpoint',
    vocab: DECISION_PAD_ID + 1,
    padId: DECISION_PAD_ID,
    // the toy replica's head widths (tiny), the published 256 at a base's size
    head: (size) => (size === 'tiny' ? { head_dim: 16, head_mlp: 32 } : { head_dim: 256, head_mlp: 256 }),
    write(out) {
      copyFileSync(QWEN_TOKENIZER.json, join(out, 'tokenizer.json'));
      copyFileSync(QWEN_TOKENIZER.config, join(out, 'tokenizer_config.json'));
      const { temperature: _t, ...limits } = DECISION_CONFIG;
      writeJson(join(out, 'decision.json'), { layout: 'decision-endpoint-v1', ...limits });
      writeJson(join(out, 'calibration.json'), { temperature: Array(3).fill(DECISION_TEMPERATURE) });
    },
  },
  'decider-slots': {
    layout: 'decider-slots',
    vocab: QWEN35_VOCAB,
    padId: QWEN35_IDS.endoftext,
    head: () => ({ labels: slotsLabelTable().ids }),
    write(out) {
      writeQwen35Tokenizer(out);
      // no max_row_tokens: that was the toy replica's position table; these trunks have none
      const { max_row_tokens: _limit, ...decision } = slotsDecision();
      writeJson(join(out, 'decision.json'), decision);
      writeJson(join(out, 'calibration.json'), { temperature: [...SLOTS_TEMPERATURE] });
    },
  },
  arbiter: {
    layout: 'arbiter-fixed',
    vocab: gemmaTestVocab(),
    padId: 0,
    head: () => ({}),
    write(out) {
      writeTestTokenizer(out, gemmaTestTokenizer());
      writeJson(join(out, 'decision.json'), { layout: 'arbiter-fixed-v1', pad_token_id: 0, max_len: ARBITER_MAX_LEN });
      writeJson(join(out, 'calibration.json'), { temperature: [1, 1, 1] });
    },
  },
};

/**
 * How a replica stores its weights and pads its conv: BF16 in external data (a Cast each), as the
 * published exports store their bases, except Arbiter off its own trunk (fp32, as the toy Arbiter
 * replica: a graph whose weights are plain float initializers); the Qwen3.5 conv as transformers
 * and the peer write it (Conv pads K-1 both sides, then Slice) for Kev and decider, as an explicit
 * Pad of K-1 zeros on the left for Decision and Arbiter: both forms reach the tests.
 */
export function storageOf(r: TrunkReplica): { storage: 'bf16' | 'fp32'; conv_padding: string } {
  const storage = r.family === 'arbiter' && r.trunk !== 'gemma3' ? 'fp32' : 'bf16';
  const padLeft = r.family === 'decision' || r.family === 'arbiter';
  return { storage, conv_padding: padLeft ? 'pad-left' : 'symmetric-slice' };
}

export function trunkReplicaName(r: TrunkReplica): string {
  return `${r.family}-${r.trunk}${r.size && r.size !== 'tiny' ? `-${r.size}` : ''}`;
}

export function trunkReplicaDir(r: TrunkReplica): string {
  return fileURLToPath(new URL(`../../models/generated/trunks/${trunkReplicaName(r)}/`, import.meta.url));
}

/** The spec export.py writes a folder from (and config.json keeps): trunk, size, family, seed, storage, head. */
export function trunkSpec(r: TrunkReplica): Record<string, unknown> {
  const f = FAMILY_FOLDERS[r.family];
  const size = r.size ?? 'tiny';
  return {
    trunk: r.trunk,
    family: r.family,
    size,
    vocab: f.vocab,
    seed: TRUNK_REPLICA_SEED,
    pad_id: f.padId,
    head_eps: 1e-6,
    ...storageOf(r),
    ...f.head(size),
  };
}

/** Whether PYTHON has torch and onnx (python3-torch, python3-onnx); when not, warns that `what` is skipped. */
export function hasTorch(what: string): boolean {
  const ok = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch, onnx']).status === 0;
  if (!ok)
    console.warn(
      `${PYTHON} lacks torch or onnx: ${what} is skipped (apt-get install -y --no-install-recommends python3-torch python3-onnx)`,
    );
  return ok;
}

/** Runs export.py on `jobs` in one Python process; its per-job report. */
function runExport(
  jobs: Array<Record<string, unknown>>,
  env: NodeJS.ProcessEnv,
): Promise<Array<Record<string, unknown>>> {
  return new Promise((done, fail) => {
    const child = spawn(PYTHON, [EXPORT], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    child.on('error', fail);
    child.on('close', (code) => {
      if (code !== 0) fail(new Error(`${EXPORT} failed (${code}): ${Buffer.concat(err).toString().slice(-4000)}`));
      else done(JSON.parse(Buffer.concat(out).toString()) as Array<Record<string, unknown>>);
    });
    child.stdin.end(JSON.stringify(jobs));
  });
}

/** `jobs` over `processes` Python processes at once (each job's report in the jobs' order). */
async function runExports(
  jobs: Array<Record<string, unknown>>,
  processes: number,
  env: NodeJS.ProcessEnv,
): Promise<Array<Record<string, unknown>>> {
  const lanes = Array.from({ length: Math.max(1, Math.min(processes, jobs.length)) }, (_, l) =>
    jobs.map((job, i) => ({ job, i })).filter(({ i }) => i % processes === l),
  );
  const reports = new Array<Record<string, unknown>>(jobs.length);
  await Promise.all(
    lanes.map(async (lane) => {
      const got = await runExport(
        lane.map(({ job }) => job),
        env,
      );
      lane.forEach(({ i }, j) => (reports[i] = got[j]!));
    }),
  );
  return reports;
}

/**
 * The replicas' folders: those whose assay.json is current are kept, the others written by
 * `processes` Python runs at once (default: one per core, at most 2; each exports on one thread),
 * each into a scratch folder renamed into place (a reader never sees half a folder).
 */
export async function ensureTrunkReplicas(
  replicas: readonly TrunkReplica[],
  opts: { env?: NodeJS.ProcessEnv; log?: (line: string) => void; processes?: number } = {},
): Promise<string[]> {
  const dirs = replicas.map((r) => resolve(trunkReplicaDir(r)));
  const missing = replicas
    .map((r, i) => ({ r, dir: dirs[i]! }))
    .filter(({ dir }) => readStamp(dir, TRUNK_REPLICA_VERSION, TRUNK_REPLICA_SEED) === null);
  if (!missing.length) return dirs;
  const scratch = missing.map(({ dir }) => scratchBeside(dir));
  try {
    missing.forEach(({ r }, i) => {
      mkdirSync(scratch[i]!, { recursive: true });
      FAMILY_FOLDERS[r.family].write(scratch[i]!);
    });
    opts.log?.(`exporting ${missing.map(({ r }) => trunkReplicaName(r)).join(', ')} (tools/trunks/export.py)`);
    const jobs = missing.map(({ r }, i) => ({
      ...trunkSpec(r),
      out: scratch[i],
      probe: (r.size ?? 'tiny') === 'tiny',
    }));
    const processes = opts.processes ?? Math.min(2, availableParallelism());
    const reports = await runExports(jobs, processes, opts.env ?? process.env);
    missing.forEach(({ r, dir }, i) => {
      const report = reports[i]!;
      writeJson(join(scratch[i]!, 'assay.json'), {
        synthetic: true,
        family: FAMILY_FOLDERS[r.family].layout,
        trunk: r.trunk,
        size: r.size ?? 'tiny',
        generator: 'tools/trunks/replicas.ts',
        generator_version: TRUNK_REPLICA_VERSION,
        seed: TRUNK_REPLICA_SEED,
        digest: report.digest,
        export_seconds: report.seconds,
        export_phases: report.phases,
        warning: 'random weights: the answers are MEANINGLESS',
      });
      rmSync(dir, { recursive: true, force: true });
      try {
        renameSync(scratch[i]!, dir);
      } catch (e) {
        if (readStamp(dir, TRUNK_REPLICA_VERSION, TRUNK_REPLICA_SEED) === null) throw e;
      }
    });
  } finally {
    for (const s of scratch) rmSync(s, { recursive: true, force: true });
  }
  return dirs;
}

/** A folder's config.json (the spec and the weights' digest). */
export function trunkConfig(dir: string): Record<string, unknown> & { digest: string } {
  return JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown> & { digest: string };
}

/** Every family on every trunk kind, tiny. */
export function allTrunkReplicas(): TrunkReplica[] {
  return TRUNK_FAMILIES.flatMap((family) => TRUNK_KINDS.map((trunk) => ({ family, trunk })));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const picked = process.argv.slice(2);
  const all = allTrunkReplicas();
  const replicas = picked.length ? all.filter((r) => picked.includes(trunkReplicaName(r))) : all;
  if (picked.length && replicas.length !== picked.length)
    throw new Error(`unknown replica; known: ${all.map(trunkReplicaName).join(', ')}`);
  for (const dir of await ensureTrunkReplicas(replicas, { log: console.error })) console.log(dir);
}
