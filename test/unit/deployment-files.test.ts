/**
 * The deployment files (config/deploy/: a compose file and a Kubernetes manifest, and the
 * Dockerfile they run) against the daemon they deploy, so that they cannot drift from it:
 * every variable they set is one the daemon reads, the ports are its ops and webhook ports,
 * every probe path is one its ops endpoint answers (on the ops port, never the webhook one),
 * the connections directory they mount is the one they point STAYSYNC_CONNECTIONS_DIR at and
 * holds valid connection files, and the stop grace outlasts the daemon's own. And that they
 * deploy it safely: no default password, no secret in an environment variable (each is a file
 * the daemon reads through NAME_FILE), webhooks only with authentication, a pinned image, and a
 * container that cannot gain privileges or write to its image.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { connectionSpecSchema, loadConfig } from '../../src/config/config.js';
import { EXAMPLE_SUFFIX, readConnectionsDir } from '../../src/config/connections.js';
import { environment, environmentVariableNames as environmentVariables } from '../../src/config/environment.js';
import { OPS_PATHS } from '../../src/ops/http.js';

const deploy = resolve('config/deploy');
const opsPaths: string[] = Object.values(OPS_PATHS);
type AnyRecord = Record<string, any>;

/**
 * The daemon's default webhook port, from config/default.json (webhooks.port). 9465 (the
 * port the webhook listener is given, beside the ops port 9464) stands in for a tree whose
 * defaults do not name the key yet.
 */
const defaultWebhookPort: number = (JSON.parse(readFileSync(resolve('config/default.json'), 'utf8')) as AnyRecord).webhooks?.port ?? 9465;
/** The variables that carry webhook credentials, by webhooks.auth. */
const webhookCredentials: Record<string, string[]> = {
  none: [],
  apiKey: ['STAYSYNC_WEBHOOK_API_KEY'],
  basic: ['STAYSYNC_WEBHOOK_BASIC_USER', 'STAYSYNC_WEBHOOK_BASIC_PASSWORD'],
};
/** The variables that carry secrets (each also read from NAME_FILE): never set in a deployment file, only their NAME_FILE. */
const secretVariables = environment.filter((v) => v.kind === 'secret').map((v) => v.name);

const tmp = mkdtempSync(join(tmpdir(), 'staysync-deploy-files-'));
let secretFiles = 0;
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A connection file as the daemon reads it (readConnectionsDir): a JSON object, named by the file (an example by its name without .example.json). */
function expectConnectionFile(fileName: string, text: string): void {
  expect(fileName).toMatch(/\.json$/);
  const name = fileName.endsWith(EXAMPLE_SUFFIX) ? fileName.slice(0, -EXAMPLE_SUFFIX.length) : fileName.slice(0, -'.json'.length);
  const parsed = connectionSpecSchema.safeParse({ name, ...JSON.parse(text) });
  expect(parsed.success, `${fileName}: ${parsed.error?.message}`).toBe(true);
}

/** What a container sees: its variables, and the secret files mounted into it (path in the container → content). */
interface ContainerView {
  env: Record<string, string>;
  files: Map<string, string>;
}

/**
 * No secret in an environment variable of a container (child processes, crash reports and
 * `docker inspect` see those): every secret of the daemon is given as NAME_FILE, naming a
 * mounted secret file, and a database URL carries no password.
 */
