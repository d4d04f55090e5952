// The bench's section registry: every section `npm run bench` runs, in the order it runs them, with
// what it measures, how --quick shrinks it and about how long it takes. bench/run.ts runs from it,
// its --help lists it, and bench/README.md is generated from it (npm run docs:bench).
import type { BenchContext, SectionResult } from './lib/context.js';

export type Section = (ctx: BenchContext) => Promise<SectionResult>;

export interface SectionInfo {
  /** The name --only takes, and the section's `id` in the result files. */
  id: string;
  /** What it measures, and on what. */
  measures: string;
  /** What --quick shrinks (every section honours --threads). */
  quick: string;
  /** About how long it takes on a 2-core x86 machine, in seconds: the full run, then --quick. */
  seconds: { full: number; quick: number };
  /** Figures from a run, with the CPU they were measured on (bench/README.md shows them). */
  measured?: string;
  /** Loaded only when the section runs: a section's imports can be heavy (transformers.js, node-llama-cpp). */
  load: () => Promise<Section>;
}

/** bench/results/2026-11-27-residency.md, on the CPU it names. */
const RESIDENCY_MEASURED =
  "AMD EPYC (2 cores, AVX2), 2 threads, 2026-11-27, while another test suite shared the two cores (load average about 5): a cold first request took 13.3 s on tiny fp32 (of which the load 9.0 s), 13.0 s on tiny int8 (8.8 s) and 13.7 s on qwen2.5-0.5b int8 (10.3 s), against 45 ms, 64 ms and 1,073 ms warm (the same loads took about 2 s on the tiny model with the cores free); sizes counted against the budget 758, 636 and 1,478 MiB (each with its 256 MiB prefix cache share). Four clients round-robin over 3 models: 0.82 requests/s with room for 2 (13 loads and 14 evictions in 60 s: a cyclic pattern is the least-recently-used rule's worst case, every switch a load) against 38.9 with all 3 resident ([results](results/2026-11-27-amd-epyc-2c-only-residency.md)).";

/** bench/results/2026-11-27-amd-epyc-2c-only-big-bodies.md and a run of the code before it (`--repo`), back to back. */
const BIG_BODIES_MEASURED =
  "AMD EPYC (2 cores, AVX2), 2 threads, 2026-11-27, while other sessions loaded the two cores (load average about 12), the code before (bodies collected whole on the event loop) and after (sent to the body worker as they arrive, 4 at a time) back to back: /healthz max 703 → 308 ms with 16 clients and 3,101 → 427 ms with 48; the server's event-loop max 362 → 159 ms and 1,664 → 188 ms; RSS peak 817 → 693 MiB and 1,024 → 945 MiB, 5 s after the 48: 966 → 779 MiB. Every body is answered 422 token_budget_exceeded (a 6 MB state is over the tiny model's budget): the engine's planner parses and tokenizes each before refusing it, and holds most of the memory that remains; through the body path alone (an unknown model, refused before the engine) three bursts of 48 peaked at 590–640 MiB and settled at 470–540 MiB ([results](results/2026-11-27-amd-epyc-2c-only-big-bodies.md)).";

/** bench/results/2026-11-29-intel-r-xeon-r-processor-2-80ghz-2c-only-slow-clients.md and HISTORY.md (four runs). */
const SLOW_CLIENTS_MEASURED =
  "Intel Xeon (2 cores, AVX-512 VNNI), 2 threads, 2026-11-29, the cores shared with other sessions (load average 9–10): the normal client's p99 131.3 ms idle and 130.2 ms under the attack (0.99×) in the last of four runs, which ranged from 0.99× to 2.25× with the machine's load; the server's CPU time per answered request was the same with and without the attack (16.76 against 16.77 ms); descriptors 40 → 2,114 at the peak, RSS 519 → 630 MiB ([results](results/2026-11-29-intel-r-xeon-r-processor-2-80ghz-2c-only-slow-clients.md); the runs in [HISTORY.md](results/HISTORY.md)).";

const BATCHES_MEASURED =
  "AMD EPYC (2 cores, AVX-512 VNNI), 2 threads, 2026-11-28, quiet cores, three rounds each (the wall-time ratio is the rounds' median, the latency percentiles pool their samples). Tiny fp32, 10,000 lines: the batch 2.44× faster than the best fan-out (concurrency 4; rounds 2.44×, 2.63×, 2.41×); interactive (4/s) p50 1.07× and p99 1.21× of idle while it drained (355 requests draining, 726 idle); answers equal to 3.8e-7 ([results](results/2026-11-28-amd-epyc-2c-only-batches-tiny-rounds-niced.md)). qwen2.5-0.5b int8, 500 lines: the batch 1.55× faster than the best fan-out (concurrency 1; rounds 1.55×, 1.35×, 1.59×); interactive (0.5/s) p50 1.13× and p99 1.02× of idle (101 requests draining, 66 idle); answers equal exactly, 0 on 50 sampled lines ([results](results/2026-11-28-amd-epyc-2c-only-batches-0.5b-stems.md); the runs and why in [HISTORY.md](results/HISTORY.md))";

