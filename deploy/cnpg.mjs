/**
 * The CloudNativePG objects of a kustomization (deploy/overlays/cnpg), checked offline by
 * deploy/validate.mjs: the operator's CRDs are not at hand, so the fields the manifests use are
 * described here (SHAPES, from the postgresql.cnpg.io/v1 API of CloudNativePG 1.28; unknown fields
 * are refused, embedded Kubernetes types are checked with kubernetes-models), then what the
 * service relies on (checkCloudNativePg): three instances, synchronous replication, a Pooler in
 * transaction mode that keeps prepared statements, and the URLs of the pods going where they must
 * (the Pooler, the -ro service, the -rw service) with TLS the pods can verify.
 */

export const CNPG_API = 'postgresql.cnpg.io/v1';

/** PostgreSQL majors the service's tests run on (the embedded server and CI's machine). */
const TESTED_MAJORS = [15, 17];

/**
 * The PgBouncer parameters the operator's admission webhook accepts in a Pooler (any other key
 * is refused with "Invalid or reserved parameter"); the rest of pgbouncer.ini is the operator's.
 */
const POOLER_PARAMETERS = new Set([
  'application_name_add_host',
  'auth_type',
  'autodb_idle_timeout',
  'cancel_wait_timeout',
  'client_idle_timeout',
  'client_login_timeout',
  'client_tls_sslmode',
  'default_pool_size',
  'disable_pqexec',
  'dns_max_ttl',
  'dns_nxdomain_ttl',
  'idle_transaction_timeout',
  'ignore_startup_parameters',
  'listen_backlog',
  'log_connections',
  'log_disconnections',
  'log_pooler_errors',
  'log_stats',
  'max_client_conn',
  'max_db_connections',
  'max_packet_size',
  'max_prepared_statements',
  'max_user_connections',
  'min_pool_size',
  'pkt_buf',
  'query_timeout',
  'query_wait_timeout',
  'reserve_pool_size',
  'reserve_pool_timeout',
  'sbuf_loopcnt',
  'server_check_delay',
  'server_check_query',
  'server_connect_timeout',
  'server_fast_close',
  'server_idle_timeout',
  'server_lifetime',
  'server_login_retry',
  'server_reset_query',
  'server_reset_query_always',
  'server_round_robin',
  'server_tls_ciphers',
  'server_tls_protocols',
  'server_tls_sslmode',
  'stats_period',
  'suspend_timeout',
  'tcp_defer_accept',
  'tcp_socket_buffer',
  'tcp_keepalive',
  'tcp_keepcnt',
  'tcp_keepidle',
  'tcp_keepintvl',
  'tcp_user_timeout',
  'track_extra_parameters',
  'verbose',
]);

/** PgBouncer's own defaults for the parameters the connection checks read. */
const PGBOUNCER_DEFAULTS = { default_pool_size: 20, reserve_pool_size: 0, max_client_conn: 100 };

/** The operator's fixed part of ignore_startup_parameters, to which a Pooler's value is appended. */
const OPERATOR_IGNORED_STARTUP = ['extra_float_digits', 'options'];

/** PostgreSQL's default superuser_reserved_connections: slots the service can never use. */
const SUPERUSER_RESERVED = 3;

// ---------------------------------------------------------------------------------------------
// Shapes: what each field may hold. A string names a scalar type; `k8s` an embedded Kubernetes
// type checked by kubernetes-models; `object`/`map`/`array` nest.

const str = 'string';
const int = 'integer';
const bool = 'boolean';
const qty = 'quantity';
const strings = { array: str };
const stringMap = { map: str };
const localRef = { object: { name: str }, required: ['name'] };
const meta = { object: { labels: stringMap, annotations: stringMap } };
const probe = {
  initialDelaySeconds: int,
  timeoutSeconds: int,
  periodSeconds: int,
  successThreshold: int,
  failureThreshold: int,
  terminationGracePeriodSeconds: int,
};
const probeWithStrategy = {
  object: { ...probe, type: { enum: ['pg_isready', 'streaming', 'query'] }, maximumLag: qty },
};
const storage = {
  object: {
    storageClass: str,
    size: qty,
    resizeInUseVolumes: bool,
    pvcTemplate: { k8s: 'PersistentVolumeClaimSpec' },
  },
};

