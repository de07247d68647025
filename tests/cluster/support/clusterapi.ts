/**
 * Cluster API's core controllers against the test cluster, which is then Cluster API's management
 * (infrastructure) cluster, with the second API server of workload-cluster.ts as the workload
 * cluster of one Cluster object:
 *
 * - the manager (`sigs.k8s.io/cluster-api/core`, built by ../build-clusterapi.sh) as a process,
 *   with a certificate in `--webhook-cert-dir`: controller-runtime's webhook server refuses to
 *   start without one, even though no webhook configuration points at it here;
 * - its CRDs, read from the cluster-api module in Go's module cache (core/config/crd/bases), so
 *   they are always those of the version built;
 * - the Cluster, its InfraCluster and control plane (stand-ins, clusterapi-providers.ts), and its
 *   kubeconfig Secret `<cluster>-kubeconfig` (key `value`, type `cluster.x-k8s.io/secret`,
 *   labelled with the cluster name: the manager reads Secrets through a cache that holds only
 *   Secrets carrying that label).
 */
import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { freePorts } from '../../support/ports.ts'
import type { JsonObject } from '../../support/merge.ts'
import { makeWebhookCerts } from './certs.ts'
import type { TestCluster } from './cluster.ts'
import { eventually } from './env.ts'
import { resourcePath, type KubeClient, type ResourceRef } from './kube.ts'
import { goBuiltProgram } from './go-built.ts'
import { startProcess, stopProcess, tailLog, type ManagedProcess } from './processes.ts'
import { contractRef, KINDS, standInRef } from './clusterapi-providers.ts'
import type { WorkloadCluster } from './workload-cluster.ts'
import { condition } from './reads.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

const MODULE_DIR = fileURLToPath(new URL('../../clusterapi', import.meta.url))
const MANAGER = 'cluster-api-manager'
export const CLUSTER_API = 'cluster.x-k8s.io/v1beta2'

export const capiRefs = {
  cluster: (namespace: string, name?: string): ResourceRef => ({ apiVersion: CLUSTER_API, resource: 'clusters', namespace, name }),
  machine: (namespace: string, name?: string): ResourceRef => ({ apiVersion: CLUSTER_API, resource: 'machines', namespace, name })
}

/** The manager binary: `$GPUHOOKS_CAPI_BIN/cluster-api-manager` when there, else what the build script prints last. */
export function clusterApiManagerBinary(): string {
  return goBuiltProgram('GPUHOOKS_CAPI_BIN', MANAGER, 'build-clusterapi.sh')
}

/**
 * The core CRD files of the cluster-api version that tests/clusterapi/go.mod requires, from the
 * module cache (`go mod download` fetches the module, checked against go.sum, if it is not there).
 */
export function clusterApiCoreCrds(): string[] {
  const result = spawnSync('go', ['mod', 'download', '-json', 'sigs.k8s.io/cluster-api'], { cwd: MODULE_DIR, encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`go mod download sigs.k8s.io/cluster-api failed: ${result.stderr}${result.stdout}`)
  const dir = (JSON.parse(result.stdout) as { Dir?: string }).Dir
  if (dir === undefined) throw new Error(`go mod download printed no Dir: ${result.stdout}`)
  const bases = join(dir, 'core', 'config', 'crd', 'bases')
  return readdirSync(bases)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(bases, f))
}

/**
 * Applies CRDs server-side (Cluster API's largest CRDs exceed the 256 KiB annotation that a
 * client-side apply would record) and waits until each is Established and serves a list.
 */
export async function applyCrdsServerSide(cluster: TestCluster, kube: KubeClient, files: readonly string[]): Promise<void> {
  const args = files.flatMap((f) => ['-f', f])
  await cluster.kubectl(['apply', '--server-side', '--field-manager=gpuhooks-tests', ...args])
  await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...args])
  const { stdout } = await cluster.kubectl(['get', ...args, '-o', 'json'])
  const parsed: Loose = JSON.parse(stdout)
  const crds: Loose[] = parsed.kind === 'List' ? parsed.items : [parsed]
  for (const crd of crds) {
    const version = String(crd.spec.versions.find((v: Loose) => v.storage === true).name)
    const ref: ResourceRef = { apiVersion: `${String(crd.spec.group)}/${version}`, resource: String(crd.spec.names.plural) }
    await eventually(`${String(crd.metadata.name)} to list`, async () => {
      try {
        await kube.request('GET', resourcePath(ref))
        return true
      } catch {
        return undefined
      }
    })
  }
}

/**
 * Resolves once a controller-runtime manager answers /readyz on its loopback health port (its
 * webhook server has started); fails at once, with its log, when it exits.
 */
export async function untilReady(proc: ManagedProcess, healthPort: number, what: string): Promise<void> {
  await eventually(
    `${what} to answer /readyz`,
    async () => {
      if (proc.child.exitCode !== null || proc.child.signalCode !== null) throw new Error(`${what} exited:\n${tailLog(proc.logFile)}`)
      try {
        const res = await fetch(`http://127.0.0.1:${healthPort}/readyz`)
        return res.status === 200 ? true : undefined
      } catch {
        return undefined
      }
    },
    120_000
  )
}

/** The manager as a running process. */
export interface ClusterApiManager {
  proc: ManagedProcess
  /** Everything it logged so far (its klog lines). */
  logText(): string
  stop(): Promise<void>
}

