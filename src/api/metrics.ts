// Prometheus metrics on a private prom-client Registry. Labels carry only route templates,
// methods, status codes and model ids: never anything a request contained.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { EngineStats, KernelPaths } from '../engine/index.js';
import {
  escalationCounts,
  type EngineSnapshot,
  type EscalationCounts,
  type ModelProvider,
  type ResidencyCounts,
  type ResidencyView,
} from '../service/index.js';

export interface Metrics {
  registry: Registry;
  /** One finished HTTP request. `route` is the route template (or "unmatched"). */
  observe(method: string, route: string, status: number, seconds: number): void;
  inFlight(route: string, delta: 1 | -1): void;
  /** Billable input tokens of an answered request. */
  inputTokens(model: string, n: number): void;
  /** One batch line answered (ok) or failed, and its input tokens. */
  batchLine(ok: boolean, inputTokens: number): void;
  text(): Promise<string>;
  contentType: string;
}

export function createMetrics(
  engines: () => EngineSnapshot[],
  kernels?: KernelPaths,
  restarts: () => Record<string, number> = () => ({}),
  residency?: Pick<ModelProvider, 'residency' | 'counts'>,
): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'assay_' });
  if (kernels) {
    // An info gauge (value 1): which int8 / 4-bit kernels onnxruntime runs on this CPU.
    new Gauge({
      name: 'assay_cpu_kernels_info',
      help: 'The CPU and the int8 / 4-bit kernel paths onnxruntime runs on it (int8_exact 0: int8 answers drift from fp32)',
      labelNames: ['cpu', 'flags', 'int8', 'q4', 'int8_exact'] as const,
      registers: [registry],
    }).set(
      {
        cpu: kernels.cpu,
        flags: kernels.flags,
        int8: kernels.int8,
        q4: kernels.q4,
        int8_exact: kernels.int8Exact ? '1' : '0',
      },
      1,
    );
  }

  const requests = new Counter({
    name: 'assay_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'assay_http_request_duration_seconds',
    help: 'HTTP request latency, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  const inflight = new Gauge({
    name: 'assay_http_requests_in_flight',
    help: 'HTTP requests being processed, by route template',
    labelNames: ['route'] as const,
    registers: [registry],
  });
  const billed = new Counter({
    name: 'assay_input_tokens_total',
    help: 'Billable input tokens of answered requests (usage.input_tokens), by model',
    labelNames: ['model'] as const,
    registers: [registry],
  });

  const batchLines = new Counter({
    name: 'assay_batch_lines_total',
    help: 'Batch lines answered, by result (completed: a 200 response; failed: an error line)',
    labelNames: ['result'] as const,
    registers: [registry],
  });
  const batchTokens = new Counter({
    name: 'assay_batch_input_tokens_total',
    help: "Input tokens of answered batch lines (their usage.input_tokens), charged to their key's token budget",
    registers: [registry],
  });

  // Engine figures are read from each loaded evaluator's stats() at scrape time.
  const engineGauge = (name: string, help: string, pick: (s: EngineStats) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['model'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const e of engines()) this.set({ model: e.model }, pick(e.stats));
      },
    });
  const engineCounter = (name: string, help: string, pick: (s: EngineStats) => number) =>
    new Counter({
      name,
      help,
      labelNames: ['model'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const e of engines()) this.inc({ model: e.model }, pick(e.stats));
      },
    });
  engineCounter(
    'assay_engine_tokens_evaluated_total',
    'Tokens run through the model (after prefix-cache reuse)',
    (s) => s.tokensEvaluated,
  );
  engineCounter(
    'assay_engine_passes_total',
    'Forward passes run (prefill chunks, prefixes, packed question passes)',
    (s) => s.passes,
  );
  engineCounter('assay_prefix_cache_hits_total', 'Prefix KV cache hits', (s) => s.prefixCacheHits);
  engineCounter('assay_prefix_cache_misses_total', 'Prefix KV cache misses', (s) => s.prefixCacheMisses);
  // A counter per model id read at scrape time from `values` (engine restarts, escalations).
  const modelCounter = (name: string, help: string, values: () => Record<string, number>) =>
    new Counter({
      name,
      help,
      labelNames: ['model'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const [model, n] of Object.entries(values())) this.inc({ model }, n);
      },
    });
  modelCounter(
    'assay_engine_restarts_total',
    'Engine threads that died (exited, or an error escaped them) and were restarted, by model',
    restarts,
  );
  // Escalating models (docs/escalation.md): questions asked, re-asked to the second model, re-asks that failed.
  const escalation = (pick: (c: EscalationCounts) => number) => () =>
    Object.fromEntries(Object.entries(escalationCounts()).map(([id, c]) => [id, pick(c)]));
  modelCounter(
    'assay_escalation_questions_total',
    'Questions answered by an escalating model, by its versioned id',
    escalation((c) => c.questions),
  );
  modelCounter(
    'assay_escalated_questions_total',
    'Questions an escalating model re-asked to its second model (certainty under the threshold)',
    escalation((c) => c.escalated),
  );
  modelCounter(
    'assay_escalation_failures_total',
    'Re-asks whose second model failed or missed its deadline (the first answers kept, or a 503)',
    escalation((c) => c.failed),
  );
  if (residency) residencyMetrics(registry, residency, modelCounter);
  engineGauge('assay_prefix_cache_bytes', 'Bytes held by the prefix KV cache', (s) => s.prefixCacheBytes);
  engineGauge('assay_engine_queue_depth', 'Requests waiting for the engine', (s) => s.queueDepth);
  engineGauge('assay_engine_running', 'Requests the engine is running', (s) => s.running);
  engineGauge(
    'assay_engine_batch_queue_depth',
    'Batch-lane requests waiting for the engine (not in assay_engine_queue_depth)',
    (s) => s.batchQueueDepth,
  );
  // Which family each loaded model is, and whether it reuses a state's KV (the decoder engine's
  // families) or reads the state again in every row (a row family whose rows run whole: its prefix
  // cache figures stay 0), as the loaded model says (EngineStats.prefixReuse).
  new Gauge({
    name: 'assay_model_family',
    help: "1 per loaded model, labelled with its family and whether it reuses a state's prefix KV across questions and requests",
    labelNames: ['model', 'family', 'prefix_reuse'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const e of engines())
        this.set({ model: e.model, family: e.stats.family, prefix_reuse: String(e.stats.prefixReuse) }, 1);
    },
  });

  return {
    registry,
    observe(method, route, status, seconds) {
      const labels = { method, route, status: String(status) };
      requests.inc(labels);
      latency.observe(labels, seconds);
    },
    inFlight(route, delta) {
      inflight.inc({ route }, delta);
    },
    inputTokens(model, n) {
      billed.inc({ model }, n);
    },
    batchLine(ok, n) {
      batchLines.inc({ result: ok ? 'completed' : 'failed' });
      batchTokens.inc(n);
    },
    text: () => registry.metrics(),
    contentType: registry.contentType,
  };
}

