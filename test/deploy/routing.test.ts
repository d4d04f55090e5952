// The routing rules are written once (deploy/local/routing.ts): the checked-in ingress files are
// its output, byte for byte, and the local proxy's nginx.conf is valid to nginx itself.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { findNginx } from '../../deploy/local/cluster.js';
import { generatedFiles, nginxConf } from '../../deploy/local/routing.js';

const deployDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../deploy');

describe('routing rules, written once', () => {
  it.each(Object.keys(generatedFiles()))(
    'deploy/%s is what routing.ts renders (run `npx tsx deploy/local/routing.ts` after editing the rules)',
    (name) => {
      expect(readFileSync(path.join(deployDir, name), 'utf8')).toBe(generatedFiles()[name]);
    },
  );

  const nginx = findNginx();
  if (!nginx)
    console.warn(
      '\n  !! nginx is not installed: the local proxy config is not checked by `nginx -t` (apt-get install nginx-light)\n',
    );
  it.skipIf(!nginx)('the local proxy config passes `nginx -t`, hashed and round robin, with a replica down', () => {
    for (const balance of ['hash', 'round-robin'] as const) {
      const prefix = mkdtempSync(path.join(tmpdir(), 'assay-nginx-t-'));
      const conf = path.join(prefix, 'nginx.conf');
      writeFileSync(
        conf,
        nginxConf({
          listen: 18_999,
          prefix,
          balance,
          upstreams: [
            { host: '127.0.0.1', port: 1 },
            { host: '127.0.0.1', port: 2, down: true },
          ],
        }),
      );
      const r = spawnSync(nginx!, ['-t', '-p', prefix, '-c', conf], { encoding: 'utf8' });
      expect(r.status, r.stderr).toBe(0);
    }
  });
});
