#!/usr/bin/env node
/**
 * Offline check of the Kubernetes manifests under deploy/ (npm run deploy:validate; CI runs it).
 *
 *   node deploy/validate.mjs              render and check every kustomization, then the self-test
 *   node deploy/validate.mjs --self-test  only the self-test: testdata/broken*.yaml must be refused
 *   node deploy/validate.mjs --print DIR  print the rendered YAML of one kustomization
 *   --verbose                             also list what the self-test's fixture is refused for
 *
 * 1. Render: every directory under deploy/ with a kustomization.yaml is rendered with
 *    `kubectl kustomize` (what `kubectl apply -k` applies); without kubectl on the PATH the
 *    validator stops with a message saying so.
 * 2. Schemas: each rendered object is validated by apiVersion/kind with the `kubernetes-models`
 *    classes (the official OpenAPI schemas compiled to validators), and unknown fields are
 *    refused too (the schemas allow extra properties, so a typo such as `readinesProbe` would
 *    otherwise pass; see unknownFields()).
 * 3. Policies: security context, resources, probes, graceful shutdown, the migration Job, the
 *    configuration against the service's own validation (dist/config/env.js), the database
 *    connection budget, label selectors, METRICS_PORT on a named `metrics` port with a Service of
 *    its own, the NetworkPolicy, topology spread, and the Secret template (see checkPolicies()).
 * 4. CloudNativePG (deploy/cnpg.mjs): the operator's CRDs are not here, so a Cluster's and a
 *    Pooler's fields are checked against a description of the postgresql.cnpg.io/v1 API, then three
 *    instances, synchronous replication, the Pooler (transaction mode, parameters the operator
 *    accepts, prepared statements kept) and where DATABASE_URL, DATABASE_READ_URL and
 *    DATABASE_DIRECT_URL go, as whom and with which TLS. Its own fixture: testdata/broken-cnpg.yaml.
 *
 * Exit code 0 when everything passes; 1 with one line per problem otherwise.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import YAML from 'yaml';
import { checkCloudNativePg, cnpgSchemaErrors, isCnpgKind, operatorSecrets } from './cnpg.mjs';

const DEPLOY_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_DIR = resolve(DEPLOY_DIR, '..');
const SECRET_TEMPLATE = join(DEPLOY_DIR, 'secret.example.yaml');
const BROKEN_FIXTURE = join(DEPLOY_DIR, 'testdata', 'broken.yaml');
const BROKEN_CNPG_FIXTURE = join(DEPLOY_DIR, 'testdata', 'broken-cnpg.yaml');

/** What the service needs from the manifests. */
const APP = {
  secretKeys: ['ADMIN_TOKEN', 'DATABASE_URL', 'SECRET_ENCRYPTION_KEY'],
  /** Set in deployment.yaml's `env`, not in the ConfigMap. */
  fixedInDeployment: ['DB_MIGRATE_ON_START', 'HOST', 'METRICS_PORT', 'PORT'],
  /** The container port that METRICS_PORT must name (`GET /metrics` on a port of its own). */
  metricsPortName: 'metrics',
  /** Spread of the API pods: over the nodes, and (a preference: ScheduleAnyway) over the zones. */
  hostTopologyKey: 'kubernetes.io/hostname',
  zoneTopologyKey: 'topology.kubernetes.io/zone',
  migrateCommand: ['node', 'dist/cli.js', 'migrate'],
  livenessPath: '/healthz',
  readinessPath: '/readyz',
  /** Longest time the service needs after SIGTERM to finish requests in flight and close its pool. */
  drainSeconds: 20,
  /** Connections of the migration Job: the advisory-lock client and a pool of 2 (migrator.ts). */
  migrationConnections: 3,
  /** HPA annotation: the PostgreSQL connections the service may hold in total. */
  budgetAnnotation: 'subscription-service/db-connection-budget',
  placeholder: /^REPLACE_ME/,
};

const PROBLEM_PREFIX = 'error:';

// ---------------------------------------------------------------------------------------------
// YAML loading

const ORIGIN = Symbol('origin');

