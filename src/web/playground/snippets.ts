// "Copy as curl" and "copy as client SDK code": the same request, the key left to the environment.
import type { EvaluateRequest } from './api.js';

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

export function curlOf(origin: string, request: EvaluateRequest, hash: string | undefined): string {
  return [
    `curl -sS ${origin}/v1/systemone`,
    `  -H "Authorization: Bearer $ASSAY_API_KEY"`,
    `  -H 'Content-Type: application/json'`,
    ...(hash ? [`  -H 'x-assay-state-hash: ${hash}'`] : []),
    `  -d ${shellQuote(JSON.stringify(request))}`,
  ].join(' \\\n');
}

export function sdkOf(origin: string, request: EvaluateRequest): string {
  return [
    `import { AssayClient } from 'assay/client';`,
    ``,
    `// The key from ASSAY_API_KEY; the SDK sends x-assay-state-hash itself.`,
    `const client = new AssayClient({ baseUrl: ${JSON.stringify(origin)} });`,
    `const { answers, usage } = await client.evaluate(${JSON.stringify(request, null, 2).replaceAll('\n', '\n')});`,
    `console.log(answers, usage);`,
  ].join('\n');
}
