// The browser pages, off the API's request path: /docs (Swagger UI on the server's own OpenAPI
// document, assets from the installed package, no CDN) and /playground (a static page compiled from
// src/web, with a strict Content-Security-Policy and no inline script or style). Both add a state
// hash to the calls they make, as the client SDK does (docs/scale-out.md). /playground/models is
// GET /v1/models for the page (same key, same rate limit) with each model's synthetic flag, so the
// page can say loudly that a model's answers are meaningless.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fastifyStatic from '@fastify/static';
import fastifySwaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { listModels, resolveModel } from '../../registry/index.js';
import { escalationModels } from '../../service/index.js';
import type { ApiContext } from '../context.js';
import { admission, keyAllows } from '../admission.js';

/** The package's folder, found from src/ (tests, tsx) and from dist/ alike. */
function packageDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('package.json not found above src/api/routes');
    dir = up;
  }
  return dir;
}

/** dist/web: the compiled pages (`npm run build`). */
const webDir = (): string => join(packageDir(), 'dist', 'web');

/**
 * The playground's one-click example: held-out lines of the task tiny-tasks-1 was trained on (never
 * seen in training), so a newcomer sees right answers without fetching a real model.
 */
const TASK_EXAMPLES = { model: 'tiny-tasks-1', file: join('examples', 'tiny-tasks-heldout.jsonl') };

function taskExamples(ctx: ApiContext): unknown[] {
  const file = join(packageDir(), TASK_EXAMPLES.file);
  if (!resolveModel(ctx.registry, TASK_EXAMPLES.model) || !existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim())
    .map((line) => {
      const { state, questions, expected } = JSON.parse(line) as Record<string, unknown>;
      return { model: TASK_EXAMPLES.model, state, questions, expected };
    });
}

/**
 * Swagger UI's requestInterceptor. @fastify/swagger-ui writes its source text into the page's
 * initializer, where it hands each "try it out" call to the state-hash script, if loaded.
 */
const requestInterceptor = <T>(req: T): T | Promise<T> => {
  const hash = (globalThis as { assayStateHash?: (r: T) => Promise<T> }).assayStateHash;
  return hash ? hash(req) : req;
};

/** Assay's look on Swagger UI: its own heading over the page, the API's title in the playground's ink. */
const DOCS_STYLE = `
body { margin: 0; }
body::before { content: 'Assay'; display: block; padding: 14px 24px; background: #1d3557; color: #f1faee;
  font: 600 20px/1.2 system-ui, sans-serif; letter-spacing: .02em; }
.swagger-ui .info .title { color: #1d3557; }
.swagger-ui .info { margin: 28px 0 12px; }
`;

/** A small mark for the tab (no Swagger or Fastify logo). */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" ' +
  'rx="3" fill="#1d3557"/><path d="M4 12 8 3l4 9M5.6 8.6h4.8" stroke="#f1faee" ' +
  'stroke-width="1.6" fill="none"/></svg>';

const DOCS_CSP = {
  'default-src': "'self'",
  'base-uri': "'self'",
  'script-src': "'self'",
  'script-src-attr': "'none'",
  'style-src': "'self' 'unsafe-inline'",
  'img-src': "'self' data:",
  'font-src': "'self' data:",
  'connect-src': "'self'",
  'object-src': "'none'",
  'frame-ancestors': "'none'",
};

/** The playground's policy: its own scripts, styles and API only; no framing, no plugins. */
const PLAYGROUND_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export interface PagesOptions {
  docs: boolean;
  playground: boolean;
}

export async function pagesRoutes(app: FastifyInstance, o: PagesOptions): Promise<void> {
  const ctx = app.assay;
  if (!o.docs && !o.playground) return;
  const web = webDir();
  if (!existsSync(join(web, 'playground', 'main.js'))) {
    app.log.warn(`${web} is missing (run \`npm run build\`): /docs and /playground are off`);
    return;
  }

  if (o.docs) {
    await app.register(fastifySwaggerUi, {
      routePrefix: '/docs',
      // The plugin's default CSP allows https: styles and fonts (CDNs) and upgrades requests to https
      // (which breaks a server on plain http off localhost). Ours: the package's own assets only;
      // inline styles because Swagger UI's components set them.
      staticCSP: DOCS_CSP,
      // "Try it out" starts off: docs/browser.md says to press it (pressing an active one turns it off).
      uiConfig: {
        // No top bar: no Fastify logo, no "Explore" box with the document's URL; the page opens
        // on the API's own title, version and description.
        layout: 'BaseLayout',
        docExpansion: 'list',
        tryItOutEnabled: false,
        persistAuthorization: false,
        displayRequestDuration: true,
        defaultModelsExpandDepth: 0,
        requestInterceptor,
      },
      // Adds x-assay-state-hash to "try it out" calls (src/web/docs/state-hash.ts).
      theme: {
        title: 'Assay API reference',
        css: [{ filename: 'assay.css', content: DOCS_STYLE }],
        favicon: [{ filename: 'favicon.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: FAVICON }],
        js: [{ filename: 'state-hash.js', content: readFileSync(join(web, 'docs', 'state-hash.js'), 'utf8') }],
      },
    });
  }

  if (o.playground) {
    await app.register(fastifyStatic, {
      root: join(web, 'playground'),
      prefix: '/playground/',
      decorateReply: false,
      index: false,
      setHeaders: (reply) => void reply.header('content-security-policy', PLAYGROUND_CSP),
    });
    const page = readFileSync(join(web, 'playground.html'));
    const css = readFileSync(join(web, 'playground.css'));
    app.get('/playground', async (_req, reply) =>
      reply.header('content-security-policy', PLAYGROUND_CSP).type('text/html; charset=utf-8').send(page),
    );
    app.get('/playground/style.css', async (_req, reply) => reply.type('text/css; charset=utf-8').send(css));
    app.get('/playground/models', { onRequest: admission(ctx) }, async (req) => {
      const key = req.apiKey!;
      // Warm: resident now (an escalating entry: its local models), so the first request skips the load.
      const resident = new Set(ctx.models.loaded().map((e) => e.model));
      const models = listModels(ctx.registry, (name, id) => keyAllows(key, name, id)).map(
        ({ metadata, resolved: m }) => {
          // Generated with random weights (trained weights make a synthetic folder meaningful).
          const synthetic = m.entry.synthetic !== undefined && m.entry.synthetic.weights === undefined;
          // Trained weights on a tiny graph: it knows its training task and nothing else.
          const task_only = m.entry.synthetic?.weights !== undefined;
          const spec = m.entry.escalate;
          const local = spec ? escalationModels(ctx.registry, spec) : [m.id];
          const warm = local.every((id) => resident.has(id));
          return { ...metadata, synthetic, task_only, warm, confidence: ctx.confidence };
        },
      );
      return { models };
    });
    let examples: unknown[] | undefined;
    app.get('/playground/examples', async () => ({ examples: (examples ??= taskExamples(ctx)) }));
  }
}
