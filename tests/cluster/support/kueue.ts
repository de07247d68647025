/**
 * Kueue beside the test cluster (docs/access.md, "Quota and queueing"): the manager
 * (`sigs.k8s.io/kueue/cmd/kueue`, built by ../build-kueue.sh), its CRDs and its webhook
 * configurations, both read from the kueue module in Go's module cache (config/components/), so
 * they are always those of the version built.
 *
 * - The manager runs as a process with a Configuration file: the Pod integration only
 *   (`integrations.frameworks: [pod]`), leader election off, its webhook server on a claimed
 *   loopback port with a test certificate (`internalCertManagement.enable: false`), probes on
 *   loopback, metrics off, and the visibility API server off (feature gate VisibilityOnDemand,
 *   on by default, serves it from a certificate at the fixed path /visibility).
 * - Kueue reads a metrics certificate from the fixed path /etc/kueue/metrics/certs at start, even
 *   with metrics off; one is written there when none is (CI runs as root) and removed afterwards.
 * - The webhook configurations keep the Pod webhooks and those of Kueue's own kinds (the
 *   manager serves no others with only the Pod integration on), each pointed at the manager's
 *   loopback URL with the test CA as its caBundle. The Pod webhooks are limited to the namespaces
 *   the caller names, so that a Pod elsewhere never waits on Kueue.
 */
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import { freePorts } from '../../support/ports.ts'
import { makeWebhookCerts } from './certs.ts'
import type { TestCluster } from './cluster.ts'
import type { KubeClient } from './kube.ts'
import { applyCrdsServerSide, untilReady } from './clusterapi.ts'
import { goBuiltProgram } from './go-built.ts'
import { startProcess, stopProcess, tailLog, type ManagedProcess } from './processes.ts'

/** Reads of the module's manifests are loose views, checked by value. */
type Loose = any

const MODULE_DIR = fileURLToPath(new URL('../../kueue', import.meta.url))
const MANAGER = 'kueue-manager'
export const KUEUE_API = 'kueue.x-k8s.io/v1beta2'
const METRICS_CERT_DIR = '/etc/kueue/metrics/certs'

/** The manager binary: `$GPUHOOKS_KUEUE_BIN/kueue-manager` when there, else what the build script prints last. */
export function kueueManagerBinary(): string {
  return goBuiltProgram('GPUHOOKS_KUEUE_BIN', MANAGER, 'build-kueue.sh')
}

/** The kueue module's directory in the module cache (downloaded, checked against go.sum, if missing). */
function kueueModuleDir(): string {
  const result = spawnSync('go', ['mod', 'download', '-json', 'sigs.k8s.io/kueue'], { cwd: MODULE_DIR, encoding: 'utf8' })
  if (result.status !== 0) throw new Error(`go mod download sigs.k8s.io/kueue failed: ${result.stderr}${result.stdout}`)
  const dir = (JSON.parse(result.stdout) as { Dir?: string }).Dir
  if (dir === undefined) throw new Error(`go mod download printed no Dir: ${result.stdout}`)
  return dir
}

/** The CRD files of Kueue's bases (without the conversion-webhook patches: one version is used). */
export function kueueCrds(moduleDir = kueueModuleDir()): string[] {
  const bases = join(moduleDir, 'config', 'components', 'crd', 'bases')
  return readdirSync(bases)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(bases, f))
}

/**
 * The module's webhook configurations, kept to the Pod webhooks and Kueue's own kinds, pointed at
 * `url` with `caBundle`; the Pod webhooks only for `namespaces`.
 */
