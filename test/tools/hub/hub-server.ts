// A local stand-in for the Hugging Face hub: serves folders under the URL layout
// @huggingface/hub and the resolve endpoint use, on 127.0.0.1, and logs every request.
//   GET  /api/models/<repo>/revision/<rev>            model info (sha, lastModified)
//   GET  /api/models/<repo>/tree/<rev>[/<path>]?recursive=  listing with oid / lfs {oid,size}
//   POST /api/models/<repo>/paths-info/<rev>          the same entries for given paths
//   GET  /<repo>/resolve/<rev>/<path>                 file bytes, honouring Range
// Unknown repos get the hub's 404 with X-Error-Code: RepoNotFound.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export interface RequestLogEntry {
  method: string;
  url: string;
  range?: string;
  authorization?: string;
}

interface RepoFile {
  bytes: Buffer;
  lfs: boolean;
  gitOid: string;
  sha256: string;
}

interface Repo {
  commit: string;
  files: Map<string, RepoFile>;
}

/** Files the real hub keeps in LFS for these exports (by .gitattributes or size). */
const isLfs = (p: string) => /\.onnx(_data(_\d+)?)?$/.test(p) || p === 'tokenizer.json';

export class FakeHub {
  readonly log: RequestLogEntry[] = [];
  /** Repo paths served with one byte flipped (the listing still carries the true checksum). */
  readonly corrupt = new Set<string>();
  /** Files cut off after this many bytes of a response (the connection is then closed). */
  readonly truncateAt = new Map<string, number>();
  private repos = new Map<string, Repo>();
  private server: Server | undefined;
  url = '';

