#!/usr/bin/env node
/**
 * Offline check of the Kubernetes manifests under deploy/ (npm run deploy:validate; CI runs it).
 *
 *   node deploy/validate.mjs              render and check every kustomization, then the self-test
 *   node deploy/validate.mjs --self-test  only the self-test: testdata/broken.yaml must be refused
 *   node deploy/validate.mjs --print DIR  print the rendered YAML of one kustomization
 *   --verbose                             also list what the self-test's fixture is refused for
 *   --no-kubectl                          skip the comparison with `kubectl kustomize`
 *
 * 1. Render: every directory under deploy/ with a kustomization.yaml is rendered by the small
 *    renderer below (no kubectl or kustomize needed). It implements only what the manifests use,
 *    and refuses anything else rather than render it wrongly: `resources` (files inside the
 *    kustomization's directory, or other kustomization directories), `patches` (strategic merge,
 *    `path:` only, target found by kind and name), `images`, `labels` (`pairs`,
 *    `includeSelectors`, `includeTemplates`) and `namespace`. When `kubectl` is on the PATH the
 *    output is also compared with `kubectl kustomize`, so the renderer itself is checked.
 * 2. Schemas: each rendered object is validated by apiVersion/kind with the `kubernetes-models`
 *    classes (the official OpenAPI schemas compiled to validators), and unknown fields are
 *    refused too (the schemas allow extra properties, so a typo such as `readinesProbe` would
 *    otherwise pass; see unknownFields()).
 * 3. Policies: security context, resources, probes, graceful shutdown, the migration Job, the
 *    configuration against the service's own validation (dist/config/env.js), the database
 *    connection budget, label selectors, and the Secret template (see checkPolicies()).
 *
 * Exit code 0 when everything passes; 1 with one line per problem otherwise.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import YAML from 'yaml';

const DEPLOY_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_DIR = resolve(DEPLOY_DIR, '..');
const SECRET_TEMPLATE = join(DEPLOY_DIR, 'secret.example.yaml');
const BROKEN_FIXTURE = join(DEPLOY_DIR, 'testdata', 'broken.yaml');

/** What the service needs from the manifests. */
const APP = {
  secretKeys: ['ADMIN_TOKEN', 'DATABASE_URL', 'SECRET_ENCRYPTION_KEY'],
  /** Set in deployment.yaml's `env`, not in the ConfigMap. */
  fixedInDeployment: ['DB_MIGRATE_ON_START', 'HOST', 'PORT'],
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
// Renderer: the subset of kustomize the manifests use

class RenderError extends Error {}

const KUSTOMIZATION_FIELDS = new Set([
  'apiVersion',
  'kind',
  'resources',
  'patches',
  'images',
  'labels',
  'namespace',
]);

/**
 * Where kustomize puts labels, for the kinds the renderer knows. Paths are arrays; `create`
 * says whether a missing map is created (kustomize's fieldSpecs, commonlabels.go/templatelabels).
 */
const LABEL_PATHS = {
  ServiceAccount: { templates: [], selectors: [] },
  ConfigMap: { templates: [], selectors: [] },
  Secret: { templates: [], selectors: [] },
  HorizontalPodAutoscaler: { templates: [], selectors: [] },
  Service: { templates: [], selectors: [{ path: ['spec', 'selector'], create: true }] },
  PodDisruptionBudget: {
    templates: [],
    selectors: [{ path: ['spec', 'selector', 'matchLabels'], create: false }],
  },
  Deployment: {
    templates: [{ path: ['spec', 'template', 'metadata', 'labels'], create: true }],
    selectors: [{ path: ['spec', 'selector', 'matchLabels'], create: true }],
  },
  Job: {
    templates: [{ path: ['spec', 'template', 'metadata', 'labels'], create: true }],
    selectors: [{ path: ['spec', 'selector', 'matchLabels'], create: false }],
  },
};
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'CustomResourceDefinition',
  'PersistentVolume',
  'StorageClass',
  'PriorityClass',
]);