export function kueueWebhookConfigurations(moduleDir: string, url: string, caBundle: string, namespaces: readonly string[]): Loose[] {
  const text = readFileSync(join(moduleDir, 'config', 'components', 'webhook', 'manifests.yaml'), 'utf8')
  return parseAllDocuments(text)
    .map((d) => d.toJSON())
    .filter((doc) => doc !== null && typeof doc === 'object')
    .map((doc) => ({
      ...doc,
      metadata: { name: `kueue-${String(doc.metadata.name)}` },
      webhooks: (doc.webhooks as Loose[])
        .filter((w) => {
          const groups: string[] = w.rules.flatMap((r: Loose) => r.apiGroups)
          const resources: string[] = w.rules.flatMap((r: Loose) => r.resources)
          return (groups.includes('') && resources.includes('pods')) || groups.every((g) => g === 'kueue.x-k8s.io')
        })
        .map((w) => {
          const { service, ...rest } = w.clientConfig
          const pods = w.rules.some((r: Loose) => r.resources.includes('pods'))
          return {
            ...w,
            clientConfig: { ...rest, url: `${url}${String(service.path)}`, caBundle },
            ...(pods
              ? {
                  namespaceSelector: {
                    matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [...namespaces] }]
                  }
                }
              : {})
          }
        })
    }))
}

/** Kueue as a running process, with its objects installed. */
export interface Kueue {
  proc: ManagedProcess
  /** Stops the manager and removes the metrics certificate this module wrote. */
  close(): Promise<void>
}

/**
 * Installs Kueue's CRDs, starts the manager and registers its webhooks (the Pod webhooks for
 * `namespaces`); resolves once the manager answers /readyz.
 */
export async function startKueue(cluster: TestCluster, kube: KubeClient, namespaces: readonly string[]): Promise<Kueue> {
  const binary = kueueManagerBinary()
  const moduleDir = kueueModuleDir()
  await applyCrdsServerSide(cluster, kube, kueueCrds(moduleDir))
  const dir = join(cluster.dir, 'kueue')
  mkdirSync(dir, { recursive: true })
  const certs = await makeWebhookCerts(dir)
  // controller-runtime's webhook server reads tls.crt and tls.key from certDir.
  const certDir = join(dir, 'serving')
  mkdirSync(certDir, { recursive: true })
  writeFileSync(join(certDir, 'tls.crt'), readFileSync(certs.serverCert))
  writeFileSync(join(certDir, 'tls.key'), readFileSync(certs.serverKey))
  const ownMetricsCert = !existsSync(join(METRICS_CERT_DIR, 'tls.crt'))
  if (ownMetricsCert) {
    mkdirSync(METRICS_CERT_DIR, { recursive: true })
    writeFileSync(join(METRICS_CERT_DIR, 'tls.crt'), readFileSync(certs.serverCert))
    writeFileSync(join(METRICS_CERT_DIR, 'tls.key'), readFileSync(certs.serverKey))
  }
  const [webhookPort, healthPort] = (await freePorts(2)) as [number, number]
  const config = join(dir, 'config.yaml')
  writeFileSync(
    config,
    JSON.stringify({
      apiVersion: 'config.kueue.x-k8s.io/v1beta2',
      kind: 'Configuration',
      health: { healthProbeBindAddress: `127.0.0.1:${healthPort}` },
      metrics: { bindAddress: '0' },
      webhook: { host: '127.0.0.1', port: webhookPort, certDir },
      leaderElection: { leaderElect: false },
      internalCertManagement: { enable: false },
      integrations: { frameworks: ['pod'] }
    })
  )
  const log = join(dir, 'kueue-manager.log')
  const proc = startProcess(
    MANAGER,
    binary,
    [`--config=${config}`, `--kubeconfig=${cluster.kubeconfig}`, '--feature-gates=VisibilityOnDemand=false'],
    log,
    join(cluster.dir, 'pids')
  )
  const close = async (): Promise<void> => {
    await stopProcess(proc)
    if (ownMetricsCert) rmSync('/etc/kueue', { recursive: true, force: true })
  }
  try {
    await untilReady(proc, healthPort, 'the Kueue manager')
    const caBundle = readFileSync(certs.caCert).toString('base64')
    const configurations = kueueWebhookConfigurations(moduleDir, `https://127.0.0.1:${webhookPort}`, caBundle, namespaces)
    const file = join(dir, 'webhooks.json')
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: configurations }))
    await cluster.kubectl(['apply', '-f', file])
  } catch (error) {
    await close()
    throw new Error(`${(error as Error).message}\n${tailLog(log)}`)
  }
  return { proc, close }
}
