// The Kubernetes manifests under deploy/ and Dockerfile.gpu: valid YAML, and consistent with each
// other and with the server (ports, /healthz, the metric the autoscaler reads, the env it reads).
import semver from 'semver';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { DEFAULTS } from '../../src/defaults.js';
import { PROBE_PATHS } from '../../src/api/routes/probes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const deployDir = path.join(root, 'deploy');

type Obj = any;

function loadAll(): { file: string; doc: Obj }[] {
  const out: { file: string; doc: Obj }[] = [];
  for (const file of readdirSync(deployDir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    for (const d of parseAllDocuments(readFileSync(path.join(deployDir, file), 'utf8'))) {
      expect(d.errors, `${file}: ${d.errors.map((e) => e.message).join('; ')}`).toEqual([]);
      const doc = d.toJS();
      if (doc !== null) out.push({ file, doc });
    }
  }
  return out;
}

const docs = loadAll();
const k8s = docs.filter((d) => d.doc.apiVersion !== undefined);
const one = (kind: string): Obj => {
  const found = k8s.filter((d) => d.doc.kind === kind);
  expect(
    found.map((f) => f.file),
    `one ${kind}`,
  ).toHaveLength(1);
  return found[0]!.doc;
};

/** Every ASSAY_* / HOST / PORT variable the server code reads. */
function envReadBySrc(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) {
        for (const m of readFileSync(p, 'utf8').matchAll(/\b(ASSAY_[A-Z0-9_]+|HOST|PORT)\b/g)) names.add(m[1]!);
      }
    }
  };
  walk(path.join(root, 'src'));
  return names;
}