function expectNoSecretInEnvironment(container: string, env: Record<string, string>): void {
  for (const [name, value] of Object.entries(env)) {
    expect(value, `${container}: ${name} takes a value from the shell or .env, where the passwords are`).not.toMatch(/\$\{/);
    if (name === 'DATABASE_URL') expect(new URL(value).password, `${container}: DATABASE_URL carries a password`).toBe('');
    else expect(secretVariables, `${container}: ${name} is a secret; expected ${name}_FILE`).not.toContain(name);
    // PostgreSQL's image reads its password from a file too.
    expect(name, `${container}: ${name}; expected POSTGRES_PASSWORD_FILE`).not.toBe('POSTGRES_PASSWORD');
  }
}

/**
 * The settings a file gives the daemon, as the daemon would read them: the NAME_FILE variables
 * must point at a mounted secret file, whose content the daemon then reads.
 */
function daemonSettings({ env, files }: ContainerView) {
  // Soft: each variable the daemon does not read is named, and the file's other checks still run.
  for (const name of Object.keys(env)) expect.soft(environmentVariables, `${name} is not read by the daemon`).toContain(name);
  const local: Record<string, string> = { ...env };
  for (const [name, path] of Object.entries(env)) {
    if (!name.endsWith('_FILE')) continue;
    expect(files.has(path), `${name}=${path}: a file of a mounted secret`).toBe(true);
    local[name] = join(tmp, `${name}-${(secretFiles += 1)}`);
    writeFileSync(local[name], files.get(path)!);
  }
  const config = loadConfig({ env: local });
  const webhooks = config.webhooks as AnyRecord;
  return {
    databaseUrl: config.database.url,
    opsPort: config.ops.port,
    graceMs: config.shutdown.graceMs,
    connectionsDir: config.connectionsDir,
    webhooks: {
      enabled: webhooks.enabled as boolean,
      auth: webhooks.auth as string,
      apiKey: webhooks.apiKey as string | undefined,
      // A tree whose daemon does not read STAYSYNC_WEBHOOK_PORT yet: the file's own value.
      port: (webhooks.port as number | undefined) ?? (env.STAYSYNC_WEBHOOK_PORT === undefined ? defaultWebhookPort : Number(env.STAYSYNC_WEBHOOK_PORT)),
    },
  };
}

/** Webhooks are received only with authentication, whose credentials come from a secret: a NAME_FILE variable naming a mounted secret file. */
function expectWebhooksSecured(view: ContainerView, webhooks: { enabled: boolean; auth: string }): void {
  if (!webhooks.enabled) return;
  expect(webhooks.auth, 'webhooks are enabled without authentication').not.toBe('none');
  for (const name of webhookCredentials[webhooks.auth]!) {
    const file = view.env[`${name}_FILE`];
    expect(file !== undefined && view.files.has(file), `${name}: from a secret file`).toBe(true);
  }
}

/** Every file under `dir` (its path). */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name));
}