/** Residency (docs/operations.md#model-residency): sizes, the limits, loads, unloads by cause, waits for room. */
function residencyMetrics(
  registry: Registry,
  models: Pick<ModelProvider, 'residency' | 'counts'>,
  modelCounter: (name: string, help: string, values: () => Record<string, number>) => unknown,
): void {
  const counts = () => models.counts?.() ?? {};
  const per = (pick: (c: ResidencyCounts) => number) => () =>
    Object.fromEntries(Object.entries(counts()).map(([id, c]) => [id, pick(c)]));
  new Gauge({
    name: 'assay_model_resident_bytes',
    help: "A resident model's measured size: RSS growth over its load plus its prefix cache, by model",
    labelNames: ['model'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const m of models.residency?.().models ?? []) this.set({ model: m.model }, m.size_bytes);
    },
  });
  const limit = (name: string, help: string, pick: (v: ResidencyView) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const v = models.residency?.();
        if (v) this.set(Number.isFinite(pick(v)) ? pick(v) : -1);
      },
    });
  limit(
    'assay_memory_budget_bytes',
    "The resident models' memory budget (--memory-budget)",
    (v) => v.memory_budget_bytes,
  );
  limit('assay_max_loaded_models', 'Most models resident at once (--max-loaded-models)', (v) => v.max_loaded_models);
  limit('assay_models_resident', 'Models resident or loading now', (v) => v.models.length);
  modelCounter(
    'assay_model_loads_total',
    'Model loads, by model',
    per((c) => c.loads),
  );
  modelCounter(
    'assay_model_load_seconds_total',
    'Seconds spent loading, by model (over loads_total: the mean load time)',
    per((c) => c.loadSeconds),
  );
  modelCounter(
    'assay_model_slot_waits_total',
    'Requests that waited for room to load their model, by model',
    per((c) => c.slotWaits),
  );
  new Counter({
    name: 'assay_model_unloads_total',
    help: 'Model unloads, by model and cause (evicted, expired, operator, registry, too_large)',
    labelNames: ['model', 'cause'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [model, c] of Object.entries(counts()))
        for (const [cause, n] of Object.entries(c.unloads)) this.inc({ model, cause }, n);
    },
  });
}