describe('deploy/ manifests', () => {
  it('every file is valid YAML of a known kind with a name', () => {
    expect(docs.length).toBeGreaterThanOrEqual(6);
    const kinds = new Set(k8s.map((d) => d.doc.kind));
    for (const kind of [
      'Deployment',
      'Service',
      'HorizontalPodAutoscaler',
      'Ingress',
      'PersistentVolumeClaim',
      'Job',
      'PodDisruptionBudget',
    ]) {
      expect(kinds, kind).toContain(kind);
    }
    for (const { file, doc } of k8s) {
      expect(typeof doc.metadata?.name, `${file} metadata.name`).toBe('string');
    }
  });

  const deployment = one('Deployment');
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const httpPort = container.ports.find((p: Obj) => p.name === 'http');

  it('Deployment: selector, GPU request, port from the env the server reads', () => {
    expect(deployment.apiVersion).toBe('apps/v1');
    expect(deployment.spec.selector.matchLabels).toEqual(
      expect.objectContaining(deployment.spec.template.metadata.labels),
    );
    expect(String(container.resources.requests['nvidia.com/gpu'])).toBe('1');
    expect(String(container.resources.limits['nvidia.com/gpu'])).toBe('1');
    expect(httpPort.containerPort).toBe(8080);
    const env = Object.fromEntries(container.env.map((e: Obj) => [e.name, e.value]));
    expect(Number(env.PORT)).toBe(httpPort.containerPort);
    expect(env.HOST).toBe('0.0.0.0');
    expect(env.ASSAY_PROVIDER).toBe('cuda');
    expect(pod.securityContext.runAsNonRoot).toBe(true);
  });

  it('Deployment: startup on /startupz, readiness on /readyz, liveness on /livez (never the models or the database), at the http port', () => {
    const expected = { startupProbe: '/startupz', readinessProbe: '/readyz', livenessProbe: '/livez' };
    for (const [probe, route] of Object.entries(expected)) {
      expect(container[probe]?.httpGet?.path, probe).toBe(route);
      expect(PROBE_PATHS, probe).toContain(route);
      const port = container[probe].httpGet.port;
      expect([httpPort.name, httpPort.containerPort], probe).toContain(port);
    }
  });

  it("PodDisruptionBudget: selects the Deployment's pods and leaves at least one of the HPA's minimum serving", () => {
    const pdb = one('PodDisruptionBudget');
    expect(pdb.apiVersion).toBe('policy/v1');
    expect(deployment.spec.template.metadata.labels).toEqual(expect.objectContaining(pdb.spec.selector.matchLabels));
    const min = one('HorizontalPodAutoscaler').spec.minReplicas;
    expect(pdb.spec.maxUnavailable).toBeGreaterThanOrEqual(1);
    expect(pdb.spec.maxUnavailable).toBeLessThan(min);
  });

  it('Deployment: graceful termination outlasts preStop + the request deadline, and liveness does not kill a draining pod', () => {
    const preStop = container.lifecycle.preStop.exec.command;
    expect(preStop[0]).toBe('sleep');
    const sleep = Number(preStop[1]);
    expect(sleep).toBeGreaterThan(0);
    const deadlineEnv = container.env.find((e: Obj) => e.name === 'ASSAY_DEADLINE_MS')?.value;
    const drainS = Number(deadlineEnv ?? DEFAULTS.deadlineMs) / 1000;
    const grace = pod.terminationGracePeriodSeconds;
    // The server cuts leftover connections at deadline + 10 s (docs/operations.md "Graceful shutdown").
    expect(grace).toBeGreaterThan(sleep + drainS + 10);
    // Liveness failures needed for a restart take longer than the whole drain.
    const live = container.livenessProbe;
    expect(live.periodSeconds * live.failureThreshold).toBeGreaterThan(drainS);
    // The ingress waits at least as long as a request may take.
    const ingress = one('Ingress');
    expect(
      Number(ingress.metadata.annotations['nginx.ingress.kubernetes.io/proxy-read-timeout']),
    ).toBeGreaterThanOrEqual(drainS);
  });

  it('Deployment: the models volume is mounted where the registry env points, read-only', () => {
    const mount = container.volumeMounts.find((m: Obj) => m.name === 'models');
    expect(mount.readOnly).toBe(true);
    const registry = container.env.find((e: Obj) => e.name === 'ASSAY_REGISTRY').value;
    expect(registry.startsWith(`${mount.mountPath}/`)).toBe(true);
    const vol = pod.volumes.find((v: Obj) => v.name === 'models');
    expect(vol.persistentVolumeClaim.claimName).toBe(one('PersistentVolumeClaim').metadata.name);
  });

  it('Deployment: the graph cache is a writable volume, and the server is pointed at it', () => {
    const dir = container.env.find((e: Obj) => e.name === 'ASSAY_GRAPH_CACHE_DIR').value as string;
    const mount = container.volumeMounts.find((m: Obj) => dir.startsWith(`${m.mountPath}/`));
    expect(mount.readOnly).not.toBe(true);
    expect(pod.volumes.find((v: Obj) => v.name === mount.name).emptyDir).toBeDefined();
  });

  it('Service selects the pods and targets the http port', () => {
    const svc = one('Service');
    expect(deployment.spec.template.metadata.labels).toEqual(expect.objectContaining(svc.spec.selector));
    const port = svc.spec.ports[0];
    expect([httpPort.name, httpPort.containerPort]).toContain(port.targetPort);
  });

  it('HPA scales the Deployment on the queue-depth metric the server exports, exposed by the adapter rule', () => {
    const hpa = one('HorizontalPodAutoscaler');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      name: deployment.metadata.name,
    });
    expect(hpa.spec.minReplicas).toBeLessThanOrEqual(hpa.spec.maxReplicas);
    const metric = hpa.spec.metrics[0];
    expect(metric.type).toBe('Pods');
    const name: string = metric.pods.metric.name;
    expect(name).toMatch(/queue_depth/);

    const metricsTs = path.join(root, 'src/api/metrics.ts');
    expect(existsSync(metricsTs), 'src/api/metrics.ts').toBe(true);
    // Metric names are string literals in metrics.ts (passed as `name:` or positionally).
    const exported = [...readFileSync(metricsTs, 'utf8').matchAll(/['"`](assay_[a-z0-9_]+)['"`]/g)].map((m) => m[1]);
    expect(exported).toContain(name);

    const adapter = docs.find((d) => d.file === 'prometheus-adapter-rules.yaml')!.doc;
    const rule = adapter.rules.custom.find((r: Obj) => r.name.as === name);
    expect(rule.seriesQuery).toContain(name);
    expect(rule.resources.overrides.pod.resource).toBe('pod');
    // The gauge carries a `model` label: the query sums a pod's models into one value per pod.
    expect(rule.metricsQuery).toMatch(/^sum\(.*\) by \(<<\.GroupBy>>\)$/);
  });

  it('Ingress hashes on the routing key that the controller ConfigMap maps from the state-hash header, and routes to the Service', () => {
    const ing = one('Ingress');
    const key = ing.metadata.annotations['nginx.ingress.kubernetes.io/upstream-hash-by'];
    expect(key).toBe('$assay_route_key');
    const snippet: string = one('ConfigMap').data['http-snippet'];
    expect(snippet).toMatch(new RegExp(`^map \\$http_x_assay_state_hash \\${key} \\{`, 'm'));
    expect(snippet).toMatch(/""\s+\$request_id;/);
    expect(
      Number(ing.metadata.annotations['nginx.ingress.kubernetes.io/proxy-body-size'].replace(/m$/, '')) * 2 ** 20,
    ).toBe(DEFAULTS.bodyLimit);
    const backend = ing.spec.rules[0].http.paths[0].backend.service;
    const svc = one('Service');
    expect(backend.name).toBe(svc.metadata.name);
    expect(svc.spec.ports.map((p: Obj) => p.name)).toContain(backend.port.name);
  });

  it('the fetch Job runs `assay models fetch` (the compiled CLI) into the volume the Deployment reads', () => {
    const job = one('Job');
    const c = job.spec.template.spec.containers[0];
    expect(c.command).toEqual(['node', 'bin/assay.js', 'models', 'fetch']);
    expect(existsSync(path.join(root, c.command[1]))).toBe(true);
    const registry = c.args[c.args.indexOf('--registry') + 1];
    const deployedRegistry = container.env.find((e: Obj) => e.name === 'ASSAY_REGISTRY').value;
    expect(registry).toBe(deployedRegistry);
    expect(job.spec.template.spec.volumes[0].persistentVolumeClaim.claimName).toBe(
      pod.volumes[0].persistentVolumeClaim.claimName,
    );
  });

  it('every server setting the manifests pass is one the server reads', () => {
    const read = envReadBySrc();
    for (const e of container.env) expect(read, e.name).toContain(e.name);
  });
});

describe('Dockerfile.gpu', () => {
  const text = readFileSync(path.join(root, 'Dockerfile.gpu'), 'utf8');
  const lines = text.split('\n').filter((l) => !l.trimStart().startsWith('#'));
  const directive = (name: string) => lines.filter((l) => l.startsWith(`${name} `));

  it('builds in a Node 26 (current LTS) stage with the CUDA provider, and runs on the CUDA 12 + cuDNN runtime', () => {
    expect(text).toMatch(/ARG CUDA_IMAGE=nvidia\/cuda:12\.[\d.]+-cudnn-runtime-ubuntu24\.04/);
    expect(text).toMatch(/ARG NODE_IMAGE=node:26-[\w-]+/);
    expect(text).toMatch(/ONNXRUNTIME_NODE_INSTALL=cuda12/);
    // package.json's allowScripts refuses onnxruntime-node's install script (the CUDA download): the image runs it itself.
    expect(text).toMatch(/node node_modules\/onnxruntime-node\/script\/install --onnxruntime-node-install=cuda12/);
    // The package declares the Node lines it runs on; the image's line is one of them.
    const engines = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { engines: { node: string } })
      .engines.node;
    const imageMajor = /ARG NODE_IMAGE=node:(\d+)-/.exec(text)![1]!;
    expect(semver.satisfies(`${imageMajor}.0.0`, engines)).toBe(true);
  });

  it('is multi-stage: the build stage compiles dist/ and prunes dev dependencies; the runtime stage has no sources, tsx or generator', () => {
    const froms = directive('FROM');
    expect(froms).toEqual(['FROM ${NODE_IMAGE} AS build', 'FROM ${CUDA_IMAGE} AS runtime']);
    const runtime = lines.slice(lines.indexOf('FROM ${CUDA_IMAGE} AS runtime'));
    const copies = runtime.filter((l) => l.startsWith('COPY '));
    expect(copies.every((l) => l.startsWith('COPY --from=build '))).toBe(true);
    expect(copies.join('\n')).toContain('/app/dist');
    expect(copies.join('\n')).not.toMatch(/\/app\/src\b/);
    expect(text).toMatch(/npm prune --omit=dev/);
    // The runtime stage deletes nothing (a deletion there only adds a layer): the build stage ships what it keeps.
    expect(runtime.join('\n')).not.toMatch(/\brm -/);
    const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      scripts: Record<string, string>;
    };
    expect(Object.keys(pkg.dependencies)).not.toContain('tsx');
    expect(pkg.scripts.prepare).toContain('build');
  });

  it('runs as a non-root user with models on a volume, the CUDA provider selected, and a /healthz HEALTHCHECK', () => {
    const user = directive('USER').at(-1);
    expect(user).toBeDefined();
    expect(user).not.toMatch(/USER (root|0)\b/);
    expect(directive('VOLUME').join()).toContain('/models');
    expect(text).toMatch(/ASSAY_PROVIDER=cuda/);
    const hc = directive('HEALTHCHECK').join('\n') + text.slice(text.indexOf('HEALTHCHECK'));
    expect(hc).toContain('/healthz');
    expect(directive('EXPOSE')[0]).toBe(`EXPOSE ${httpPortOfDeployment()}`);
  });

  it('sets only env the server reads, and the entry point exists', () => {
    const read = envReadBySrc();
    const envBlock = text.slice(text.indexOf('ENV NODE_ENV'), text.indexOf('EXPOSE'));
    for (const m of envBlock.matchAll(/\b(ASSAY_[A-Z0-9_]+|HOST|PORT)=/g)) expect(read, m[1]).toContain(m[1]);
    const entry = directive('ENTRYPOINT')[0];
    const script = /"(bin\/[^"]+|src\/[^"]+)"/.exec(entry!)?.[1];
    expect(script && existsSync(path.join(root, script)), entry).toBe(true);
  });

  it('.dockerignore keeps node_modules, git and downloaded models out of the context', () => {
    const ignore = readFileSync(path.join(root, '.dockerignore'), 'utf8').split('\n');
    for (const p of ['node_modules', '.git', 'models/hub', 'models/generated']) expect(ignore).toContain(p);
  });
});

function httpPortOfDeployment(): number {
  const d = docs.find((x) => x.doc.kind === 'Deployment')!.doc;
  return d.spec.template.spec.containers[0].ports[0].containerPort;
}