const SHAPES = {
  Cluster: {
    object: {
      description: str,
      inheritedMetadata: meta,
      imageName: str,
      imagePullPolicy: { enum: ['Always', 'Never', 'IfNotPresent'] },
      instances: int,
      minSyncReplicas: int,
      maxSyncReplicas: int,
      postgresql: {
        object: {
          parameters: stringMap,
          synchronous: {
            object: {
              method: { enum: ['any', 'first'] },
              number: int,
              maxStandbyNamesFromCluster: int,
              standbyNamesPre: strings,
              standbyNamesPost: strings,
              dataDurability: { enum: ['required', 'preferred'] },
              failoverQuorum: bool,
            },
            required: ['method', 'number'],
          },
          pg_hba: strings,
          pg_ident: strings,
          shared_preload_libraries: strings,
          promotionTimeout: int,
          enableAlterSystem: bool,
        },
      },
      bootstrap: {
        object: {
          initdb: {
            object: {
              database: str,
              owner: str,
              secret: localRef,
              dataChecksums: bool,
              encoding: str,
              localeCollate: str,
              localeCType: str,
              locale: str,
              localeProvider: str,
              walSegmentSize: int,
              postInitSQL: strings,
              postInitApplicationSQL: strings,
              postInitTemplateSQL: strings,
            },
          },
        },
      },
      superuserSecret: localRef,
      enableSuperuserAccess: bool,
      certificates: {
        object: {
          serverCASecret: str,
          serverTLSSecret: str,
          replicationTLSSecret: str,
          clientCASecret: str,
          serverAltDNSNames: strings,
        },
      },
      imagePullSecrets: { array: localRef },
      storage,
      walStorage: storage,
      startDelay: int,
      stopDelay: int,
      smartShutdownTimeout: int,
      switchoverDelay: int,
      failoverDelay: int,
      livenessProbeTimeout: int,
      affinity: {
        object: {
          enablePodAntiAffinity: bool,
          topologyKey: str,
          nodeSelector: stringMap,
          nodeAffinity: { k8s: 'NodeAffinity' },
          tolerations: { array: { k8s: 'Toleration' } },
          podAntiAffinityType: { enum: ['preferred', 'required'] },
          additionalPodAntiAffinity: { k8s: 'PodAntiAffinity' },
          additionalPodAffinity: { k8s: 'PodAffinity' },
        },
      },
      topologySpreadConstraints: { array: { k8s: 'TopologySpreadConstraint' } },
      resources: { k8s: 'ResourceRequirements' },
      priorityClassName: str,
      primaryUpdateStrategy: { enum: ['unsupervised', 'supervised'] },
      primaryUpdateMethod: { enum: ['switchover', 'restart'] },
      logLevel: { enum: ['error', 'warning', 'info', 'debug', 'trace'] },
      enablePDB: bool,
      probes: {
        object: {
          startup: probeWithStrategy,
          liveness: { object: probe },
          readiness: probeWithStrategy,
        },
      },
      replicationSlots: {
        object: {
          highAvailability: { object: { enabled: bool, slotPrefix: str } },
          updateInterval: int,
        },
      },
    },
    required: ['instances'],
  },
  Pooler: {
    object: {
      cluster: localRef,
      type: { enum: ['rw', 'ro'] },
      instances: int,
      template: { object: { metadata: meta, spec: { k8s: 'PodSpec' } } },
      pgbouncer: {
        object: {
          poolMode: { enum: ['session', 'transaction'] },
          authQuerySecret: localRef,
          authQuery: str,
          parameters: stringMap,
          pg_hba: strings,
          paused: bool,
        },
      },
      deploymentStrategy: { k8s: 'DeploymentStrategy' },
      serviceTemplate: { object: { metadata: meta, spec: { k8s: 'ServiceSpec' } } },
    },
    required: ['cluster', 'pgbouncer'],
  },
};

const TOP = {
  object: {
    apiVersion: str,
    kind: str,
    metadata: { object: { name: str, namespace: str, labels: stringMap, annotations: stringMap } },
    spec: undefined, // per kind
  },
  required: ['metadata', 'spec'],
};