/**
 * Starts the core manager against `cluster` (as its admin), watching `namespace` only, with its
 * webhook server on a claimed port and a test certificate, its probes and diagnostics on
 * loopback, and resolves once it answers /readyz (the webhook server has started).
 */
export async function startClusterApiManager(cluster: TestCluster, binary: string, namespace: string): Promise<ClusterApiManager> {
  const certDir = join(cluster.dir, 'capi-webhook')
  mkdirSync(certDir, { recursive: true })
  const certs = await makeWebhookCerts(certDir)
  const [webhookPort, healthPort, diagnosticsPort] = (await freePorts(3)) as [number, number, number]
  const log = join(cluster.dir, 'cluster-api-manager.log')
  const proc = startProcess(
    MANAGER,
    binary,
    [
      `--kubeconfig=${cluster.kubeconfig}`,
      `--namespace=${namespace}`,
      `--webhook-port=${webhookPort}`,
      `--webhook-cert-dir=${certDir}`,
      `--webhook-cert-name=${certs.serverCert.slice(certDir.length + 1)}`,
      `--webhook-key-name=${certs.serverKey.slice(certDir.length + 1)}`,
      `--health-addr=127.0.0.1:${healthPort}`,
      `--diagnostics-address=127.0.0.1:${diagnosticsPort}`,
      '--insecure-diagnostics',
      '--leader-elect=false'
    ],
    log,
    join(cluster.dir, 'pids')
  )
  const manager: ClusterApiManager = {
    proc,
    logText: () => readFileSync(log, 'utf8'),
    stop: () => stopProcess(proc)
  }
  try {
    await untilReady(proc, healthPort, 'the Cluster API manager')
  } catch (error) {
    await manager.stop()
    throw new Error(`${(error as Error).message}\n${tailLog(log)}`)
  }
  return manager
}

/** A kubeconfig for the workload cluster as its admin, every credential inline (the Secret holds no file paths). */
function workloadAdminKubeconfig(cluster: TestCluster, workload: WorkloadCluster): string {
  const data = (file: string): string => readFileSync(join(cluster.dir, file)).toString('base64')
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: workload',
    '  cluster:',
    `    server: ${workload.server}`,
    `    certificate-authority-data: ${data('ca.crt')}`,
    'users:',
    '- name: admin',
    '  user:',
    `    client-certificate-data: ${data('admin.crt')}`,
    `    client-key-data: ${data('admin.key')}`,
    'contexts:',
    '- name: workload',
    '  context: {cluster: workload, user: admin}',
    'current-context: workload',
    ''
  ].join('\n')
}

/**
 * Creates the Cluster `name` in `namespace` for the workload cluster: the kubeconfig Secret, the
 * KubeSwiftCluster (provisioned) and the ExternalControlPlane (initialized, its endpoint the
 * workload API server, `externalManagedControlPlane: true` since no Machine of this Cluster runs
 * its control plane), then the Cluster; resolves once Cluster API reports the infrastructure
 * provisioned and the control plane initialized (from then on it watches the workload Nodes).
 */
export async function createWorkloadClusterObject(
  kube: KubeClient,
  cluster: TestCluster,
  workload: WorkloadCluster,
  namespace: string,
  name: string
): Promise<Loose> {
  const label = { 'cluster.x-k8s.io/cluster-name': name }
  await kube.create(
    { apiVersion: 'v1', resource: 'secrets', namespace },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'cluster.x-k8s.io/secret',
      metadata: { name: `${name}-kubeconfig`, namespace, labels: label },
      data: { value: Buffer.from(workloadAdminKubeconfig(cluster, workload)).toString('base64') }
    }
  )
  const endpoint = new URL(workload.server)
  const standIns: [typeof KINDS.infraCluster | typeof KINDS.controlPlane, JsonObject, JsonObject][] = [
    [KINDS.infraCluster, {}, { initialization: { provisioned: true } }],
    [
      KINDS.controlPlane,
      { controlPlaneEndpoint: { host: endpoint.hostname, port: Number(endpoint.port) } },
      { initialization: { controlPlaneInitialized: true }, externalManagedControlPlane: true }
    ]
  ]
  for (const [kind, spec, status] of standIns) {
    const ref = standInRef(kind, namespace, name)
    await kube.create(ref, { apiVersion: ref.apiVersion, kind: kind.kind, metadata: { name, namespace }, spec })
    await kube.request('PATCH', resourcePath(ref, 'status'), { status }, 'application/merge-patch+json')
  }
  await kube.create(capiRefs.cluster(namespace), {
    apiVersion: CLUSTER_API,
    kind: 'Cluster',
    metadata: { name, namespace },
    spec: {
      infrastructureRef: contractRef(KINDS.infraCluster, name),
      controlPlaneRef: contractRef(KINDS.controlPlane, name)
    }
  })
  return eventually(
    `Cluster ${namespace}/${name} to be provisioned with an initialized control plane`,
    async () => {
      const found: Loose = (await kube.get(capiRefs.cluster(namespace, name))).body
      const init = found.status?.initialization
      return init?.infrastructureProvisioned === true &&
        init?.controlPlaneInitialized === true &&
        condition(found, 'ControlPlaneInitialized')?.status === 'True'
        ? found
        : undefined
    },
    60_000
  )
}