/** Strategic-merge keys of the lists the patches may touch; other lists are replaced, as SMP does. */
function mergeKeyFor(path, field) {
  if (
    ['containers', 'initContainers', 'ephemeralContainers', 'env', 'volumes', 'imagePullSecrets'].includes(
      field,
    )
  )
    return 'name';
  if (field === 'volumeMounts') return 'mountPath';
  if (field === 'ports')
    return path.includes('containers') || path.includes('initContainers') ? 'containerPort' : 'port';
  return undefined;
}

function strategicMerge(target, patch, path = []) {
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$'))
      throw new RenderError(
        `patch directive ${key} at ${path.join('.') || '(top)'} is not supported by the renderer`,
      );
    const here = [...path, key];
    if (value === null) {
      delete target[key];
    } else if (isObject(value) && isObject(target[key])) {
      strategicMerge(target[key], value, here);
    } else if (Array.isArray(value) && Array.isArray(target[key]) && mergeKeyFor(path, key)) {
      const mk = mergeKeyFor(path, key);
      const merged = target[key];
      for (const item of value) {
        if (!isObject(item) || item[mk] === undefined)
          throw new RenderError(`patch list ${here.join('.')}: every item needs its merge key "${mk}"`);
        if (Object.keys(item).some((k) => k.startsWith('$')))
          throw new RenderError(`patch directive in ${here.join('.')} is not supported by the renderer`);
        const existing = merged.find((e) => isObject(e) && e[mk] === item[mk]);
        if (existing) strategicMerge(existing, item, here);
        else merged.push(clone(item));
      }
    } else {
      target[key] = clone(value);
    }
  }
  return target;
}

function objectId(o) {
  const group = String(o.apiVersion ?? '').includes('/') ? o.apiVersion.split('/')[0] : '';
  return `${group ? group + '/' : ''}${o.kind}/${o.metadata?.namespace ? o.metadata.namespace + '/' : ''}${o.metadata?.name}`;
}

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

function setLabels(obj, path, pairs, create) {
  let node = obj;
  for (let i = 0; i < path.length; i++) {
    const key = path[i];
    if (!isObject(node[key])) {
      if (!create) return;
      node[key] = {};
    }
    node = node[key];
  }
  Object.assign(node, pairs);
}