export const SECTIONS: SectionInfo[] = [
  {
    id: 'shared',
    measures:
      'One request of k questions (one prefix pass, then the questions) against each question asked alone, prefix cache off: the speed-up at 256, 2,000 and 8,000-token states × 1, 4, 16 questions; qwen2.5-0.5b int8, and fp32 at 2,000 × 16.',
    quick: 'the 256-token state only, 2 rounds',
    seconds: { full: 290, quick: 25 },
    load: async () => (await import('./engine/shared.js')).sharedSection,
  },
  {
    id: 'roofline',
    measures:
      "Prefill tokens/s against the machine's int8 MatMul ceiling (a one-layer graph with the model's own weight shapes, same threads), at 512 and 2,000 tokens.",
    quick: '512 tokens only, fewer samples',
    seconds: { full: 30, quick: 15 },
    load: async () => (await import('./roofline.js')).rooflineSection,
  },
  {
    id: 'cache',
    measures:
      'The cross-request prefix cache: the same 2,000-token state × 4 questions asked again (a hit) against an engine with the cache off; whether the hit answers exactly as the miss did.',
    quick: 'a 256-token state, 3 rounds',
    seconds: { full: 30, quick: 10 },
    load: async () => (await import('./engine/cache.js')).cacheSection,
  },
  {
    id: 'single-question',
    measures:
      "One question per request about the same state (tiny model, cache on as `assay serve` has it): requests 3..8 against the first, and a one-off request's admission bookkeeping against the cache off.",
    quick: 'a 1,000-token state, 2 rounds',
    seconds: { full: 10, quick: 5 },
    load: async () => (await import('./engine/single-question.js')).singleQuestionSection,
  },
  {
    id: 'per-token-int8',
    measures:
      'What the per-token int8 rewrite costs: the int8 engine rows (256 and 2,000-token states × 1–16 questions, prefix cache off) on an engine with the rewrite on and one with it off, the same request on both back to back (A, B, then B, A), the on / off ratio per row with p10–p90 over 24 rounds (6 at 2,000 tokens); goal ≤ 1.05×.',
    quick: 'the 256-token state only, 8 rounds',
    seconds: { full: 240, quick: 40 },
    load: async () => (await import('./engine/per-token-int8.js')).perTokenInt8Section,
  },
  {
    id: 'fused-attention',
    measures:
      'Fused attention (GroupQueryAttention, rewritten at load) on vs off, interleaved in the same rounds: prefill of 256 / 1,000 / 2,000 / 4,000 tokens, 256 and 2,000-token states × 16 questions (prefix cache off), the peak RSS of a 4,000-token request (a fresh process per side) and the per-operator profile of a 2,000-token pass on both graphs; goals 2,000-token prefill ≥ 1.4×, 4,000 ≥ 1.7×, peak RSS lower.',
    quick: '256 and 1,000-token prefill, 256 × 16 questions, a 1,000-token RSS and profile',
    seconds: { full: 420, quick: 90 },
    load: async () => (await import('./engine/fused-attention.js')).fusedAttentionSection,
  },
  {
    id: 'families',
    measures:
      "The Laya family at the published shapes (ModernBERT-large 421M fp32 and int8, mmBERT-base fp32; synthetic replicas): 1 / 5 / 20 questions on 128 / 512 / 1,024-token states through Assay as served beside onnxruntime running the same rows directly (Assay / bare per round, goal ≤ 1.05), rows batched against one by one, and tokens/s against the CPU's GEMM ceiling.",
    quick: 'the tiny replica, 1 × 128 and 5 × 512',
    seconds: { full: 900, quick: 20 },
    load: async () => (await import('./engine/families.js')).familiesSection,
  },
  {
    id: 'decision-families',
    measures:
      "The label-token contracts on decoders, decider's (decider-labels) and one declared in the folder (label-tokens, a generic chat contract), on synthetic int8 decoders of Qwen2.5-0.5B's and Qwen3.5-0.8B's size: 1 / 5 / 16 questions (the first public client's mix) on 256 / 2,000-token states through Assay as served (the state's KV encoded once; and again with the state seen) against the same contract without reuse (each question its own request, prefix cache and packing off), interleaved per round; no reuse / Assay. ASSAY_BENCH_CONTRACTS, _CONTRACT_SHAPES, _CONTRACT_CELLS pick a part.",
    quick: 'the 0.5B shape, 1 and 16 questions on a 256-token state, both contracts',
    seconds: { full: 4000, quick: 400 },
    load: async () => (await import('./engine/decision-families.js')).decisionFamiliesSection,
  },
  {
    id: 'row-families',
    measures:
      "The causal-row families with the state read once (the export rewritten at load) against whole rows (`--no-graph-rewrite`), both through the family loader as served, in one run, on Kev replicas of the real trunks at the published sizes (Qwen3 attention-only at Qwen2.5-0.5B's size, the Qwen3.5 hybrid with Gated DeltaNet at Qwen3.5-0.8B's; BF16 weights in fp32): 1 / 5 / 16 questions on new 256 / 2,000-token states and on a state already sent (a prefix cache hit), interleaved per round, answers compared; then 2 questions on 64 / 128 / 256 / 512-token states, the shortest from which reuse pays. Goals: 16 questions ≤ 2.5× one on new 2,000-token states, a state already sent ≤ 0.3× a new one, one question ≤ 1.05× a whole row, Kev 0.5B 16 × 2,000 ≥ 8× faster than whole rows. ASSAY_BENCH_ROW_FAMILIES, _TRUNKS (`qwen3:tiny,qwen35:tiny`: the test replicas, a smoke), _CELLS, _THRESHOLD pick a part; ASSAY_BENCH_ROW_TOY=1 the former toy-trunk section (whole rows one by one, batched, bare).",
    quick:
      'the 0.5B attention-only replica, one round of 1 and 16 questions on a 256-token state and 1 on 2,000 tokens (ASSAY_BENCH_ROW_CELLS=1x2000,16x2000 for the headline cell, about 8 min more); the threshold at 64 and 256 tokens',
    seconds: { full: 3300, quick: 300 },
    load: async () => (await import('./engine/row-reuse-families.js')).rowFamiliesSection,
  },
  {
    id: 'transformersjs',
    measures:
      'Side by side with transformers.js on the same model folder and the same token ids: a full forward per question, and with its own KV cache reuse; whether its logits equal ours.',
    quick: 'smaller states and fewer questions',
    seconds: { full: 150, quick: 40 },
    load: async () => (await import('./transformersjs.js')).transformersSection,
  },
  {
    id: 'workloads',
    measures:
      'Client-shaped workloads through the engine in-process: (a) ~9 questions on a 300-token state, (b) one question on a 150 and a 1,250-token state; requests/s and latency.',
    quick: 'fewer requests',
    seconds: { full: 30, quick: 10 },
    load: async () => (await import('./workloads.js')).workloadsSection,
  },
  {
    id: 'http',
    measures:
      "The real server (`assay serve`) on loopback under autocannon at concurrency 1, 8 and 32 with workload (a) bodies; the server's own overhead per request (Server-Timing total minus the engine).",
    quick: 'the tiny model, fewer requests',
    seconds: { full: 60, quick: 10 },
    load: async () => (await import('./http.js')).httpSection,
  },
  {
    id: 'serving',
    measures:
      'The server under a mixed heavy load (huge option lists, 400 questions, a ~32k-token state, deep nesting, long blank states) on the tiny model: its event-loop delay, `/healthz` and one-question latency.',
    quick: '30 s of load instead of 90 s',
    seconds: { full: 95, quick: 35 },
    load: async () => (await import('./serving.js')).servingSection,
  },
  {
    id: 'big-bodies',
    measures:
      "Bursts of big single bodies (16, then 48 clients each sending a ~6 MB valid body at once, tiny model, `assay serve` on loopback): `/healthz` p99 and max on fresh connections every ~20 ms, the server's event-loop delay, its RSS before, at the peak and 5 s after, the requests' statuses.",
    quick: 'the 16-client burst only',
    seconds: { full: 50, quick: 20 },
    measured: BIG_BODIES_MEASURED,
    load: async () => (await import('./big-bodies.js')).bigBodiesSection,
  },
  {
    id: 'slow-clients',
    measures:
      "A normal client's latency (one-question requests back to back, tiny model, `assay serve` on loopback, default timeouts) idle and while 1,000 connections trickle headers a byte a second, 1,000 idle keep-alive sockets sit open, a 6 MB response is read a byte a second and a body is uploaded at 1 KB/s: p50 / p99 (goal p99 ≤ 1.5× idle), the server's descriptors and RSS at the peak, the connections it cut.",
    quick: '15 s per phase instead of 40',
    seconds: { full: 100, quick: 45 },
    measured: SLOW_CLIENTS_MEASURED,
    load: async () => (await import('./slow-clients.js')).slowClientsSection,
  },
  {
    id: 'engine-death',
    measures:
      'The engine thread killed under load (server in-process, tiny model): no request hangs or gets a 500; how long until `/healthz` reads 503, and 200 again.',
    quick: 'the same run',
    seconds: { full: 10, quick: 10 },
    load: async () => (await import('./engine-death.js')).engineDeathSection,
  },
  {
    id: 'tracing',
    measures:
      'OpenTelemetry traces on (OTLP/HTTP JSON to a sink in the bench) against off: two `assay serve` processes on the tiny model, sequential 3-question requests in interleaved rounds (order swapped each round); p50 and p99 of the client latency.',
    quick: '3 rounds of 20 requests (full: 10 of 50)',
    seconds: { full: 60, quick: 25 },
    measured:
      'Intel Xeon @ 2.80 GHz (2 cores, AVX-512 VNNI), 2 threads, 2026-11-29, cores shared with other sessions (interleaved rounds): p50 27.15 ms off, 27.49 ms on (+1.3%), p99 148.8 / 147.4 ms, 500 requests each, 14 OTLP exports ([results](results/2026-11-29-intel-r-xeon-r-processor-2-80ghz-2c-only-tracing.md)).',
    load: async () => (await import('./tracing.js')).tracingSection,
  },
  {
    id: 'residency',
    measures:
      'Model residency (the pool in-process, as `assay serve` runs it): the first request on a cold model (its load, then the answer) against the same request warm, per model size and flavor (tiny fp32 and int8, qwen2.5-0.5b int8); and four clients round-robin over three models with room for two of them, against all three resident.',
    quick: 'tiny fp32 and int8 only; 20 s of churn instead of 60 s',
    seconds: { full: 200, quick: 70 },
    measured: RESIDENCY_MEASURED,
    load: async () => (await import('./residency.js')).residencySection,
  },
  {
    id: 'batches',
    measures:
      "Batch jobs (`/v1/batches`, `assay serve` as a child): the wall time of a 10,000-line batch (200 tickets of 100–300 tokens × 50 questions, mixed types, one question a line; its results read while it runs) against the same lines sent one by one through the official TypeScript SDK at concurrency 1, 4, 16 and 64 (best fan-out / batch, goal ≥ 1.3×), and the p50 / p99 of a light open-loop interactive load (3 questions, 4/s, 0.5/s on 0.5B: a p99 needs over 100 samples in a drain of about 35 s) while a batch drains over the same load idle (goal ≤ 1.25×); tiny model, and qwen2.5-0.5b int8 at 500 lines (10 tickets); the batch's answers equal the fan-out's on sampled lines (1e-6). Three rounds (the first with every concurrency, the later ones with the best): the wall-time ratio is the rounds' median, the latency percentiles pool their samples. ASSAY_BENCH_BATCH_SHAPES, _LINES, _CONCURRENCY, _IDLE_S, _RPS, _ROUNDS pick a part.",
    quick: 'the tiny model only, 1,000 lines, 20 s of idle load, one round',
    seconds: { full: 5400, quick: 400 },
    measured: BATCHES_MEASURED,
    load: async () => (await import('./batches.js')).batchesSection,
  },
  {
    id: 'scaleout',
    measures:
      'Three replicas behind nginx, routed by state hash (as the ingress routes) against round robin, on a Zipf-distributed set of states: cache hits and latency. Needs nginx.',
    quick: '240 requests on 300-token states (720 on 600)',
    seconds: { full: 30, quick: 15 },
    load: async () => (await import('./scaleout.js')).scaleoutSection,
  },
  {
    id: 'packing',
    measures:
      'Packed evaluation against one pass per question (workload (a), 2,000 tokens × 16), and passes shared across concurrent requests (`batchTokens`) against one pass each, interleaved.',
    quick: 'a 1,000-token long state, 3 rounds',
    seconds: { full: 180, quick: 60 },
    load: async () => (await import('./engine/packing.js')).packingSection,
  },
  {
    id: 'peers',
    measures:
      'The real peers on the same weights: node-llama-cpp (its structured decisions) and llama.cpp by hand, Q8_0 against our int8 and Q4_0 against our q4, the four workloads timed in one interleaved loop, same threads; prefill rows are the median of 3 passes after one at the same size, both sides interleaved; our q4 prefill against our int8 prefill, interleaved; installs node-llama-cpp on demand outside the project.',
    quick: 'a 1,000-token state, 2 rounds, prefill at 256 and 512 tokens',
    seconds: { full: 390, quick: 225 },
    load: async () => (await import('./peers/section.js')).peersSection,
  },
];

export const SECTION_IDS = SECTIONS.map((s) => s.id);
