// Loaded by /docs (Swagger UI, as its theme script): its "try it out" calls to POST /v1/systemone
// carry x-assay-state-hash, the hex sha256 of the state's JSON, as the client SDK's do, so a proxy
// routes them to the replica that holds the state (docs/scale-out.md). A classic script: no imports.

interface SwaggerRequest {
  url: string;
  method?: string;
  body?: unknown;
  headers: Record<string, string>;
}
async function withStateHash(req: SwaggerRequest): Promise<SwaggerRequest> {
  if ((req.method ?? '').toUpperCase() !== 'POST' || typeof req.body !== 'string' || !globalThis.crypto?.subtle)
    return req;
  if (!new URL(req.url, location.href).pathname.endsWith('/v1/systemone')) return req;
  try {
    const body = JSON.parse(req.body) as { state?: unknown };
    if (body.state === undefined) return req;
    const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(JSON.stringify(body.state)));
    req.headers['x-assay-state-hash'] = [...new Uint8Array(digest)]
      .map((b) => b.toString(16).padStart(2, '0'))
      .join('');
  } catch {
    // Not JSON: the server answers json_invalid; no hash to send.
  }
  return req;
}

// The /docs page's requestInterceptor (src/api/routes/pages.ts) hands every call to this.
(globalThis as unknown as { assayStateHash: typeof withStateHash }).assayStateHash = withStateHash;
