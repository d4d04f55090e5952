// OpenTelemetry traces of `assay serve` (docs/operations.md#tracing): off by default, on by the
// standard variables (OTEL_TRACES_EXPORTER=otlp, or an OTLP endpoint: OTEL_EXPORTER_OTLP_ENDPOINT /
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; OTEL_SDK_DISABLED=true wins), exported over OTLP as
// OTEL_EXPORTER_OTLP_PROTOCOL says (http/protobuf by default, http/json, grpc). @fastify/otel makes
// the request's span and its hooks' (incoming traceparent honoured); Assay's own stages are
// service/tracing.ts's. Before export, every span is held to zero data retention: url.path becomes
// the route template (a path or query can carry content), exception events and status messages
// (an error's message can quote the request) keep only the error's type.
import type { Attributes } from '@opentelemetry/api';
import type { ReadableSpan, Span, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';

type Env = Record<string, string | undefined>;

/** Whether the environment asks for traces. */
export function tracingWanted(env: Env): boolean {
  if ((env.OTEL_SDK_DISABLED ?? '').toLowerCase() === 'true') return false;
  const exporter = (env.OTEL_TRACES_EXPORTER ?? '').toLowerCase();
  if (exporter === 'none') return false;
  return (
    exporter.split(',').includes('otlp') ||
    !!env.OTEL_EXPORTER_OTLP_ENDPOINT ||
    !!env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
  );
}

/** Attribute keys that could carry a caller's content, dropped before export. */
const DROPPED = /^(url\.query|url\.full|http\.request\.header\.|http\.request\.body|user_agent\.)/;

/** Holds each ended span to what Assay may record (it runs first: the exporter sees the result). */
export class ContentScrubber implements SpanProcessor {
  onStart(_span: Span): void {}
  onEnd(span: ReadableSpan): void {
    const attributes = span.attributes as Attributes;
    for (const key of Object.keys(attributes)) if (DROPPED.test(key)) delete attributes[key];
    if ('url.path' in attributes) attributes['url.path'] = attributes['http.route'] ?? 'unmatched';
    const writable = span as { status: ReadableSpan['status']; events: ReadableSpan['events'] };
    if (writable.status.message !== undefined) writable.status = { code: writable.status.code };
    for (const event of writable.events) {
      const a = event.attributes;
      if (!a) continue;
      for (const key of Object.keys(a)) if (key !== 'exception.type') delete a[key];
    }
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    return Promise.resolve();
  }
}

async function exporterFor(env: Env): Promise<SpanExporter> {
  const protocol = (
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ??
    env.OTEL_EXPORTER_OTLP_PROTOCOL ??
    'http/protobuf'
  ).toLowerCase();
  if (protocol === 'http/json')
    return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  if (protocol === 'grpc') return new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter();
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
}

export interface Tracing {
  /** Where spans go, for the startup log. */
  describe: string;
  /** Flushes the spans still held and stops. */
  shutdown(): Promise<void>;
}

/** Starts the SDK when the environment asks (before the server is built: @fastify/otel hooks Fastify's creation). */
export async function startTracing(env: Env = process.env): Promise<Tracing | undefined> {
  if (!tracingWanted(env)) return undefined;
  const [{ NodeSDK }, { BatchSpanProcessor }, { FastifyOtelInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@fastify/otel'),
  ]);
  const sdk = new NodeSDK({
    ...(env.OTEL_SERVICE_NAME ? {} : { serviceName: 'assay' }),
    spanProcessors: [new ContentScrubber(), new BatchSpanProcessor(await exporterFor(env))],
    instrumentations: [
      new FastifyOtelInstrumentation({
        registerOnInitialization: true,
        // An exception's message can quote the request: the span keeps its status only.
        recordExceptions: false,
      }),
    ],
  });
  sdk.start();
  const endpoint =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT ?? 'the default OTLP endpoint';
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf';
  return { describe: `OTLP ${protocol} to ${endpoint}`, shutdown: () => sdk.shutdown() };
}