function render(dir, stack = []) {
  const kfile = join(dir, 'kustomization.yaml');
  const where = rel(kfile);
  if (!existsSync(kfile)) throw new RenderError(`${rel(dir)}: no kustomization.yaml`);
  if (stack.includes(dir)) throw new RenderError(`${where}: cycle through ${stack.map(rel).join(' -> ')}`);
  const [k, ...extra] = loadObjects(kfile);
  if (!k || extra.length > 0) throw new RenderError(`${where}: expected exactly one document`);
  if (k.apiVersion !== 'kustomize.config.k8s.io/v1beta1' || k.kind !== 'Kustomization') {
    throw new RenderError(`${where}: apiVersion/kind must be kustomize.config.k8s.io/v1beta1 Kustomization`);
  }
  const unsupported = Object.keys(k).filter((f) => !KUSTOMIZATION_FIELDS.has(f));
  if (unsupported.length > 0) {
    throw new RenderError(
      `${where}: ${unsupported.join(', ')} not supported by deploy/validate.mjs (supported: ${[...KUSTOMIZATION_FIELDS].slice(2).join(', ')}); extend the renderer or keep the manifests simple`,
    );
  }

  // resources
  let objects = [];
  for (const entry of k.resources ?? []) {
    const target = resolve(dir, entry);
    if (!existsSync(target)) throw new RenderError(`${where}: resource ${entry} does not exist`);
    if (statSync(target).isDirectory()) {
      objects.push(...render(target, [...stack, dir]));
    } else {
      // kustomize's default load restriction: files only from the kustomization's own tree.
      if (!target.startsWith(dir + sep))
        throw new RenderError(
          `${where}: file ${entry} is outside the kustomization's directory (kustomize refuses it)`,
        );
      objects.push(...loadObjects(target).map(clone));
    }
  }
  for (const o of objects) {
    if (!LABEL_PATHS[o.kind])
      throw new RenderError(
        `${where}: kind ${o.kind} (${o[ORIGIN]}) is unknown to the renderer; add its label paths to LABEL_PATHS`,
      );
    const pod = podSpecOf(o);
    if (pod && (pod.affinity || pod.topologySpreadConstraints)) {
      throw new RenderError(
        `${where}: ${objectId(o)}: affinity/topologySpreadConstraints selectors are not handled by the renderer`,
      );
    }
  }
  const seen = new Set();
  for (const o of objects) {
    const id = objectId(o);
    if (seen.has(id)) throw new RenderError(`${where}: ${id} is defined twice`);
    seen.add(id);
  }

  // patches (strategic merge; the target is named by the patch's own kind and metadata.name)
  for (const p of k.patches ?? []) {
    if (!isObject(p) || Object.keys(p).some((key) => key !== 'path')) {
      throw new RenderError(
        `${where}: only "- path: FILE" strategic-merge patches are supported (no target, options or inline patch)`,
      );
    }
    const file = resolve(dir, p.path);
    if (!file.startsWith(dir + sep))
      throw new RenderError(`${where}: patch ${p.path} is outside the kustomization's directory`);
    if (!existsSync(file)) throw new RenderError(`${where}: patch ${p.path} does not exist`);
    for (const patch of loadObjects(file)) {
      const matches = objects.filter(
        (o) =>
          o.kind === patch.kind &&
          o.metadata?.name === patch.metadata?.name &&
          (!patch.apiVersion || o.apiVersion === patch.apiVersion) &&
          (!patch.metadata?.namespace || o.metadata?.namespace === patch.metadata.namespace),
      );
      if (matches.length !== 1) {
        throw new RenderError(
          `${where}: patch ${p.path} (${patch.kind}/${patch.metadata?.name}) matches ${matches.length} objects, expected 1`,
        );
      }
      try {
        strategicMerge(matches[0], patch);
      } catch (e) {
        throw new RenderError(`${where}: patch ${p.path}: ${e.message}`);
      }
    }
  }

  // namespace
  if (k.namespace !== undefined) {
    for (const o of objects) {
      if (CLUSTER_SCOPED.has(o.kind))
        throw new RenderError(`${where}: cluster-scoped ${o.kind} with a namespace is not supported`);
      o.metadata = { ...o.metadata, namespace: k.namespace };
    }
  }

  // labels
  for (const entry of k.labels ?? []) {
    const bad = Object.keys(entry).filter(
      (f) => !['pairs', 'includeSelectors', 'includeTemplates'].includes(f),
    );
    if (bad.length > 0)
      throw new RenderError(`${where}: labels.${bad.join(', ')} not supported by the renderer`);
    const pairs = Object.fromEntries(Object.entries(entry.pairs ?? {}).map(([key, v]) => [key, String(v)]));
    for (const o of objects) {
      setLabels(o, ['metadata', 'labels'], pairs, true);
      const paths = LABEL_PATHS[o.kind];
      if (entry.includeSelectors) {
        for (const s of [...paths.selectors, ...paths.templates]) setLabels(o, s.path, pairs, s.create);
      } else if (entry.includeTemplates) {
        for (const s of paths.templates) setLabels(o, s.path, pairs, s.create);
      }
    }
  }

  // images
  for (const img of k.images ?? []) {
    const bad = Object.keys(img).filter((f) => !['name', 'newName', 'newTag', 'digest'].includes(f));
    if (bad.length > 0 || !img.name)
      throw new RenderError(`${where}: images entries take name, newName, newTag, digest`);
    for (const o of objects) {
      for (const c of allContainers(podSpecOf(o))) {
        const cur = parseImage(String(c.image ?? ''));
        if (cur.name !== img.name) continue;
        const name = img.newName ?? cur.name;
        if (img.digest) c.image = `${name}@${img.digest}`;
        else if (img.newTag !== undefined) c.image = `${name}:${img.newTag}`;
        else c.image = `${name}${cur.tag ? ':' + cur.tag : ''}${cur.digest ? '@' + cur.digest : ''}`;
      }
    }
  }
  return objects;
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

/** Renders `dir` with `kubectl kustomize` when kubectl exists: the objects, or null. */
function kubectlRender(dir) {
  const r = spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8', timeout: 60_000 });
  if (r.error)
    return {
      skipped:
        r.error.code === 'ENOENT'
          ? 'kubectl not found: renderer not cross-checked'
          : `kubectl not usable (${r.error.message}): renderer not cross-checked`,
    };
  if (r.status !== 0) return { error: (r.stderr || '').trim() || `exit code ${r.status}` };
  return {
    objects: YAML.parseAllDocuments(r.stdout, { version: '1.1' })
      .map((d) => d.toJS())
      .filter(Boolean),
  };
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

async function validateSchemas(objects, report) {
  for (const o of objects) {
    const where = `${o[ORIGIN] ?? '?'}: ${o.kind}/${o.metadata?.name ?? '(no name)'}`;
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
      if (ctx.rendered) {
        const svc = byKind('Service').filter((s) => selectorMatches(s.spec?.selector, podLabels));
        if (svc.length === 0) report(`${where}: no Service selects its pods`);
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
        if (ref && secretName && ref.name !== secretName)
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
        report(`${id(cm)}: ${name} is not a setting of the service (README, Configuration)`);
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

function compareWithKubectl(dir, objects, report) {
  const k = kubectlRender(dir);
  if (k.skipped) return k.skipped;
  if (k.error) {
    report(`${rel(dir)}: kubectl kustomize failed: ${k.error}`);
    return 'failed';
  }
  let differs = false;
  const differ = (msg) => {
    differs = true;
    report(msg);
  };
  const key = (o) => objectId(o);
  const mine = new Map(objects.map((o) => [key(o), JSON.parse(JSON.stringify(o))]));
  const theirs = new Map(k.objects.map((o) => [key(o), o]));
  for (const id of new Set([...mine.keys(), ...theirs.keys()])) {
    if (!mine.has(id)) differ(`${rel(dir)}: kubectl kustomize renders ${id}, the renderer does not`);
    else if (!theirs.has(id)) differ(`${rel(dir)}: the renderer renders ${id}, kubectl kustomize does not`);
    else {
      const d = firstDifference(mine.get(id), theirs.get(id));
      if (d) differ(`${rel(dir)}: ${id}: the renderer differs from kubectl kustomize at ${d}`);
    }
  }
  return differs ? 'DIFFERS from kubectl kustomize' : 'same as kubectl kustomize';
}

async function validateManifests({ useKubectl }) {
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
    for (const o of objects) o[ORIGIN] = rel(dir);
    const before = problems.length;
    await validateSchemas(objects, report);
    checkPolicies(objects, { where: rel(dir), rendered: true, app, secret }, report);
    const cross = useKubectl ? compareWithKubectl(dir, objects, report) : 'comparison skipped';
    if (objects.some((o) => containsSecretValue(o)))
      report(`${rel(dir)}: a rendered object contains a Secret value`);
    count += objects.length;
    console.log(
      `${problems.length === before ? 'ok  ' : 'FAIL'} ${rel(dir)}: ${objects.length} objects (${objects.map((o) => o.kind).join(', ')}); ${cross}`,
    );
  }
  return { problems, count, dirs: dirs.length };
}

function containsSecretValue(o) {
  return o.kind === 'Secret' && Object.keys({ ...o.data, ...o.stringData }).length > 0;
}

/**
 * testdata/broken.yaml holds one defect per line of EXPECTED; every one must be reported, so a
 * check that stops working is noticed. Also a few renderer cases with known answers.
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
    /HorizontalPodAutoscaler\/broken: DB_POOL_SIZE 50 x \(maxReplicas 10 \+ surge 1\) \+ 3 \(migration Job\) = 553 connections, over the budget of 97/,
  ];
  const app = loadAppConfig();
  if (app) {
    EXPECTED.push(/ConfigMap\/broken-config: LOG_LEVELS is not a setting of the service/);
    EXPECTED.push(/the service would refuse this configuration: .*BCRYPT_COST/);
  }
  const failures = [];
  const problems = [];
  const report = (m) => problems.push(m);
  const objects = loadObjects(BROKEN_FIXTURE);
  const secret = loadObjects(SECRET_TEMPLATE)[0];
  await validateSchemas(objects, report);
  checkPolicies(objects, { where: rel(BROKEN_FIXTURE), rendered: false, app, secret }, report);
  if (verbose) for (const p of problems) console.log(`  (expected) ${p}`);
  if (problems.length === 0) failures.push(`${rel(BROKEN_FIXTURE)} was accepted`);
  for (const re of EXPECTED) {
    if (!problems.some((p) => re.test(p)))
      failures.push(`${rel(BROKEN_FIXTURE)}: expected a problem matching ${re}`);
  }

  // Renderer cases.
  const dep = {
    kind: 'Deployment',
    spec: {
      template: {
        spec: {
          containers: [
            { name: 'a', image: 'x', env: [{ name: 'A', value: '1' }] },
            { name: 'b', image: 'y' },
          ],
        },
      },
    },
  };
  strategicMerge(dep, {
    spec: {
      template: {
        spec: {
          containers: [{ name: 'a', env: [{ name: 'B', value: '2' }], resources: { limits: { cpu: '1' } } }],
        },
      },
    },
  });
  const [a, b] = dep.spec.template.spec.containers;
  if (!(a.image === 'x' && a.env.length === 2 && a.resources.limits.cpu === '1' && b.name === 'b'))
    failures.push('renderer: strategic merge of containers by name');
  const img = parseImage('registry.local:5000/team/app:1.2@sha256:abc');
  if (!(img.name === 'registry.local:5000/team/app' && img.tag === '1.2' && img.digest === 'sha256:abc'))
    failures.push('renderer: image parsing');
  try {
    strategicMerge({}, { $patch: 'delete' });
    failures.push('renderer: a $patch directive was accepted');
  } catch (e) {
    if (!(e instanceof RenderError)) throw e;
  }

  return { failures, count: problems.length, expected: EXPECTED.length };
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

function firstDifference(a, b, path = '') {
  if (isDeepStrictEqual(a, b)) return null;
  if (isObject(a) && isObject(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDifference(a[k], b[k], `${path}.${k}`);
      if (d) return d;
    }
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    for (let i = 0; i < a.length; i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d) return d;
    }
  }
  return `${path || '(top)'} (renderer: ${JSON.stringify(a)}, kubectl: ${JSON.stringify(b)})`;
}

function rel(p) {
  return relative(REPO_DIR, p) || '.';
}

// ---------------------------------------------------------------------------------------------

async function main(argv) {
  const flags = new Set(argv.filter((a) => a.startsWith('--')));
  const known = new Set(['--self-test', '--no-kubectl', '--print', '--verbose', '--help']);
  const bad = [...flags].filter((f) => !known.has(f));
  if (bad.length > 0 || flags.has('--help')) {
    console.log('usage: node deploy/validate.mjs [--self-test] [--verbose] [--no-kubectl] [--print DIR]');
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
    const { problems, count, dirs } = await validateManifests({ useKubectl: !flags.has('--no-kubectl') });
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
      `deploy self-test: ${rel(BROKEN_FIXTURE)} refused with ${count} problems, all ${expected} planted defects found; renderer cases ok`,
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