const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const QUANTITY = /^([0-9]+(?:\.[0-9]+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/;

/** Whether apiVersion/kind is a CloudNativePG kind described here. */
export const isCnpgKind = (o) => o.apiVersion === CNPG_API && Object.hasOwn(SHAPES, o.kind);

/**
 * Problems of one CloudNativePG object against its shape: `path message`, path dotted from the
 * top. `k8sErrors(type, value)` checks an embedded Kubernetes type (kubernetes-models), returning
 * its problems as { path (relative to it), message } or { path, unknown: true }.
 */
export async function cnpgSchemaErrors(o, k8sErrors) {
  const out = [];
  const shape = { ...TOP, object: { ...TOP.object, spec: SHAPES[o.kind] } };
  const walk = async (value, s, path) => {
    const at = path.join('.') || '(top)';
    if (s === undefined) return out.push(`unknown field ${at}`);
    if (typeof s === 'string') {
      const ok =
        s === 'string'
          ? typeof value === 'string'
          : s === 'integer'
            ? Number.isInteger(value)
            : s === 'boolean'
              ? typeof value === 'boolean'
              : (typeof value === 'string' && QUANTITY.test(value)) || Number.isFinite(value);
      if (!ok) out.push(`${at} must be ${s === 'quantity' ? 'a quantity (such as 16Mi)' : s}`);
      return;
    }
    if (s.enum) {
      if (!s.enum.includes(value)) out.push(`${at} must be one of ${s.enum.join(', ')}`);
      return;
    }
    if (s.k8s) {
      for (const e of await k8sErrors(s.k8s, value)) {
        const inner = [...path, ...e.path].join('.');
        out.push(e.unknown ? `unknown field ${inner}` : `${inner} ${e.message}`);
      }
      return;
    }
    if (s.array) {
      if (!Array.isArray(value)) return out.push(`${at} must be a list`);
      for (const [i, item] of value.entries()) await walk(item, s.array, [...path, i]);
      return;
    }
    if (!isObject(value)) return out.push(`${at} must be a mapping`);
    if (s.map) {
      for (const [k, v] of Object.entries(value)) await walk(v, s.map, [...path, k]);
      return;
    }
    for (const req of s.required ?? [])
      if (value[req] === undefined) out.push(`${[...path, req].join('.')} is required`);
    for (const [k, v] of Object.entries(value)) {
      if (!Object.hasOwn(s.object, k)) out.push(`unknown field ${[...path, k].join('.')}`);
      else await walk(v, s.object[k], [...path, k]);
    }
  };
  await walk(o, shape, []);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Policies

/** `subscriptions-db-rw.ns.svc.cluster.local` → `subscriptions-db-rw` when ns is the object's namespace. */
function serviceOf(host, namespace) {
  const parts = host.split('.');
  const rest = parts.slice(1).join('.');
  const forms = namespace
    ? [namespace, `${namespace}.svc`, `${namespace}.svc.cluster.local`]
    : ['svc', 'svc.cluster.local'];
  return parts.length === 1 || forms.includes(rest) ? parts[0] : undefined;
}

function parseUrl(text) {
  try {
    return new URL(text);
  } catch {
    return undefined;
  }
}

/** `name:1.25.1` → [1, 25, 1]; undefined without a numeric tag. */
function tagVersion(image) {
  const tag = /:([0-9][^@/]*)(@.*)?$/.exec(image ?? '')?.[1];
  return tag
    ? tag
        .split(/[.-]/)
        .map(Number)
        .filter((n) => Number.isInteger(n))
    : undefined;
}

/** `'5000ms'`, `'5s'`, `5000` (ms) → ms; undefined when unreadable. */
function durationMs(text) {
  const m = /^'?\s*([0-9]+)\s*(ms|s|min)?\s*'?$/.exec(String(text).trim());
  if (!m) return undefined;
  return Number(m[1]) * ({ ms: 1, s: 1000, min: 60_000 }[m[2] ?? 'ms'] ?? 1);
}

/**
 * @param objects   the rendered objects of one kustomization (or a fixture)
 * @param ctx       { id(o): name for messages, objects, apiEnvs: Map(Deployment → effective env),
 *                    migrationConnections: the Job's connections to the primary }
 */
export function checkCloudNativePg(objects, ctx, report) {
  const clusters = objects.filter((o) => o.apiVersion === CNPG_API && o.kind === 'Cluster');
  const poolers = objects.filter((o) => o.apiVersion === CNPG_API && o.kind === 'Pooler');
  if (clusters.length === 0 && poolers.length === 0) return;
  const { id } = ctx;
  const clusterNamed = (name) => clusters.find((c) => c.metadata?.name === name);

  for (const c of clusters) {
    const where = id(c);
    const s = c.spec ?? {};
    const standbys = (s.instances ?? 1) - 1;
    if (!(s.instances >= 3))
      report(`${where}: instances must be at least 3 (a primary and two standbys), found ${s.instances}`);
    const sync = s.postgresql?.synchronous;
    const legacy = s.minSyncReplicas !== undefined || s.maxSyncReplicas !== undefined;
    if (sync && legacy)
      report(`${where}: postgresql.synchronous and minSyncReplicas/maxSyncReplicas must not be set together`);
    if (sync) {
      if (!(sync.number >= 1 && sync.number <= standbys))
        report(`${where}: postgresql.synchronous.number must be between 1 and the ${standbys} standbys`);
      if (sync.dataDurability === 'preferred')
        report(
          `${where}: postgresql.synchronous.dataDurability preferred lets commits go unreplicated when standbys are gone, so a failover may lose acknowledged writes; use required`,
        );
    } else if (legacy) {
      if (!(
        s.minSyncReplicas >= 1 &&
        s.minSyncReplicas <= (s.maxSyncReplicas ?? 0) &&
        s.maxSyncReplicas <= standbys
      ))
        report(
          `${where}: 1 <= minSyncReplicas <= maxSyncReplicas <= ${standbys} (the standbys) is needed for synchronous replication`,
        );
    } else {
      report(
        `${where}: synchronous replication is off: set postgresql.synchronous (method, number) or minSyncReplicas/maxSyncReplicas`,
      );
    }
    const version = tagVersion(s.imageName);
    if (!s.imageName)
      report(
        `${where}: imageName must pin the PostgreSQL image (the operator's default may be a major the service is not tested on)`,
      );
    else if (!version || !TESTED_MAJORS.includes(version[0]))
      report(
        `${where}: imageName ${s.imageName} must be a tagged PostgreSQL ${TESTED_MAJORS.join(' or ')} (the majors the service is tested on)`,
      );
    if (!Number.isInteger(Number(s.postgresql?.parameters?.max_connections)))
      report(
        `${where}: postgresql.parameters.max_connections must be set (the connection checks are made against it)`,
      );
  }

  for (const p of poolers) {
    const where = id(p);
    const cluster = clusterNamed(p.spec?.cluster?.name);
    if (!cluster) report(`${where}: cluster ${p.spec?.cluster?.name} is not a Cluster of these manifests`);
    if (clusterNamed(p.metadata?.name)) report(`${where}: a Pooler cannot have the name of a Cluster`);
    const params = p.spec?.pgbouncer?.parameters ?? {};
    for (const k of Object.keys(params))
      if (!POOLER_PARAMETERS.has(k))
        report(
          `${where}: pgbouncer.parameters.${k} is not a parameter the operator accepts (its webhook refuses the Pooler)`,
        );
    if ((p.spec?.type ?? 'rw') === 'rw' && p.spec?.pgbouncer?.poolMode !== 'transaction')
      report(
        `${where}: pgbouncer.poolMode must be transaction (found ${p.spec?.pgbouncer?.poolMode ?? 'session, the default'})`,
      );
    const ignored = [
      ...OPERATOR_IGNORED_STARTUP,
      ...String(params.ignore_startup_parameters ?? '').split(','),
    ].map((x) => x.trim());
    if (!ignored.includes('statement_timeout'))
      report(
        `${where}: pgbouncer.parameters.ignore_startup_parameters must include statement_timeout (the service's pool sends it at start-up and PgBouncer refuses the connection otherwise)`,
      );
  }

  // The pods' URLs: where each goes, as whom, and with which TLS.
  for (const w of objects.filter((o) => ['Deployment', 'Job'].includes(o.kind))) {
    const pod = w.spec?.template?.spec ?? {};
    for (const container of pod.containers ?? []) {
      const where = `${id(w)}: container ${container.name}`;
      const env = new Map((container.env ?? []).map((e) => [e.name, e]));
      const urls = [];
      for (const name of ['DATABASE_URL', 'DATABASE_READ_URL', 'DATABASE_DIRECT_URL']) {
        const value = env.get(name)?.value;
        if (value === undefined) continue;
        for (const text of name === 'DATABASE_READ_URL' ? value.split(',') : [value]) {
          const url = parseUrl(text.trim());
          if (!url) report(`${where}: ${name} is not a URL`);
          else urls.push({ name, url, service: serviceOf(url.hostname, w.metadata?.namespace) });
        }
      }
      if (urls.length === 0) continue;
      const poolerOf = (u) => poolers.find((p) => p.metadata?.name === u.service);
      const clusterOf = (u) => {
        const pooler = poolerOf(u);
        if (pooler) return clusterNamed(pooler.spec?.cluster?.name);
        return clusters.find((c) => ['rw', 'ro', 'r'].some((t) => u.service === `${c.metadata?.name}-${t}`));
      };
      const main = urls.find((u) => u.name === 'DATABASE_URL');
      const direct = urls.find((u) => u.name === 'DATABASE_DIRECT_URL');
      const rwPoolers = poolers.filter((p) => (p.spec?.type ?? 'rw') === 'rw');

      if (main && rwPoolers.length > 0 && !rwPoolers.some((p) => p.metadata?.name === main.service))
        report(
          `${where}: DATABASE_URL's host ${main.url.hostname} is not the service of the Pooler (${rwPoolers.map((p) => p.metadata?.name).join(', ')})`,
        );
      for (const u of urls) {
        const cluster = clusterOf(u);
        if (!cluster) {
          report(
            `${where}: ${u.name}'s host ${u.url.hostname} is no service of a Cluster or Pooler of these manifests`,
          );
          continue;
        }
        const cname = cluster.metadata?.name;
        if (u.name === 'DATABASE_READ_URL') {
          if (u.service !== `${cname}-ro`)
            report(
              `${where}: DATABASE_READ_URL must go to the read-only service ${cname}-ro (found ${u.url.hostname})`,
            );
          else if (
            cluster.spec?.probes?.readiness?.type !== 'streaming' ||
            cluster.spec?.probes?.readiness?.maximumLag === undefined
          )
            report(
              `${id(cluster)}: probes.readiness must be type streaming with a maximumLag, so that a standby far behind leaves ${cname}-ro (DATABASE_READ_URL)`,
            );
        }
        if (u.name === 'DATABASE_DIRECT_URL' && u.service !== `${cname}-rw`)
          report(
            `${where}: DATABASE_DIRECT_URL must go to the server itself, ${cname}-rw (found ${u.url.hostname})`,
          );
        if (u.url.port && u.url.port !== '5432')
          report(`${where}: ${u.name} must use port 5432 (the operator's services listen there)`);
        const initdb = cluster.spec?.bootstrap?.initdb ?? {};
        const database = initdb.database ?? 'app';
        const owner = initdb.owner ?? database;
        if (decodeURIComponent(u.url.pathname.slice(1)) !== database)
          report(`${where}: ${u.name} must name the database ${database} (bootstrap.initdb.database)`);
        if (decodeURIComponent(u.url.username) !== owner)
          report(`${where}: ${u.name} must connect as ${owner} (bootstrap.initdb.owner)`);
        if (u.url.password)
          report(`${where}: ${u.name} carries a password; take it from the operator's Secret as PGPASSWORD`);
        else {
          const ref = env.get('PGPASSWORD')?.valueFrom?.secretKeyRef;
          if (ref?.name !== `${cname}-app` || ref?.key !== 'password')
            report(
              `${where}: PGPASSWORD must come from the Secret ${cname}-app, key password (${u.name} has no password)`,
            );
        }
        // TLS: the server (or the Pooler, with the cluster's certificate) proven by the cluster's CA
        const q = u.url.searchParams;
        if (q.get('sslmode') !== 'verify-full')
          report(`${where}: ${u.name} must use sslmode=verify-full (found ${q.get('sslmode') ?? 'none'})`);
        else {
          const names = [
            ...['rw', 'r', 'ro'].flatMap((t) => {
              const n = `${cname}-${t}`;
              const ns = cluster.metadata?.namespace;
              return [n, `${n}.${ns}`, `${n}.${ns}.svc`, `${n}.${ns}.svc.cluster.local`];
            }),
            ...(cluster.spec?.certificates?.serverAltDNSNames ?? []),
          ];
          if (!names.includes(u.url.hostname))
            report(
              `${where}: ${u.name}'s host ${u.url.hostname} is not a name of ${cname}'s server certificate (add it to certificates.serverAltDNSNames)`,
            );
        }
        const rootcert = q.get('sslrootcert');
        if (!rootcert) report(`${where}: ${u.name} must give sslrootcert (the CA of ${cname})`);
        else if (!mountsSecretFile(container, pod, rootcert, `${cname}-ca`, 'ca.crt'))
          report(
            `${where}: ${u.name}'s sslrootcert ${rootcert} must be the key ca.crt of the Secret ${cname}-ca, mounted in this container`,
          );
      }

      // Through the Pooler the pool's start-up statement_timeout is dropped: the role must carry it,
      // and then the migration's direct connection must lift it.
      const pooled = main && poolerOf(main);
      const cluster = main && clusterOf(main);
      if (pooled && cluster) {
        const owner =
          cluster.spec?.bootstrap?.initdb?.owner ?? cluster.spec?.bootstrap?.initdb?.database ?? 'app';
        const set = (param) => {
          const re = new RegExp(
            `^\\s*ALTER\\s+ROLE\\s+"?${owner}"?\\s+SET\\s+${param}\\s*(=|TO)\\s*(.+?)\\s*;?\\s*$`,
            'i',
          );
          for (const sql of cluster.spec?.bootstrap?.initdb?.postInitApplicationSQL ?? []) {
            const m = re.exec(sql);
            if (m) return durationMs(m[2]);
          }
          return undefined;
        };
        const roleTimeout = set('statement_timeout');
        const apiEnv = w.kind === 'Deployment' ? ctx.apiEnvs.get(w) : undefined;
        if (w.kind === 'Deployment') {
          const wanted = Number(apiEnv?.DB_STATEMENT_TIMEOUT_MS ?? 5000);
          if (roleTimeout === undefined)
            report(
              `${id(cluster)}: through the Pooler the pool's statement_timeout is dropped: set it on the role (bootstrap.initdb.postInitApplicationSQL: ALTER ROLE ${owner} SET statement_timeout = '${wanted}ms')`,
            );
          else if (roleTimeout !== wanted)
            report(
              `${id(cluster)}: the role's statement_timeout (${roleTimeout} ms) is not DB_STATEMENT_TIMEOUT_MS (${wanted} ms)`,
            );
          if (set('client_connection_check_interval') === undefined)
            report(
              `${id(cluster)}: through the Pooler the pool's client_connection_check_interval is dropped: set it on the role (bootstrap.initdb.postInitApplicationSQL)`,
            );
          checkPoolerConnections(pooled, cluster, w, apiEnv, ctx, report);
        }
        if (w.kind === 'Job') {
          if (!direct)
            report(
              `${where}: the migration Job needs DATABASE_DIRECT_URL (${cluster.metadata?.name}-rw): its advisory lock needs a session, which the Pooler does not keep`,
            );
          else if (
            roleTimeout !== undefined &&
            !/statement_timeout\s*=\s*0\b/.test(direct.url.searchParams.get('options') ?? '')
          )
            report(
              `${where}: DATABASE_DIRECT_URL must lift the role's statement_timeout for migrations (options=-c statement_timeout=0)`,
            );
        }
      }
    }
  }
}

/** Whether `file` in `container` is `key` of the Secret `secret`, mounted as a volume. */
function mountsSecretFile(container, pod, file, secret, key) {
  const slash = file.lastIndexOf('/');
  const [dir, base] = [file.slice(0, slash), file.slice(slash + 1)];
  const mount = (container.volumeMounts ?? []).find((m) => m.mountPath.replace(/\/$/, '') === dir);
  const volume = mount && (pod.volumes ?? []).find((v) => v.name === mount.name);
  if (volume?.secret?.secretName !== secret) return false;
  const items = volume.secret.items;
  return items ? items.some((i) => i.key === key && i.path === base) : key === base;
}

/**
 * The Pooler's two sides: every API pod's pool may land on one PgBouncer pod (max_client_conn),
 * and the Pooler's server connections, the migration Job and the reserved slots fit
 * max_connections on the primary; each standby takes the read pools (DATABASE_READ_URL).
 */
function checkPoolerConnections(pooler, cluster, deployment, apiEnv, ctx, report) {
  const where = ctx.id(pooler);
  const hpa = ctx.objects.find(
    (o) =>
      o.kind === 'HorizontalPodAutoscaler' &&
      o.spec?.scaleTargetRef?.kind === 'Deployment' &&
      o.spec?.scaleTargetRef?.name === deployment.metadata?.name,
  );
  if (!hpa || !apiEnv) return;
  const pods =
    Number(hpa.spec?.maxReplicas) + Number(deployment.spec?.strategy?.rollingUpdate?.maxSurge ?? 1);
  const pool = Number(apiEnv.DB_POOL_SIZE ?? 10);
  const params = pooler.spec?.pgbouncer?.parameters ?? {};
  const param = (k) => Number(params[k] ?? PGBOUNCER_DEFAULTS[k]);
  const clients = (pool + 2) * pods;
  if (param('max_client_conn') < clients)
    report(
      `${where}: max_client_conn ${param('max_client_conn')} is below (DB_POOL_SIZE ${pool} + 2 for the start-up probe) x ${pods} pods (maxReplicas + surge) = ${clients}`,
    );
  const maxConnections = Number(cluster.spec?.postgresql?.parameters?.max_connections);
  if (!Number.isInteger(maxConnections)) return;
  const usable = maxConnections - SUPERUSER_RESERVED;
  const instances = Number(pooler.spec?.instances ?? 1);
  const servers =
    instances * (param('default_pool_size') + param('reserve_pool_size')) + ctx.migrationConnections;
  if (servers > usable)
    report(
      `${where}: ${instances} PgBouncer pods x (default_pool_size + reserve_pool_size) + ${ctx.migrationConnections} (migration Job) = ${servers} server connections, over ${cluster.metadata?.name}'s max_connections ${maxConnections} less ${SUPERUSER_RESERVED} reserved`,
    );
  if (apiEnv.DATABASE_READ_URL && pool * pods > usable)
    report(
      `${ctx.id(cluster)}: the read pools, DB_POOL_SIZE ${pool} x ${pods} pods = ${pool * pods}, do not fit one standby's max_connections ${maxConnections} less ${SUPERUSER_RESERVED} reserved`,
    );
  if (String(apiEnv.DB_PREPARED_STATEMENTS ?? 'true') === 'true') {
    if (!(param('max_prepared_statements') > 0))
      report(
        `${where}: max_prepared_statements must be above 0 while DB_PREPARED_STATEMENTS is true (PgBouncer then keeps each client's named statements)`,
      );
    const image = (pooler.spec?.template?.spec?.containers ?? []).find((c) => c.name === 'pgbouncer')?.image;
    const v = tagVersion(image);
    if (!image)
      report(
        `${where}: pin the pgbouncer container's image (1.21 or later keeps prepared statements in transaction mode)`,
      );
    else if (!v || v[0] < 1 || (v[0] === 1 && v[1] < 21))
      report(
        `${where}: PgBouncer ${image} cannot keep prepared statements in transaction mode (1.21 or later): set DB_PREPARED_STATEMENTS=false or upgrade`,
      );
  }
}

/** The Secrets the operator makes for a Cluster that the pods may read (the owner's password, the CA). */
export const operatorSecrets = (objects) =>
  objects
    .filter((o) => o.apiVersion === CNPG_API && o.kind === 'Cluster')
    .flatMap((c) => [`${c.metadata?.name}-app`, `${c.metadata?.name}-ca`]);