  /** Serves every file under dir as repo `id`, at revision "main" (and at its commit). */
  addRepo(id: string, dir: string): string {
    const files = new Map<string, RepoFile>();
    const walk = (d: string) => {
      for (const name of readdirSync(d)) {
        const full = path.join(d, name);
        if (statSync(full).isDirectory()) walk(full);
        else {
          const rel = path.relative(dir, full).split(path.sep).join('/');
          const bytes = readFileSync(full);
          files.set(rel, {
            bytes,
            lfs: isLfs(rel),
            gitOid: createHash('sha1').update(`blob ${bytes.length}\0`).update(bytes).digest('hex'),
            sha256: createHash('sha256').update(bytes).digest('hex'),
          });
        }
      }
    };
    walk(dir);
    const commit = createHash('sha1')
      .update(id)
      .update([...files.values()].map((f) => f.sha256).join())
      .digest('hex');
    this.repos.set(id, { commit, files });
    return commit;
  }

  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((e) => {
        res.statusCode = 500;
        res.end(String(e));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  /** Requests for one repo file's bytes (the resolve endpoint). */
  downloads(repoPath: string): RequestLogEntry[] {
    return this.log.filter(
      (r) => r.method === 'GET' && r.url.includes('/resolve/') && decodeURIComponent(r.url).endsWith(`/${repoPath}`),
    );
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const u = new URL(req.url ?? '/', this.url);
    this.log.push({
      method: req.method ?? '',
      url: u.pathname + u.search,
      range: header(req, 'range'),
      authorization: header(req, 'authorization'),
    });
    const p = decodeURIComponent(u.pathname);
    let m: RegExpExecArray | null;
    if ((m = /^\/api\/models\/([^/]+\/[^/]+)\/revision\/([^/]+)$/.exec(p)) && req.method === 'GET') {
      const repo = this.repo(m[1]!, m[2]!, res);
      if (!repo) return;
      return json(res, 200, {
        _id: repo.commit.slice(0, 24),
        id: m[1],
        sha: repo.commit,
        lastModified: '2025-01-15T10:00:00.000Z',
        private: false,
        gated: false,
        downloads: 0,
        likes: 0,
        pipeline_tag: 'text-generation',
      });
    }
    if ((m = /^\/api\/models\/([^/]+\/[^/]+)\/tree\/([^/]+)(?:\/(.*))?$/.exec(p)) && req.method === 'GET') {
      const repo = this.repo(m[1]!, m[2]!, res);
      if (!repo) return;
      const prefix = m[3] ? `${m[3].replace(/\/$/, '')}/` : '';
      const recursive = u.searchParams.get('recursive') === 'true';
      const entries: unknown[] = [];
      const dirs = new Set<string>();
      for (const [rel, f] of [...repo.files].sort(([a], [b]) => a.localeCompare(b))) {
        if (!rel.startsWith(prefix)) continue;
        const rest = rel.slice(prefix.length);
        const slash = rest.indexOf('/');
        if (slash >= 0) {
          const dir = prefix + rest.slice(0, slash);
          if (!dirs.has(dir)) {
            dirs.add(dir);
            entries.push({ type: 'directory', oid: '0'.repeat(40), size: 0, path: dir });
          }
          if (!recursive) continue;
        }
        entries.push(entry(rel, f));
      }
      return json(res, 200, entries);
    }
    if ((m = /^\/api\/models\/([^/]+\/[^/]+)\/paths-info\/([^/]+)$/.exec(p)) && req.method === 'POST') {
      const repo = this.repo(m[1]!, m[2]!, res);
      if (!repo) return;
      const body = JSON.parse(await readBody(req)) as { paths: string[] };
      return json(
        res,
        200,
        body.paths.filter((q) => repo.files.has(q)).map((q) => entry(q, repo.files.get(q)!)),
      );
    }
    if ((m = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(p)) && (req.method === 'GET' || req.method === 'HEAD')) {
      const repo = this.repo(m[1]!, m[2]!, res);
      if (!repo) return;
      const f = repo.files.get(m[3]!);
      if (!f) return json(res, 404, { error: 'Entry not found' }, { 'X-Error-Code': 'EntryNotFound' });
      let bytes = f.bytes;
      if (this.corrupt.has(m[3]!)) {
        bytes = Buffer.from(bytes);
        bytes[bytes.length >> 1]! ^= 0xff;
      }
      const headers: Record<string, string | number> = {
        'Accept-Ranges': 'bytes',
        'Content-Type': 'application/octet-stream',
        ETag: `"${f.lfs ? f.sha256 : f.gitOid}"`,
        ...(f.lfs ? { 'X-Linked-ETag': `"${f.sha256}"`, 'X-Linked-Size': f.bytes.length } : {}),
      };
      let start = 0;
      let end = bytes.length - 1;
      let status = 200;
      const range = header(req, 'range');
      if (range) {
        const r = /^bytes=(\d+)-(\d*)$/.exec(range);
        if (!r || Number(r[1]) >= bytes.length) {
          res.writeHead(416, { 'Content-Range': `bytes */${bytes.length}` });
          return void res.end();
        }
        start = Number(r[1]);
        end = r[2] ? Math.min(Number(r[2]), bytes.length - 1) : bytes.length - 1;
        status = 206;
        headers['Content-Range'] = `bytes ${start}-${end}/${bytes.length}`;
      }
      headers['Content-Length'] = end - start + 1;
      res.writeHead(status, headers);
      if (req.method === 'HEAD') return void res.end();
      const cut = this.truncateAt.get(m[3]!);
      if (cut !== undefined && cut < end + 1) {
        // Send the bytes up to the cut, then close the connection mid-body (a clean FIN after
        // the data, so the client keeps every byte sent, as after a dropped connection).
        res.write(bytes.subarray(start, Math.max(start, cut)), () => res.socket?.end());
        return;
      }
      return void res.end(bytes.subarray(start, end + 1));
    }
    json(res, 404, { error: 'Not Found' });
  }

  private repo(id: string, rev: string, res: ServerResponse): Repo | undefined {
    const repo = this.repos.get(id);
    if (!repo) {
      // What the hub answers for a repo that does not exist (or is not visible to the caller).
      json(res, 404, { error: 'Repository not found' }, { 'X-Error-Code': 'RepoNotFound' });
      return undefined;
    }
    if (rev !== 'main' && rev !== 'HEAD' && rev !== repo.commit) {
      json(res, 404, { error: `Invalid rev id: ${rev}` }, { 'X-Error-Code': 'RevisionNotFound' });
      return undefined;
    }
    return repo;
  }
}

function entry(rel: string, f: RepoFile) {
  return {
    type: 'file',
    oid: f.gitOid,
    size: f.bytes.length,
    path: rel,
    ...(f.lfs ? { lfs: { oid: f.sha256, size: f.bytes.length, pointerSize: 134 } } : {}),
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
