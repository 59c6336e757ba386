/**
 * The deployment files (config/deploy/: a compose file and a Kubernetes manifest) against the
 * daemon they deploy, so that they cannot drift from it: every variable they set is one the
 * daemon reads, every port is its ops port, every probe path is one its ops endpoint answers,
 * the connections directory they mount is the one they point STAYSYNC_CONNECTIONS_DIR at and
 * holds valid connection files, and the stop grace outlasts the daemon's own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { connectionSpecSchema, environmentVariables, loadConfig } from '../../src/config.js';
import { OPS_PATHS } from '../../src/ops/http.js';

const deploy = resolve('config/deploy');
const defaults = loadConfig({ env: {} });
const opsPaths: string[] = Object.values(OPS_PATHS);
type AnyRecord = Record<string, any>;

/** A connection file as the daemon reads it (readConnectionsDir): a JSON object, named by the file. */
function expectConnectionFile(fileName: string, text: string): void {
  expect(fileName).toMatch(/\.json$/);
  const parsed = connectionSpecSchema.safeParse({ name: fileName.slice(0, -'.json'.length), ...JSON.parse(text) });
  expect(parsed.success, `${fileName}: ${parsed.error?.message}`).toBe(true);
}

/** The settings a file gives the daemon, as the daemon would read them. */
function daemonSettings(env: Record<string, string>) {
  for (const name of Object.keys(env)) expect(environmentVariables, `${name} is not read by the daemon`).toContain(name);
  // Placeholders of a database URL are the file's business; the rest must load.
  const config = loadConfig({ env: { ...env, DATABASE_URL: 'postgres://u@h:5432/d' } });
  return { opsPort: config.ops.port, graceMs: config.shutdown.graceMs, connectionsDir: config.connectionsDir };
}

describe('deployment files', () => {
  it('the environment variables of the daemon list every STAYSYNC_ variable the configuration reads', () => {
    const source = readFileSync(resolve('src/config.ts'), 'utf8');
    const read = new Set([...source.matchAll(/'(STAYSYNC_[A-Z_]+|DATABASE_URL)'/g)].map((m) => m[1]!));
    for (const name of read) expect(environmentVariables, name).toContain(name);
    expect(environmentVariables).toContain('STAYSYNC_CLIENT_SECRET_FILE');
  });

  it('compose: two replicas of the image with the database, the connections as a secret directory, the ops port and health check', () => {
    const compose = parse(readFileSync(join(deploy, 'compose.yaml'), 'utf8')) as AnyRecord;
    const svc = compose.services.staysync as AnyRecord;
    expect(svc.deploy.replicas).toBe(2);
    expect(resolve(deploy, svc.build.context, svc.build.dockerfile)).toBe(resolve('Dockerfile'));
    expect(svc.command).toEqual(['run']);
    expect(svc.depends_on.postgres.condition).toBe('service_healthy');

    const env = svc.environment as Record<string, string>;
    const { opsPort, graceMs, connectionsDir } = daemonSettings(env);
    expect(env.DATABASE_URL).toMatch(/@postgres:5432\//);
    expect(svc.expose).toEqual([String(opsPort)]);
    expect(svc.healthcheck.test.join(' ')).toContain(`http://127.0.0.1:${opsPort}${OPS_PATHS.health}`);
    // Compose mounts a secret at /run/secrets/<name>.
    expect(svc.secrets).toHaveLength(1);
    expect(connectionsDir).toBe(`/run/secrets/${svc.secrets[0]}`);
    const dir = resolve(deploy, compose.secrets[svc.secrets[0]].file);
    const files = readdirSync(dir);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expectConnectionFile(f, readFileSync(join(dir, f), 'utf8'));
    expect(Number(/^(\d+)s$/.exec(svc.stop_grace_period)![1]) * 1000).toBeGreaterThan(graceMs);
  });

  it('kubernetes: the Deployment of replicas probes /healthz and /readyz on the ops port, mounts the connections Secret where it points the daemon, outlasts its grace time, and a PodDisruptionBudget keeps one up', () => {
    const docs = parseAllDocuments(readFileSync(join(deploy, 'kubernetes', 'staysync.yaml'), 'utf8')).map((d) => d.toJS() as AnyRecord);
    const byKind = (kind: string) => docs.filter((d) => d.kind === kind);
    const [deployment] = byKind('Deployment');
    const pod = deployment!.spec.template.spec as AnyRecord;
    expect(deployment!.spec.selector.matchLabels).toEqual(deployment!.spec.template.metadata.labels);
    const [container] = pod.containers as AnyRecord[];
    expect(container!.args).toEqual(['run']);

    const env: Record<string, string> = {};
    const secrets = new Map(byKind('Secret').map((s) => [s.metadata.name as string, s.stringData as Record<string, string>]));
    for (const e of container!.env as AnyRecord[]) {
      if (e.value !== undefined) env[e.name] = e.value;
      else {
        const ref = e.valueFrom.secretKeyRef;
        expect(secrets.get(ref.name)?.[ref.key], `${e.name}: secret ${ref.name}/${ref.key}`).toBeDefined();
        env[e.name] = secrets.get(ref.name)![ref.key]!;
      }
    }
    const { opsPort, graceMs, connectionsDir } = daemonSettings(env);
    expect(env.DATABASE_URL).toMatch(/^postgres:\/\//);

    const port = (container!.ports as AnyRecord[]).find((p) => p.name === 'ops')!;
    expect(port.containerPort).toBe(opsPort);
    expect(container!.livenessProbe.httpGet).toEqual({ path: OPS_PATHS.health, port: 'ops' });
    expect(container!.readinessProbe.httpGet).toEqual({ path: OPS_PATHS.ready, port: 'ops' });
    for (const probe of [container!.livenessProbe, container!.readinessProbe]) expect(opsPaths).toContain(probe.httpGet.path);
    expect(docs.flatMap((d) => Object.entries(d.spec?.template?.metadata?.annotations ?? {}))).toEqual(
      expect.arrayContaining([
        ['prometheus.io/port', String(opsPort)],
        ['prometheus.io/path', OPS_PATHS.metrics],
      ]),
    );

    const mount = (container!.volumeMounts as AnyRecord[]).find((m) => m.mountPath === connectionsDir);
    expect(mount, `a volume mounted at ${connectionsDir}`).toBeDefined();
    const volume = (pod.volumes as AnyRecord[]).find((v) => v.name === mount!.name)!;
    const connections = secrets.get(volume.secret.secretName);
    expect(connections, `Secret ${volume.secret.secretName}`).toBeDefined();
    for (const [file, text] of Object.entries(connections!)) expectConnectionFile(file, text);

    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(graceMs);
    const [service] = byKind('Service');
    expect(service!.spec.selector).toEqual(deployment!.spec.template.metadata.labels);
    expect(service!.spec.ports).toEqual([{ name: 'ops', port: opsPort, targetPort: 'ops' }]);

    // Replicas share the connections; a new version starts alone (it may migrate or rebuild).
    expect(deployment!.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(deployment!.spec.strategy).toEqual({ type: 'Recreate' });
    const [pdb] = byKind('PodDisruptionBudget');
    expect(pdb!.spec.selector.matchLabels).toEqual(deployment!.spec.template.metadata.labels);
    expect(pdb!.spec.minAvailable).toBeLessThan(deployment!.spec.replicas);
  });
});