describe('deployment files', () => {
  it('no default password anywhere: a database URL carries no password or an obvious placeholder, no change-me', () => {
    const files = filesUnder(deploy);
    expect(files.length).toBeGreaterThan(2);
    let urls = 0;
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      expect(text, file).not.toMatch(/change-?me/i);
      for (const m of text.matchAll(/postgres(?:ql)?:\/\/[^\s"']+/g)) {
        urls += 1;
        const password = new URL(m[0]).password;
        expect(password === '' || password === 'REPLACE-ME', `${file}: ${m[0]}`).toBe(true);
      }
    }
    expect(urls, 'the database URLs of compose and Kubernetes').toBeGreaterThanOrEqual(2);
  });

  it('Dockerfile: the image exposes the ops and the webhook port, checks its health on the ops port, and runs as node', () => {
    const opsPort = loadConfig({ env: {} }).ops.port;
    const lines = readFileSync(resolve('Dockerfile'), 'utf8')
      .split('\n')
      .filter((l) => !l.trimStart().startsWith('#'));
    const exposed = lines.filter((l) => l.startsWith('EXPOSE ')).flatMap((l) => l.slice('EXPOSE '.length).trim().split(/\s+/));
    expect(exposed.sort()).toEqual([String(opsPort), String(defaultWebhookPort)].sort());
    expect(lines.find((l) => l.startsWith('HEALTHCHECK '))).toContain(`http://127.0.0.1:${opsPort}${OPS_PATHS.health}`);
    expect(lines).toContain('USER node');
  });

  it('compose: two replicas of the image with the database (whose password has no default and is a secret file of both), the connections as a secret directory, the ops port and health check, the webhook port with its key from a secret', () => {
    const text = readFileSync(join(deploy, 'compose.yaml'), 'utf8');
    const compose = parse(text) as AnyRecord;
    const svc = compose.services.staysync as AnyRecord;
    expect(svc.deploy.replicas).toBe(2);
    expect(resolve(deploy, svc.build.context, svc.build.dockerfile)).toBe(resolve('Dockerfile'));
    expect(svc.command).toEqual(['run']);
    expect(svc.depends_on.postgres.condition).toBe('service_healthy');

    // Compose mounts a secret at /run/secrets/<name>: a file (its content), a directory, or a
    // variable of the shell or .env (here: a value standing in for it).
    const mounted = (service: AnyRecord) => {
      const files = new Map<string, string>();
      const dirs = new Map<string, string>();
      for (const s of (service.secrets ?? []) as (string | AnyRecord)[]) {
        const { source, target } = typeof s === 'string' ? { source: s, target: s } : { source: s.source, target: s.target ?? s.source };
        const secret = compose.secrets[source] as AnyRecord;
        const path = posix.join('/run/secrets', target);
        if (secret.environment !== undefined) files.set(path, `value of ${secret.environment}`);
        else if (statSync(resolve(deploy, secret.file)).isDirectory()) dirs.set(path, resolve(deploy, secret.file));
        else files.set(path, readFileSync(resolve(deploy, secret.file), 'utf8'));
      }
      return { files, dirs };
    };
    const { files, dirs } = mounted(svc);
    const env = svc.environment as Record<string, string>;
    const view: ContainerView = { env, files };
    const { databaseUrl, opsPort, graceMs, connectionsDir, webhooks } = daemonSettings(view);
    expect(databaseUrl).toMatch(/@postgres:5432\//);

    // No secret in an environment variable of either container. The database password is one
    // secret file of both: PostgreSQL's at its first start, the daemon's in its URL.
    const postgres = compose.services.postgres as AnyRecord;
    for (const [name, service] of Object.entries(compose.services as Record<string, AnyRecord>))
      expectNoSecretInEnvironment(`compose service ${name}`, service.environment ?? {});
    const passwordFile = postgres.environment.POSTGRES_PASSWORD_FILE as string;
    expect(mounted(postgres).files.has(passwordFile), `POSTGRES_PASSWORD_FILE=${passwordFile}: a mounted secret`).toBe(true);
    expect(env.STAYSYNC_DB_PASSWORD_FILE).toBe(passwordFile);
    expect(decodeURIComponent(new URL(databaseUrl!).password)).toBe(mounted(postgres).files.get(passwordFile));

    // Both ports on the compose network only; the health check on the ops port.
    expect(svc.expose).toEqual([String(opsPort), String(webhooks.port)]);
    expect(webhooks.port).toBe(defaultWebhookPort);
    expect(svc.ports ?? []).toEqual([]);
    expect(svc.healthcheck.test.join(' ')).toContain(`http://127.0.0.1:${opsPort}${OPS_PATHS.health}`);

    // The connections: a directory mounted as a secret. It ships an example, which the daemon
    // skips; the operator's own files beside it stay out of git (.gitignore) and of the image.
    expect(dirs.get(connectionsDir!), `a secret directory mounted at ${connectionsDir}`).toBeDefined();
    const dir = dirs.get(connectionsDir!)!;
    const examples = readdirSync(dir).filter((f) => f.endsWith(EXAMPLE_SUFFIX));
    expect(examples.length).toBeGreaterThan(0);
    for (const f of examples) expectConnectionFile(f, readFileSync(join(dir, f), 'utf8'));
    expect(readConnectionsDir(dir).filter((c) => c.source.endsWith(EXAMPLE_SUFFIX))).toEqual([]);
    expect(Number(/^(\d+)s$/.exec(svc.stop_grace_period)![1]) * 1000).toBeGreaterThan(graceMs);

    // Webhooks with their key from a secret, as the daemon reads it.
    expect(webhooks.enabled).toBe(true);
    expectWebhooksSecured(view, webhooks);
    if (webhooks.auth === 'apiKey') expect(webhooks.apiKey).toBe(files.get(env.STAYSYNC_WEBHOOK_API_KEY_FILE!)!.trim());

    // No default password: no variable falls back to a default.
    expect(text).not.toMatch(/\$\{[A-Za-z0-9_]+:?-/);

    // The daemon needs no capability and never gains one.
    expect(svc.cap_drop).toEqual(['ALL']);
    expect(svc.security_opt).toContain('no-new-privileges:true');
  });

  it('kubernetes: the Deployment of replicas probes /healthz and /readyz on the ops port, mounts the connections Secret where it points the daemon, outlasts its grace time, receives webhooks on a Service of its own with the key from a Secret, runs a pinned image locked down, and a PodDisruptionBudget keeps one up', () => {
    const docs = parseAllDocuments(readFileSync(join(deploy, 'kubernetes', 'staysync.yaml'), 'utf8')).map((d) => d.toJS() as AnyRecord);
    const byKind = (kind: string) => docs.filter((d) => d.kind === kind);
    const [deployment] = byKind('Deployment');
    const pod = deployment!.spec.template.spec as AnyRecord;
    const podLabels = deployment!.spec.template.metadata.labels as Record<string, string>;
    expect(deployment!.spec.selector.matchLabels).toEqual(podLabels);
    const [container] = pod.containers as AnyRecord[];
    expect(container!.args).toEqual(['run']);

    // What the container sees: its variables (secretKeyRef resolved) and the files of the Secrets it mounts.
    const secrets = new Map(byKind('Secret').map((s) => [s.metadata.name as string, s.stringData as Record<string, string>]));
    const volumes = new Map((pod.volumes as AnyRecord[]).map((v) => [v.name as string, v]));
    const files = new Map<string, string>();
    for (const mount of container!.volumeMounts as AnyRecord[]) {
      const secretName = volumes.get(mount.name)?.secret?.secretName as string | undefined;
      if (secretName === undefined) continue;
      for (const [key, value] of Object.entries(secrets.get(secretName) ?? {})) files.set(posix.join(mount.mountPath, key), value);
    }
    // Every Secret a mounted file: none in an environment variable (secretKeyRef, envFrom).
    const env: Record<string, string> = {};
    for (const e of container!.env as AnyRecord[]) {
      expect(e.valueFrom, `${e.name} from a Secret: mount it, and name the file with ${e.name}_FILE`).toBeUndefined();
      env[e.name] = e.value;
    }
    expect(container!.envFrom, 'variables from a Secret').toBeUndefined();
    expectNoSecretInEnvironment('kubernetes', env);

    // The example Secrets hold placeholders, never a usable credential. The webhook key is
    // empty, so that a forgotten one stops the daemon (exit 2) instead of opening the endpoint
    // to a key anyone can read here: the checks below fill it in.
    for (const [name, data] of secrets) {
      for (const [key, value] of Object.entries(data))
        expect(value === '' || /REPLACE-ME|replace-with-/.test(value), `Secret ${name}/${key} holds a placeholder`).toBe(true);
    }
    const view: ContainerView = { env, files };
    if (env.STAYSYNC_WEBHOOK_API_KEY_FILE !== undefined && files.get(env.STAYSYNC_WEBHOOK_API_KEY_FILE) === '') {
      expect(() => daemonSettings(view)).toThrow(new RegExp(`STAYSYNC_WEBHOOK_API_KEY_FILE: .* is empty`));
      files.set(env.STAYSYNC_WEBHOOK_API_KEY_FILE, 'the-key-of-the-operator\n');
    }
    const { databaseUrl, opsPort, graceMs, connectionsDir, webhooks } = daemonSettings(view);
    expect(databaseUrl).toMatch(/^postgres:\/\//);

    // Probes and metrics on the ops port; the webhook port the daemon's default, on its own.
    const ports = new Map((container!.ports as AnyRecord[]).map((p) => [p.name as string, p.containerPort as number]));
    expect(ports.get('ops')).toBe(opsPort);
    expect(webhooks.port).toBe(defaultWebhookPort);
    expect(ports.get('webhooks')).toBe(webhooks.port);
    expect(container!.livenessProbe.httpGet).toEqual({ path: OPS_PATHS.health, port: 'ops' });
    expect(container!.readinessProbe.httpGet).toEqual({ path: OPS_PATHS.ready, port: 'ops' });
    for (const probe of [container!.livenessProbe, container!.readinessProbe]) expect(opsPaths).toContain(probe.httpGet.path);
    expect(docs.flatMap((d) => Object.entries(d.spec?.template?.metadata?.annotations ?? {}))).toEqual(
      expect.arrayContaining([
        ['prometheus.io/port', String(opsPort)],
        ['prometheus.io/path', OPS_PATHS.metrics],
      ]),
    );

    // Webhooks with their key from a Secret, as the daemon reads it.
    expect(webhooks.enabled).toBe(true);
    expectWebhooksSecured(view, webhooks);
    if (webhooks.auth === 'apiKey' && env.STAYSYNC_WEBHOOK_API_KEY_FILE !== undefined)
      expect(webhooks.apiKey).toBe(files.get(env.STAYSYNC_WEBHOOK_API_KEY_FILE)!.trim());

    const mount = (container!.volumeMounts as AnyRecord[]).find((m) => m.mountPath === connectionsDir);
    expect(mount, `a volume mounted at ${connectionsDir}`).toBeDefined();
    const volume = volumes.get(mount!.name)!;
    const connections = secrets.get(volume.secret.secretName);
    expect(connections, `Secret ${volume.secret.secretName}`).toBeDefined();
    for (const [file, text] of Object.entries(connections!)) expectConnectionFile(file, text);

    expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(graceMs);

    // Two Services: the ops port inside the cluster, the webhook port (behind an Ingress) on its own.
    const services = byKind('Service');
    for (const s of services) expect(s.spec.selector).toEqual(podLabels);
    const opsService = services.find((s) => s.spec.ports.some((p: AnyRecord) => p.targetPort === 'ops'));
    expect(opsService!.spec.ports).toEqual([{ name: 'ops', port: opsPort, targetPort: 'ops' }]);
    expect(opsService!.spec.type ?? 'ClusterIP').toBe('ClusterIP');
    const webhookService = services.find((s) => s.spec.ports.some((p: AnyRecord) => p.targetPort === 'webhooks'));
    expect(webhookService, 'a Service for the webhook port').toBeDefined();
    expect(webhookService).not.toBe(opsService);
    expect(webhookService!.spec.ports).toEqual([{ name: 'webhooks', port: webhooks.port, targetPort: 'webhooks' }]);

    // A NetworkPolicy, if any, admits the ops port only from chosen peers, and the webhook port.
    for (const policy of byKind('NetworkPolicy')) {
      expect(policy.spec.podSelector.matchLabels).toEqual(podLabels);
      const rules = policy.spec.ingress as AnyRecord[];
      const admits = (port: string) => rules.filter((r) => (r.ports ?? [{ port }]).some((p: AnyRecord) => p.port === port || p.port === ports.get(port)));
      expect(admits('webhooks').length).toBeGreaterThan(0);
      for (const rule of admits('ops')) expect(rule.from?.length ?? 0, 'the ops port from chosen peers only').toBeGreaterThan(0);
    }

    // The container: non-root, no privilege to gain, a read-only image, no capability, seccomp.
    const podSecurity = (pod.securityContext ?? {}) as AnyRecord;
    const security = (container!.securityContext ?? {}) as AnyRecord;
    expect(security.runAsNonRoot ?? podSecurity.runAsNonRoot).toBe(true);
    expect(security.runAsUser ?? podSecurity.runAsUser).toBe(1000); // the image's user node
    expect(security.allowPrivilegeEscalation).toBe(false);
    expect(security.privileged ?? false).toBe(false);
    expect(security.readOnlyRootFilesystem).toBe(true);
    expect(security.capabilities?.drop).toContain('ALL');
    expect(security.capabilities?.add ?? []).toEqual([]);
    expect((security.seccompProfile ?? podSecurity.seccompProfile)?.type).toBe('RuntimeDefault');
    expect(pod.automountServiceAccountToken).toBe(false);
    const tmpMount = (container!.volumeMounts as AnyRecord[]).find((m) => m.mountPath === '/tmp');
    expect(volumes.get(tmpMount?.name)?.emptyDir, 'a writable /tmp').toBeDefined();

    // A pinned image: the version of package.json (or a digest), never latest or no tag at all.
    const image = container!.image as string;
    const version = (JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { version: string }).version;
    const digest = /@sha256:[0-9a-f]{64}$/.test(image);
    const tag = /:([\w][\w.-]{0,127})$/.exec(image.slice(image.lastIndexOf('/') + 1))?.[1];
    expect(digest || tag !== undefined, `${image}: a tag or a digest`).toBe(true);
    expect(tag).not.toBe('latest');
    if (!digest) expect(tag).toBe(version);

    // Replicas share the connections; a new version starts alone (it may migrate or rebuild).
    expect(deployment!.spec.replicas).toBeGreaterThanOrEqual(2);
    expect(deployment!.spec.strategy).toEqual({ type: 'Recreate' });
    const [pdb] = byKind('PodDisruptionBudget');
    expect(pdb!.spec.selector.matchLabels).toEqual(podLabels);
    expect(pdb!.spec.minAvailable).toBeLessThan(deployment!.spec.replicas);
  });
});
