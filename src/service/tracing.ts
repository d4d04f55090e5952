// Spans of Assay's own stages (docs/operations.md#tracing), through the OpenTelemetry API: with no
// SDK started (tracing off, the default) every call here is a no-op on a non-recording span, and the
// engine is not even asked to time its stages. Attributes are counts, ids the server made and
// stage names: never the state, questions, instructions, option names or question ids.
import { context, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import type { StageSpan } from '../engine/index.js';
import { packageVersion } from '../common/index.js';

const tracer = () => trace.getTracer('assay', packageVersion());

/** Whether the current request is being traced (a recording span is active). */
export function tracing(): boolean {
  return trace.getActiveSpan()?.isRecording() ?? false;
}

/** Runs `work` in a span named `assay.<name>` (a child of the active span, or a root), when tracing. */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  work: (span?: Span) => Promise<T>,
  root = false,
): Promise<T> {
  if (!root && !tracing()) return work();
  return tracer().startActiveSpan(`assay.${name}`, { attributes, ...(root ? { root: true } : {}) }, async (span) => {
    if (!span.isRecording()) {
      span.end();
      return work();
    }
    try {
      return await work(span);
    } catch (error) {
      // The error's type only: its message could quote the request.
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', (error as Error)?.constructor?.name ?? 'Error');
      throw error;
    } finally {
      span.end();
    }
  });
}

/** The engine's stages of one request (timed in its thread), as child spans of `parent`. */
export function stageSpans(stages: StageSpan[] | undefined, parent: Context = context.active()): void {
  if (!stages) return;
  let pass = 0;
  for (const s of stages) {
    const attributes: Attributes =
      s.name === 'engine_pass' ? { 'assay.pass': pass++, 'assay.tokens': s.tokens ?? 0 } : {};
    tracer().startSpan(`assay.${s.name}`, { startTime: s.start, attributes }, parent).end(s.end);
  }
}