function loadObjects(file) {
  const text = readFileSync(file, 'utf8');
  // YAML 1.1, as kubectl reads it (`yes`, `on` are booleans there).
  const docs = YAML.parseAllDocuments(text, { version: '1.1', prettyErrors: true });
  const out = [];
  for (const doc of docs) {
    if (doc.errors.length > 0)
      throw new RenderError(`${rel(file)}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS();
    if (value === null || value === undefined) continue;
    if (!isObject(value)) throw new RenderError(`${rel(file)}: a document is not a mapping`);
    Object.defineProperty(value, ORIGIN, { value: rel(file), enumerable: false, writable: true });
    out.push(value);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Rendering: kubectl kustomize

class RenderError extends Error {}

function podSpecOf(o) {
  if (['Deployment', 'Job', 'StatefulSet', 'DaemonSet', 'ReplicaSet'].includes(o.kind))
    return o.spec?.template?.spec;
  if (o.kind === 'Pod') return o.spec;
  return undefined;
}

function allContainers(podSpec) {
  return [...(podSpec?.initContainers ?? []), ...(podSpec?.containers ?? [])];
}

/** `registry:5000/name:tag@sha256:...` → { name, tag, digest } */
function parseImage(image) {
  let rest = image;
  let digest;
  const at = rest.indexOf('@');
  if (at >= 0) [rest, digest] = [rest.slice(0, at), rest.slice(at + 1)];
  let tag;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) [rest, tag] = [rest.slice(0, colon), rest.slice(colon + 1)];
  return { name: rest, tag, digest };
}

function kustomizationDirs(root = DEPLOY_DIR) {
  const out = [];
  const walk = (d) => {
    if (existsSync(join(d, 'kustomization.yaml'))) out.push(d);
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory() && e.name !== 'testdata' && e.name !== 'node_modules') walk(join(d, e.name));
    }
  };
  walk(root);
  return out.sort();
}

/**
 * Renders a kustomization with `kubectl kustomize` (kubectl's built-in kustomize, the same that
 * `kubectl apply -k` runs): the objects, each remembering its kustomization.
 */
function render(dir) {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
  if (r.error) {
    if (r.error.code === 'ENOENT')
      throw new RenderError(
        'kubectl not found on the PATH: the manifests are rendered with `kubectl kustomize`; install kubectl ' +
          '(https://kubernetes.io/docs/tasks/tools/) and run this again',
      );
    throw new RenderError(`kubectl kustomize ${rel(dir)}: ${r.error.message}`);
  }
  if (r.status !== 0)
    throw new RenderError(
      `${rel(dir)}: kubectl kustomize failed: ${(r.stderr || '').trim() || `exit code ${r.status}`}`,
    );
  const out = [];
  for (const doc of YAML.parseAllDocuments(r.stdout, { version: '1.1' })) {
    const value = doc.toJS();
    if (value === null || value === undefined) continue;
    Object.defineProperty(value, ORIGIN, { value: rel(dir), enumerable: false, writable: true });
    out.push(value);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Schema validation with kubernetes-models

const modelCache = new Map();

async function modelFor(apiVersion, kind) {
  if (typeof apiVersion !== 'string' || !/^([a-z0-9.-]+\/)?v[0-9a-z]+$/.test(apiVersion)) return undefined;
  if (!modelCache.has(apiVersion)) {
    modelCache.set(apiVersion, await import(`kubernetes-models/${apiVersion}`).catch(() => null));
  }
  const mod = modelCache.get(apiVersion);
  return mod && typeof mod[kind] === 'function' ? mod[kind] : undefined;
}

function schemaErrors(Model, doc) {
  try {
    new Model(doc).validate();
    return [];
  } catch (e) {
    if (!Array.isArray(e.errors)) throw e;
    return e.errors;
  }
}

const pointer = (path) => path.map((p) => '/' + String(p).replace(/~/g, '~0').replace(/\//g, '~1')).join('');

/**
 * Fields the schema does not know. The Kubernetes schemas do not set additionalProperties:
 * false, so the compiled validators accept any extra key. Each key of the (already valid)
 * object is replaced in turn by a value of the wrong type: a field the schema knows then fails
 * validation at that exact path; a field it does not know still passes. Two probe values are
 * tried so that boolean fields (which accept `true`) are recognised as known too.
 */
function unknownFields(Model, doc) {
  const found = [];
  const probes = [true, 'probe-value-of-the-wrong-type'];
  const walk = (node, path) => {
    if (Array.isArray(node)) {
      node.forEach((item, i) => walk(item, [...path, i]));
      return;
    }
    if (!isObject(node)) return;
    for (const key of Object.keys(node)) {
      const here = [...path, key];
      const at = pointer(here);
      const known = probes.some((probe) => {
        const copy = clone(doc);
        let parent = copy;
        for (const p of path) parent = parent[p];
        parent[key] = probe;
        return schemaErrors(Model, copy).some(
          (e) => e.instancePath === at || e.instancePath.startsWith(at + '/'),
        );
      });
      if (known) walk(node[key], here);
      else found.push(here.join('.'));
    }
  };
  walk(doc, []);
  return found;
}

/** Problems of a value of an embedded Kubernetes type (in a CloudNativePG object), see deploy/cnpg.mjs. */
async function k8sErrors(type, value) {
  const mod = await import(
    type === 'DeploymentStrategy' ? 'kubernetes-models/apps/v1' : 'kubernetes-models/v1'
  );
  const Model = mod[type];
  const split = (instancePath) => instancePath.split('/').slice(1);
  const errors = schemaErrors(Model, value);
  if (errors.length > 0) return errors.map((e) => ({ path: split(e.instancePath), message: e.message }));
  return unknownFields(Model, value).map((f) => ({ path: f.split('.'), unknown: true }));
}

async function validateSchemas(objects, report) {
  for (const o of objects) {
    const where = `${o[ORIGIN] ?? '?'}: ${o.kind}/${o.metadata?.name ?? '(no name)'}`;
    if (isCnpgKind(o)) {
      // the operator's CRDs are not at hand: the fields the manifests use are described in cnpg.mjs
      for (const e of await cnpgSchemaErrors(o, k8sErrors)) report(`${where}: schema: ${e}`);
      continue;
    }
    const Model = await modelFor(o.apiVersion, o.kind);
    if (!Model) {
      report(
        `${where}: unknown apiVersion/kind ${o.apiVersion} ${o.kind} (not in the Kubernetes schemas of kubernetes-models)`,
      );
      continue;
    }
    const errors = schemaErrors(Model, o);
    for (const e of errors) {
      const extra = e.params?.allowedValues ? ` (${e.params.allowedValues.join(', ')})` : '';
      report(
        `${where}: schema: ${e.instancePath.replace(/^\//, '').replace(/\//g, '.') || '(top)'} ${e.message}${extra}`,
      );
    }
    if (errors.length === 0) {
      for (const f of unknownFields(Model, o)) report(`${where}: schema: unknown field ${f}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The service's own configuration rules (from the compiled src/config/env.ts)

function loadAppConfig() {
  const file = join(REPO_DIR, 'dist', 'config', 'env.js');
  if (!existsSync(file)) return undefined;
  const require = createRequire(file);
  require('reflect-metadata');
  const env = require(file);
  const { getMetadataStorage } = require('class-validator');
  const names = getMetadataStorage()
    .getTargetValidationMetadatas(env.EnvironmentVariables, '', true, false)
    .map((m) => m.propertyName)
    .filter((n) => n !== 'EMBEDDED_DATABASE');
  return { validateEnv: env.validateEnv, names: new Set(names) };
}

// ---------------------------------------------------------------------------------------------
// Policies

const QUANTITY = /^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/;
const FACTOR = {
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
};
function quantity(q) {
  const m = QUANTITY.exec(String(q));
  return m ? Number(m[1]) * (m[2] ? FACTOR[m[2]] : 1) : NaN;
}

function selectorMatches(selector, labels) {
  return (
    isObject(selector) &&
    Object.keys(selector).length > 0 &&
    Object.entries(selector).every(([k, v]) => labels?.[k] === v)
  );
}

function preStopSleepSeconds(container) {
  const pre = container.lifecycle?.preStop;
  if (pre?.sleep?.seconds !== undefined) return Number(pre.sleep.seconds);
  const cmd = pre?.exec?.command ?? [];
  if (cmd.length === 2 && /(^|\/)sleep$/.test(cmd[0]) && /^\d+$/.test(cmd[1])) return Number(cmd[1]);
  return undefined;
}

/**
 * The environment a container sees: ConfigMaps and Secrets of envFrom, then env (which wins).
 * Secret values are stand-ins that pass the service's validation (the real ones are not here).
 */
function effectiveEnv(container, objects, secretKeys) {
  const env = {};
  const STAND_IN = {
    DATABASE_URL: 'postgres://user:password@postgres:5432/subscriptions',
    SECRET_ENCRYPTION_KEY: 'A'.repeat(43) + '=',
    ADMIN_TOKEN: 'a-stand-in-admin-token-of-32-chars',
  };
  const configMap = (name) => objects.find((o) => o.kind === 'ConfigMap' && o.metadata?.name === name);
  for (const from of container.envFrom ?? []) {
    if (from.configMapRef) Object.assign(env, configMap(from.configMapRef.name)?.data);
    if (from.secretRef) for (const k of secretKeys) env[k] = STAND_IN[k] ?? 'stand-in';
  }
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = String(e.value);
    else if (e.valueFrom?.secretKeyRef) env[e.name] = STAND_IN[e.valueFrom.secretKeyRef.key] ?? 'stand-in';
    else if (e.valueFrom?.configMapKeyRef)
      env[e.name] = configMap(e.valueFrom.configMapKeyRef.name)?.data?.[e.valueFrom.configMapKeyRef.key];
  }
  return { env };
}

/**
 * @param objects  the rendered objects of one kustomization (or a fixture)
 * @param ctx      { where, rendered: boolean, app, secret: the Secret template object }
 */
function checkPolicies(objects, ctx, report) {
  const id = (o) => `${ctx.where}: ${o.kind}/${o.metadata?.name}`;
  const byKind = (kind) => objects.filter((o) => o.kind === kind);
  const secretName = ctx.secret?.metadata?.name;
  const secretKeys = Object.keys({ ...ctx.secret?.stringData, ...ctx.secret?.data });

  if (ctx.rendered) {
    for (const s of byKind('Secret'))
      report(
        `${id(s)}: Secrets must not be in a kustomization (kubectl apply -k would overwrite the real one); see deploy/secret.example.yaml`,
      );
    if (byKind('Deployment').length === 0) report(`${ctx.where}: no Deployment rendered`);
    if (byKind('Job').length === 0) report(`${ctx.where}: no migration Job rendered`);
  }

  const effectiveEnvs = new Map(); // Deployment → its container's environment, for the connection budget
  const serviceAccounts = new Map(byKind('ServiceAccount').map((sa) => [sa.metadata?.name, sa]));
  const images = new Set();

  for (const w of objects.filter((o) => ['Deployment', 'Job'].includes(o.kind))) {
    const pod = podSpecOf(w) ?? {};
    const psc = pod.securityContext ?? {};
    const where = id(w);

    // Service account: none of its token in the pod.
    const sa = serviceAccounts.get(pod.serviceAccountName);
    if (pod.automountServiceAccountToken !== false && sa?.automountServiceAccountToken !== false) {
      report(
        `${where}: automountServiceAccountToken must be false (the service never calls the Kubernetes API)`,
      );
    }
    if (ctx.rendered && (!pod.serviceAccountName || !sa))
      report(`${where}: serviceAccountName must name the ServiceAccount of this kustomization`);

    const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
    for (const c of allContainers(pod)) {
      const cw = `${where}: container ${c.name}`;
      const sc = c.securityContext ?? {};
      const nonRoot = sc.runAsNonRoot ?? psc.runAsNonRoot;
      const uid = sc.runAsUser ?? psc.runAsUser;
      if (nonRoot !== true) report(`${cw}: runAsNonRoot must be true`);
      if (!Number.isInteger(uid) || uid === 0)
        report(
          `${cw}: runAsUser must be a numeric non-root uid (the image's user "node" is 1000; the kubelet cannot verify a user name)`,
        );
      if ((sc.seccompProfile ?? psc.seccompProfile)?.type !== 'RuntimeDefault')
        report(`${cw}: seccompProfile must be RuntimeDefault`);
      if (sc.readOnlyRootFilesystem !== true) report(`${cw}: readOnlyRootFilesystem must be true`);
      if (sc.allowPrivilegeEscalation !== false) report(`${cw}: allowPrivilegeEscalation must be false`);
      if (!(sc.capabilities?.drop ?? []).includes('ALL')) report(`${cw}: capabilities.drop must include ALL`);
      if (sc.privileged === true) report(`${cw}: must not be privileged`);
      const tmp = (c.volumeMounts ?? []).find((m) => m.mountPath === '/tmp');
      if (!tmp || !volumes.get(tmp.name)?.emptyDir)
        report(`${cw}: needs an emptyDir volume mounted at /tmp (the root filesystem is read-only)`);

      for (const res of ['cpu', 'memory']) {
        const req = c.resources?.requests?.[res];
        const lim = c.resources?.limits?.[res];
        if (req === undefined) report(`${cw}: resources.requests.${res} is missing`);
        if (lim === undefined) report(`${cw}: resources.limits.${res} is missing`);
        if (req !== undefined && lim !== undefined && !(quantity(lim) >= quantity(req)))
          report(`${cw}: resources.limits.${res} (${lim}) is below the request (${req})`);
      }

      const img = parseImage(String(c.image ?? ''));
      if (!img.digest && (!img.tag || img.tag === 'latest'))
        report(`${cw}: image ${c.image} must have a fixed tag or digest (not :latest)`);
      images.add(c.image);
    }

    if (w.kind === 'Deployment') {
      const containers = pod.containers ?? [];
      for (const c of containers) {
        const cw = `${where}: container ${c.name}`;
        const ports = new Map((c.ports ?? []).map((p) => [p.name, p.containerPort]));
        const probe = (name, path) => {
          const p = c[name];
          if (!p) return report(`${cw}: ${name} is missing`);
          if (!p.httpGet) return report(`${cw}: ${name} must be an httpGet probe`);
          if (path && p.httpGet.path !== path)
            report(`${cw}: ${name} must GET ${path}, not ${p.httpGet.path}`);
          const port = typeof p.httpGet.port === 'string' ? ports.get(p.httpGet.port) : p.httpGet.port;
          if (port === undefined)
            report(`${cw}: ${name} port ${p.httpGet.port} is not a port of the container`);
        };
        probe('livenessProbe', APP.livenessPath);
        probe('readinessProbe', APP.readinessPath);
        probe('startupProbe');

        const sleep = preStopSleepSeconds(c);
        const grace = pod.terminationGracePeriodSeconds ?? 30;
        if (sleep === undefined || sleep < 1) {
          report(
            `${cw}: lifecycle.preStop must sleep a few seconds, so the pod leaves the endpoints before SIGTERM`,
          );
        } else if (grace < sleep + APP.drainSeconds) {
          report(
            `${where}: terminationGracePeriodSeconds ${grace} is shorter than the preStop sleep (${sleep} s) plus the drain time (${APP.drainSeconds} s)`,
          );
        }

        const { env } = effectiveEnv(c, objects, secretKeys.length > 0 ? secretKeys : APP.secretKeys);
        if (env.DB_MIGRATE_ON_START !== 'false') {
          report(
            `${cw}: DB_MIGRATE_ON_START must be "false" (the migration Job applies migrations), found ${JSON.stringify(env.DB_MIGRATE_ON_START)}`,
          );
        }
        const httpPort = (c.ports ?? [])[0]?.containerPort;
        if (env.PORT !== undefined && Number(env.PORT) !== httpPort)
          report(`${cw}: PORT ${env.PORT} is not the container port ${httpPort}`);
        // /metrics on a port of its own, so that the NetworkPolicy and a Service can single it out
        const metricsPort = ports.get(APP.metricsPortName);
        if (env.METRICS_PORT === undefined || env.METRICS_PORT === '')
          report(
            `${cw}: METRICS_PORT must be set (otherwise /metrics is served on the API port, behind its Service and ingress)`,
          );
        else if (metricsPort === undefined)
          report(
            `${cw}: METRICS_PORT ${env.METRICS_PORT} needs a container port named "${APP.metricsPortName}"`,
          );
        else if (Number(env.METRICS_PORT) !== metricsPort)
          report(
            `${cw}: METRICS_PORT ${env.METRICS_PORT} is not the container port named "${APP.metricsPortName}" (${metricsPort})`,
          );
        else if (metricsPort === httpPort) report(`${cw}: METRICS_PORT must differ from the API port`);
        if (!(c.envFrom ?? []).some((f) => f.configMapRef))
          report(`${cw}: must take its configuration from a ConfigMap (envFrom.configMapRef)`);
        for (const f of c.envFrom ?? []) {
          if (
            f.configMapRef &&
            !objects.some((o) => o.kind === 'ConfigMap' && o.metadata?.name === f.configMapRef.name)
          ) {
            report(`${cw}: envFrom ConfigMap ${f.configMapRef.name} is not among the manifests`);
          }
        }
        const secretRef = (c.envFrom ?? []).find((f) => f.secretRef)?.secretRef;
        if (!secretRef)
          report(
            `${cw}: must take DATABASE_URL, SECRET_ENCRYPTION_KEY and ADMIN_TOKEN from a Secret (envFrom.secretRef)`,
          );
        else if (secretName && secretRef.name !== secretName)
          report(
            `${cw}: envFrom Secret ${secretRef.name} is not the one of deploy/secret.example.yaml (${secretName})`,
          );

        if (ctx.app) {
          try {
            ctx.app.validateEnv({ ...env });
          } catch (e) {
            report(`${cw}: the service would refuse this configuration: ${e.message.replace(/\n\s*/g, ' ')}`);
          }
        }
        effectiveEnvs.set(w, env);
      }

      const hpa = byKind('HorizontalPodAutoscaler').find(
        (h) =>
          h.spec?.scaleTargetRef?.kind === 'Deployment' && h.spec?.scaleTargetRef?.name === w.metadata?.name,
      );
      if (ctx.rendered && !hpa) report(`${where}: no HorizontalPodAutoscaler targets it`);
      if (hpa && w.spec?.replicas !== undefined)
        report(
          `${where}: spec.replicas is set although ${hpa.metadata?.name} autoscales it (every apply would reset the count)`,
        );
      const ru = w.spec?.strategy?.rollingUpdate;
      if (w.spec?.strategy?.type === 'Recreate')
        report(`${where}: strategy Recreate stops every pod at once`);
      if (ru && String(ru.maxUnavailable) !== '0')
        report(`${where}: rollingUpdate.maxUnavailable must be 0 (keep capacity during a rollout)`);

      const podLabels = w.spec?.template?.metadata?.labels ?? {};
      if (!selectorMatches(w.spec?.selector?.matchLabels, podLabels))
        report(`${where}: selector does not match its pod template's labels`);

      // Topology spread: a node or a zone that goes away must not take every pod with it.
      const spread = (key) =>
        (pod.topologySpreadConstraints ?? []).find(
          (t) => t.topologyKey === key && selectorMatches(t.labelSelector?.matchLabels, podLabels),
        );
      if (!spread(APP.hostTopologyKey))
        report(
          `${where}: topologySpreadConstraints must spread its pods over ${APP.hostTopologyKey} (labelSelector matching its pods)`,
        );
      const zone = spread(APP.zoneTopologyKey);
      if (!zone)
        report(
          `${where}: topologySpreadConstraints must spread its pods over ${APP.zoneTopologyKey} (labelSelector matching its pods)`,
        );
      else if (zone.whenUnsatisfiable !== 'ScheduleAnyway')
        report(
          `${where}: the spread over ${APP.zoneTopologyKey} must be whenUnsatisfiable: ScheduleAnyway (a cluster in one zone would schedule nothing)`,
        );

      checkNetworkPolicies(w, objects, report, id);
      if (ctx.rendered) {
        const svc = byKind('Service').filter((s) => selectorMatches(s.spec?.selector, podLabels));
        if (svc.length === 0) report(`${where}: no Service selects its pods`);
        const metricsPorts = (pod.containers ?? []).flatMap((c) =>
          (c.ports ?? []).filter((p) => p.name === APP.metricsPortName),
        );
        const scraped = svc.some((s) =>
          (s.spec?.ports ?? []).some((p) =>
            metricsPorts.some((mp) => p.targetPort === mp.name || p.targetPort === mp.containerPort),
          ),
        );
        if (metricsPorts.length > 0 && !scraped)
          report(`${where}: no Service exposes its "${APP.metricsPortName}" port for scraping`);
        const pdb = byKind('PodDisruptionBudget').filter((p) =>
          selectorMatches(p.spec?.selector?.matchLabels, podLabels),
        );
        if (pdb.length === 0) report(`${where}: no PodDisruptionBudget selects its pods`);
      }
    }

    if (w.kind === 'Job') {
      const c = (pod.containers ?? [])[0] ?? {};
      const cmd = [...(c.command ?? []), ...(c.args ?? [])];
      if ((pod.containers ?? []).length !== 1 || !isDeepStrictEqual(cmd, APP.migrateCommand)) {
        report(
          `${where}: the Job must run ${APP.migrateCommand.join(' ')} (found: ${cmd.join(' ') || 'the image default'})`,
        );
      }
      if (!Number.isInteger(w.spec?.backoffLimit)) report(`${where}: backoffLimit must be set`);
      if (!Number.isInteger(w.spec?.ttlSecondsAfterFinished))
        report(`${where}: ttlSecondsAfterFinished must be set`);
      if (!['Never', 'OnFailure'].includes(pod.restartPolicy))
        report(`${where}: restartPolicy must be Never or OnFailure`);
      const { env } = effectiveEnv(c, objects, secretKeys.length > 0 ? secretKeys : APP.secretKeys);
      if (!env.DATABASE_URL) report(`${where}: the migration Job needs DATABASE_URL from the Secret`);
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        // besides the service's Secret, those a CloudNativePG Cluster of these manifests makes
        if (ref && secretName && ref.name !== secretName && !operatorSecrets(objects).includes(ref.name))
          report(
            `${where}: secretKeyRef ${ref.name} is not the Secret of deploy/secret.example.yaml (${secretName})`,
          );
      }
      const podLabels = w.spec?.template?.metadata?.labels ?? {};
      for (const s of byKind('Service')) {
        if (selectorMatches(s.spec?.selector, podLabels))
          report(`${where}: Service ${s.metadata?.name} selects the Job's pod and would send it traffic`);
      }
    }
  }

  if (ctx.rendered && images.size > 1)
    report(
      `${ctx.where}: the Deployment and the migration Job must use the same image (found ${[...images].join(', ')})`,
    );

  for (const cm of byKind('ConfigMap')) {
    for (const name of Object.keys(cm.data ?? {})) {
      if (APP.secretKeys.includes(name))
        report(`${id(cm)}: ${name} belongs in the Secret, not in a ConfigMap`);
      else if (APP.fixedInDeployment.includes(name))
        report(
          `${id(cm)}: ${name} is fixed in deployment.yaml's env (which overrides the ConfigMap); remove it here`,
        );
      else if (ctx.app && !ctx.app.names.has(name) && !['NODE_OPTIONS', 'NODE_ENV'].includes(name)) {
        report(`${id(cm)}: ${name} is not a setting of the service (docs/operations.md#configuration)`);
      }
    }
  }

  for (const s of byKind('Service')) {
    const target = byKind('Deployment').find((d) =>
      selectorMatches(s.spec?.selector, d.spec?.template?.metadata?.labels),
    );
    for (const p of s.spec?.ports ?? []) {
      if (typeof p.targetPort === 'string' && target) {
        const named = (target.spec.template.spec.containers ?? []).some((c) =>
          (c.ports ?? []).some((cp) => cp.name === p.targetPort),
        );
        if (!named)
          report(`${id(s)}: targetPort ${p.targetPort} is not a named port of ${target.metadata?.name}`);
      }
    }
  }

  for (const np of byKind('NetworkPolicy')) {
    const selects = byKind('Deployment').some((d) =>
      selectorMatches(np.spec?.podSelector?.matchLabels, d.spec?.template?.metadata?.labels),
    );
    if (!selects) report(`${id(np)}: podSelector selects the pods of no Deployment here`);
  }

  for (const h of byKind('HorizontalPodAutoscaler')) {
    const where = id(h);
    const target = objects.find(
      (o) => o.kind === h.spec?.scaleTargetRef?.kind && o.metadata?.name === h.spec?.scaleTargetRef?.name,
    );
    if (!target)
      report(
        `${where}: scaleTargetRef ${h.spec?.scaleTargetRef?.kind}/${h.spec?.scaleTargetRef?.name} is not among the manifests`,
      );
    const min = h.spec?.minReplicas ?? 1;
    const max = h.spec?.maxReplicas;
    if (min < 2)
      report(`${where}: minReplicas must be at least 2 (one pod can be drained while another serves)`);
    if (!(max >= min)) report(`${where}: maxReplicas must be at least minReplicas`);
    if (!(h.spec?.metrics ?? []).some((m) => m.type === 'Resource' && m.resource?.name === 'cpu'))
      report(`${where}: needs a CPU Resource metric`);
    const budget = Number(h.metadata?.annotations?.[APP.budgetAnnotation]);
    if (!Number.isInteger(budget) || budget <= 0) {
      report(
        `${where}: annotation ${APP.budgetAnnotation} must give the PostgreSQL connections this service may use`,
      );
    } else if (effectiveEnvs.has(target)) {
      const pool = Number(effectiveEnvs.get(target).DB_POOL_SIZE ?? 10);
      const surge = Number(target.spec?.strategy?.rollingUpdate?.maxSurge ?? 1);
      const needed = pool * (max + (Number.isInteger(surge) ? surge : 1)) + APP.migrationConnections;
      if (needed > budget) {
        report(
          `${where}: DB_POOL_SIZE ${pool} x (maxReplicas ${max} + surge ${surge}) + ${APP.migrationConnections} (migration Job) = ${needed} connections, over the budget of ${budget}`,
        );
      }
    }
  }

  checkCloudNativePg(
    objects,
    { id, objects, apiEnvs: effectiveEnvs, migrationConnections: APP.migrationConnections },
    report,
  );
}

/**
 * The NetworkPolicy of a Deployment's pods: one selects them; its ingress rules name ports the
 * containers have; the API port and the metrics port are each let in, and each only from chosen
 * sources (a rule without `from` would open the port to every pod of the cluster).
 */
function checkNetworkPolicies(w, objects, report, id) {
  const where = id(w);
  const podLabels = w.spec?.template?.metadata?.labels ?? {};
  const policies = objects.filter(
    (o) => o.kind === 'NetworkPolicy' && selectorMatches(o.spec?.podSelector?.matchLabels, podLabels),
  );
  if (policies.length === 0) return report(`${where}: no NetworkPolicy selects its pods`);
  const containerPorts = (podSpecOf(w)?.containers ?? []).flatMap((c) => c.ports ?? []);
  const numberOf = (port) =>
    typeof port === 'string' ? containerPorts.find((cp) => cp.name === port)?.containerPort : port;
  const rules = [];
  for (const np of policies) {
    const types = np.spec?.policyTypes ?? ['Ingress'];
    if (!types.includes('Ingress')) {
      report(`${id(np)}: policyTypes must include Ingress`);
      continue;
    }
    for (const rule of np.spec?.ingress ?? []) {
      for (const p of rule.ports ?? []) {
        if (numberOf(p.port) === undefined)
          report(`${id(np)}: ingress port ${p.port} is not a port of ${w.metadata?.name}'s containers`);
      }
      rules.push({ np, rule });
    }
  }
  const named = (name) => containerPorts.find((cp) => cp.name === name);
  for (const [label, port] of [
    ['API port', named('http') ?? containerPorts[0]],
    [`"${APP.metricsPortName}" port`, named(APP.metricsPortName)],
  ]) {
    if (!port) continue;
    const letIn = rules.filter(
      ({ rule }) =>
        (rule.ports ?? []).length === 0 || rule.ports.some((p) => numberOf(p.port) === port.containerPort),
    );
    if (letIn.length === 0)
      report(`${where}: no NetworkPolicy rule lets anything reach its ${label} ${port.containerPort}`);
    for (const { np, rule } of letIn) {
      if ((rule.from ?? []).length === 0)
        report(
          `${id(np)}: an ingress rule opens the ${label} ${port.containerPort} to every source; name the namespace (namespaceSelector) allowed in`,
        );
    }
  }
}

/** The Secret template: schema-valid, the right keys, placeholders only, and in no kustomization. */
function checkSecretTemplate(secret, report) {
  const where = `${rel(SECRET_TEMPLATE)}: Secret/${secret?.metadata?.name}`;
  if (secret?.kind !== 'Secret') return report(`${rel(SECRET_TEMPLATE)}: must hold one Secret`);
  const values = { ...secret.data, ...secret.stringData };
  const keys = Object.keys(values).sort();
  if (!isDeepStrictEqual(keys, [...APP.secretKeys].sort()))
    report(`${where}: keys must be ${APP.secretKeys.join(', ')} (found ${keys.join(', ')})`);
  if (secret.data) report(`${where}: use stringData with REPLACE_ME placeholders, not data`);
  for (const [k, v] of Object.entries(values)) {
    if (!APP.placeholder.test(String(v)))
      report(`${where}: ${k} is not a REPLACE_ME placeholder; never commit a real value`);
  }
}

// ---------------------------------------------------------------------------------------------
// Runs

async function validateManifests() {
  const problems = [];
  const report = (msg) => problems.push(msg);
  const app = loadAppConfig();
  if (!app) {
    const msg =
      "dist/config/env.js not found: run `npm run build` first (the configuration is checked with the service's own rules)";
    if (process.env.CI) report(msg);
    else console.log(`note: ${msg}; that check is skipped`);
  }

  let secret;
  try {
    const docs = loadObjects(SECRET_TEMPLATE);
    if (docs.length !== 1) report(`${rel(SECRET_TEMPLATE)}: must hold exactly one document`);
    secret = docs[0];
    await validateSchemas(docs, report);
    checkSecretTemplate(secret, report);
  } catch (e) {
    if (!(e instanceof RenderError)) throw e;
    report(e.message);
  }

  let count = 0;
  const dirs = kustomizationDirs();
  if (dirs.length === 0) report('no kustomization.yaml under deploy/');
  for (const dir of dirs) {
    let objects;
    try {
      objects = render(dir);
    } catch (e) {
      if (!(e instanceof RenderError)) throw e;
      report(e.message);
      continue;
    }
    const before = problems.length;
    await validateSchemas(objects, report);
    checkPolicies(objects, { where: rel(dir), rendered: true, app, secret }, report);
    if (objects.some((o) => containsSecretValue(o)))
      report(`${rel(dir)}: a rendered object contains a Secret value`);
    count += objects.length;
    console.log(
      `${problems.length === before ? 'ok  ' : 'FAIL'} ${rel(dir)}: ${objects.length} objects (${objects.map((o) => o.kind).join(', ')})`,
    );
  }
  return { problems, count, dirs: dirs.length };
}

function containsSecretValue(o) {
  return o.kind === 'Secret' && Object.keys({ ...o.data, ...o.stringData }).length > 0;
}

/**
 * testdata/broken.yaml holds one defect per line of EXPECTED; every one must be reported, so a
 * check that stops working is noticed.
 */
async function selfTest({ verbose = false } = {}) {
  const EXPECTED = [
    /Deploymnet\/.*unknown apiVersion\/kind/,
    /Service\/broken: schema: spec\.ports\.0\.port must be integer/,
    /Deployment\/broken: schema: unknown field spec\.template\.spec\.containers\.0\.readinesProbe/,
    /Deployment\/broken: container api: runAsNonRoot must be true/,
    /Deployment\/broken: container api: runAsUser must be a numeric non-root uid/,
    /Deployment\/broken: container api: readOnlyRootFilesystem must be true/,
    /Deployment\/broken: container api: capabilities\.drop must include ALL/,
    /Deployment\/broken: container api: resources\.limits\.memory is missing/,
    /Deployment\/broken: container api: readinessProbe is missing/,
    /Deployment\/broken: container api: image subscription-service:latest must have a fixed tag/,
    /Deployment\/broken: container api: DB_MIGRATE_ON_START must be "false"/,
    /Deployment\/broken: terminationGracePeriodSeconds 15 is shorter than the preStop sleep/,
    /ConfigMap\/broken-config: DATABASE_URL belongs in the Secret/,
    /Job\/broken-migrate: the Job must run node dist\/cli\.js migrate/,
    /Job\/broken-migrate: ttlSecondsAfterFinished must be set/,
    /Job\/broken-migrate: Service broken selects the Job's pod/,
    /HorizontalPodAutoscaler\/broken: minReplicas must be at least 2/,
    /Deployment\/broken: container api: METRICS_PORT 9464 is not the container port named "metrics" \(9090\)/,
    /Deployment\/broken: topologySpreadConstraints must spread its pods over kubernetes\.io\/hostname/,
    /Deployment\/broken: the spread over topology\.kubernetes\.io\/zone must be whenUnsatisfiable: ScheduleAnyway/,
    /NetworkPolicy\/broken-typo: podSelector selects the pods of no Deployment here/,
    /NetworkPolicy\/broken: ingress port metric is not a port of broken's containers/,
    /NetworkPolicy\/broken: an ingress rule opens the "metrics" port 9090 to every source/,
    /HorizontalPodAutoscaler\/broken: DB_POOL_SIZE 50 x \(maxReplicas 10 \+ surge 1\) \+ 3 \(migration Job\) = 553 connections, over the budget of 97/,
  ];
  const app = loadAppConfig();
  if (app) {
    EXPECTED.push(/ConfigMap\/broken-config: LOG_LEVELS is not a setting of the service/);
    EXPECTED.push(/the service would refuse this configuration: .*BCRYPT_COST/);
  }
  // testdata/broken-cnpg.yaml: the CloudNativePG checks (deploy/cnpg.mjs)
  const EXPECTED_CNPG = [
    /Cluster\/broken-db: schema: unknown field spec\.postgresql\.synchronus/,
    /Cluster\/broken-db: schema: spec\.storage\.size must be a quantity/,
    /Cluster\/broken-db: instances must be at least 3/,
    /Cluster\/broken-db: synchronous replication is off/,
    /Cluster\/broken-db: imageName \S+:latest must be a tagged PostgreSQL/,
    /Pooler\/broken-db: a Pooler cannot have the name of a Cluster/,
    /Pooler\/broken-db-pooler: pgbouncer\.parameters\.max_prepared_statement is not a parameter the operator accepts/,
    /Pooler\/broken-db-pooler: pgbouncer\.poolMode must be transaction/,
    /Pooler\/broken-db-pooler: pgbouncer\.parameters\.ignore_startup_parameters must include statement_timeout/,
    /Deployment\/broken-api: container api: DATABASE_URL's host broken-db-rw is not the service of the Pooler \(broken-db-pooler\)/,
    /Deployment\/broken-api: container api: DATABASE_READ_URL must go to the read-only service broken-db-ro/,
    /Deployment\/broken-api: container api: DATABASE_URL carries a password/,
    /Deployment\/broken-api: container api: DATABASE_URL must use sslmode=verify-full/,
    /Deployment\/broken-api: container api: PGPASSWORD must come from the Secret broken-db-app/,
    /Deployment\/broken-api: container api: DATABASE_READ_URL's sslrootcert \/etc\/ca\/ca\.crt must be the key ca\.crt of the Secret broken-db-ca/,
    /Job\/broken-migrate: container migrate: the migration Job needs DATABASE_DIRECT_URL/,
    /Job\/broken-migrate: container migrate: DATABASE_URL's host broken-db-pooler is not a name of broken-db's server certificate/,
    /Cluster\/broken-db: through the Pooler the pool's statement_timeout is dropped/,
    /Pooler\/broken-db-pooler: max_client_conn 100 is below \(DB_POOL_SIZE 10 \+ 2 for the start-up probe\) x 11 pods/,
    /Pooler\/broken-db-pooler: 2 PgBouncer pods x .* = 63 server connections, over broken-db's max_connections 20/,
    /Pooler\/broken-db-pooler: max_prepared_statements must be above 0 while DB_PREPARED_STATEMENTS is true/,
    /Pooler\/broken-db-pooler: PgBouncer \S+:1\.18\.0 cannot keep prepared statements in transaction mode/,
  ];
  const failures = [];
  let count = 0;
  const secret = loadObjects(SECRET_TEMPLATE)[0];
  for (const [fixture, expected] of [
    [BROKEN_FIXTURE, EXPECTED],
    [BROKEN_CNPG_FIXTURE, EXPECTED_CNPG],
  ]) {
    const problems = [];
    const report = (m) => problems.push(m);
    const objects = loadObjects(fixture);
    await validateSchemas(objects, report);
    checkPolicies(objects, { where: rel(fixture), rendered: false, app, secret }, report);
    if (verbose) for (const p of problems) console.log(`  (expected) ${p}`);
    if (problems.length === 0) failures.push(`${rel(fixture)} was accepted`);
    for (const re of expected) {
      if (!problems.some((p) => re.test(p)))
        failures.push(`${rel(fixture)}: expected a problem matching ${re}`);
    }
    count += problems.length;
  }

  return { failures, count, expected: EXPECTED.length + EXPECTED_CNPG.length };
}

// ---------------------------------------------------------------------------------------------
// Helpers

function isObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function clone(v) {
  if (Array.isArray(v)) return v.map(clone);
  if (!isObject(v)) return v;
  const out = {};
  for (const [k, x] of Object.entries(v)) out[k] = clone(x);
  if (v[ORIGIN]) Object.defineProperty(out, ORIGIN, { value: v[ORIGIN], enumerable: false, writable: true });
  return out;
}

function rel(p) {
  return relative(REPO_DIR, p) || '.';
}

// ---------------------------------------------------------------------------------------------

async function main(argv) {
  const flags = new Set(argv.filter((a) => a.startsWith('--')));
  const known = new Set(['--self-test', '--print', '--verbose', '--help']);
  const bad = [...flags].filter((f) => !known.has(f));
  if (bad.length > 0 || flags.has('--help')) {
    console.log('usage: node deploy/validate.mjs [--self-test] [--verbose] [--print DIR]');
    return bad.length > 0 ? 2 : 0;
  }
  if (flags.has('--print')) {
    const dir = resolve(argv[argv.indexOf('--print') + 1] ?? '');
    process.stdout.write(
      render(dir)
        .map((o) => YAML.stringify(JSON.parse(JSON.stringify(o))))
        .join('---\n'),
    );
    return 0;
  }

  let failed = false;
  if (!flags.has('--self-test')) {
    const { problems, count, dirs } = await validateManifests();
    for (const p of new Set(problems)) console.error(`${PROBLEM_PREFIX} ${p}`);
    if (problems.length > 0) {
      console.error(`deploy: ${new Set(problems).size} problem(s) in the manifests`);
      failed = true;
    } else {
      console.log(`deploy: ${dirs} kustomization(s), ${count} objects and the Secret template are valid`);
    }
  }

  const { failures, count, expected } = await selfTest({ verbose: flags.has('--verbose') });
  for (const f of failures) console.error(`${PROBLEM_PREFIX} self-test: ${f}`);
  if (failures.length > 0) {
    console.error(
      `deploy self-test: FAILED (${failures.length} check(s)); the validator no longer catches what it should`,
    );
    failed = true;
  } else {
    console.log(
      `deploy self-test: ${rel(BROKEN_FIXTURE)} and ${rel(BROKEN_CNPG_FIXTURE)} refused with ${count} problems, all ${expected} planted defects found`,
    );
  }
  return failed ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error) => {
    console.error(
      `${PROBLEM_PREFIX} ${error instanceof RenderError ? error.message : (error?.stack ?? error)}`,
    );
    process.exit(1);
  },
);
