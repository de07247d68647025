/**
 * One scenario file's world: a fresh cluster, every CRD in `crds/` installed and Established, the
 * hook service as a real process with its admission webhooks registered, and a driver per
 * controller manifest in `metacontroller/`. A controller added later (the cell pool) is picked up
 * from its manifest and its webhook from `webhooks`, without changes here.
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { startCluster, type StartClusterOptions, type TestCluster } from './cluster.ts'
import { Driver } from './driver.ts'
import { loadControllers } from './driver-manifest.ts'
import { KubeClient, loadKubeconfig } from './kube.ts'
import { registerWebhooks, startHookService, type HookService, type WebhookTarget } from './service.ts'

const ROOT = join(import.meta.dirname, '..', '..', '..')

/** The open-schema stand-ins for KubeSwift's CRDs (SwiftGuest, SwiftSeedProfile) that the cell pool scenarios install. */
export const KUBESWIFT_CRDS = join(ROOT, 'tests', 'cluster', 'fixtures', 'kubeswift-crds.yaml')

/** The webhooks the product registers; one row per admission path. */
export const WEBHOOKS: readonly WebhookTarget[] = [
  {
    name: 'instances.worker.gpustack.ai',
    path: '/admission/instance',
    apiGroup: 'worker.gpustack.ai',
    apiVersion: 'v1alpha1',
    resource: 'instances',
    hook: 'admission_instance',
    probe: {
      apiVersion: 'worker.gpustack.ai/v1alpha1',
      kind: 'Instance',
      metadata: { name: 'webhook-probe', namespace: 'default' },
      spec: { type: 'probe', image: 'probe' }
    }
  },
  {
    name: 'gpucellpools.cells.kubeswift.io',
    path: '/admission/cellpool',
    apiGroup: 'cells.kubeswift.io',
    apiVersion: 'v1alpha1',
    resource: 'gpucellpools',
    hook: 'admission_cellpool',
    probe: {
      apiVersion: 'cells.kubeswift.io/v1alpha1',
      kind: 'GPUCellPool',
      metadata: { name: 'webhook-probe', namespace: 'default' },
      spec: {
        cell: { guestTemplate: {}, gpu: { dra: { resourceClaimTemplateName: 'probe' } } },
        workloadCluster: { kubeconfigSecretRef: { name: 'probe' } }
      }
    }
  }
]

/** A running scenario world. */
export interface ClusterEnv {
  cluster: TestCluster
  kube: KubeClient
  service: HookService
  /** Drivers by controller name (`gpuhooks-instance`, `gpuhooks-instance-isolation`, ...). */
  drivers: Map<string, Driver>
  driver(name: string): Driver
  /** Extra CRDs for a scenario (e.g. open-schema stand-ins for KubeSwift kinds), applied and Established. */
  installCrds(paths: readonly string[]): Promise<void>
  stop(): Promise<void>
}

/** Options of {@link startEnv}. */
export interface EnvOptions {
  /** Extra CRD files to install before the service starts (stand-ins for foreign kinds). */
  extraCrds?: readonly string[]
  /** Register the admission webhooks (default true). */
  webhooks?: boolean
  /** How the cluster starts (a real node's scenarios bind the API server to the node's address). */
  cluster?: StartClusterOptions
  /** Variables of the hook service's process contract besides the harness's (docs/README.md). */
  serviceEnv?: Record<string, string>
}

/**
 * Applies the CRDs in `paths` and waits until each serves lists: Established comes a moment before
 * the new storage serves them (429 "storage is (re)initializing"), and a first list, the driver's
 * or an informer's, must not meet that.
 */
export async function installCrds(cluster: TestCluster, paths: readonly string[]): Promise<void> {
  if (paths.length === 0) return
  await cluster.kubectl(['apply', ...paths.flatMap((p) => ['-f', p])])
  await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...paths.flatMap((p) => ['-f', p])])
  // A CRD's name is <plural>.<group>, which `kubectl get` takes; a file may hold several CRDs.
  for (const path of paths) {
    const { stdout } = await cluster.kubectl(['get', '-f', path, '-o', 'name'])
    for (const resource of stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => l.slice(l.indexOf('/') + 1))) {
      await eventually(`${resource} to list`, async () =>
        (await cluster.kubectl(['get', resource, '--all-namespaces'], { allowFail: true })).code === 0 ? true : undefined
      )
    }
  }
}

/** Starts the world; `stop()` tears all of it down. */
export async function startEnv(options: EnvOptions = {}): Promise<ClusterEnv> {
  const cluster = await startCluster(options.cluster)
  let service: HookService | undefined
  try {
    const kube = new KubeClient(loadKubeconfig(cluster.kubeconfig))
    const crdDir = join(ROOT, 'crds')
    const crds = readdirSync(crdDir)
      .filter((f) => f.endsWith('.yaml'))
      .sort()
      .map((f) => join(crdDir, f))
    await installCrds(cluster, [...crds, ...(options.extraCrds ?? [])])
    service = await startHookService(cluster, options.serviceEnv)
    if (options.webhooks ?? true) await registerWebhooks(cluster, service, WEBHOOKS)
    const drivers = new Map<string, Driver>()
    for (const controller of loadControllers(join(ROOT, 'metacontroller'))) {
      drivers.set(controller.name, new Driver({ kube, controller, hookBaseUrl: service.hooksUrl }))
    }
    const started = service
    return {
      cluster,
      kube,
      service: started,
      drivers,
      driver(name) {
        const found = drivers.get(name)
        if (found === undefined) throw new Error(`no controller ${name} in metacontroller/; have ${[...drivers.keys()].join(', ')}`)
        return found
      },
      installCrds: (paths) => installCrds(cluster, paths),
      async stop() {
        await started.stop()
        await cluster.stop()
      }
    }
  } catch (err) {
    await service?.stop()
    await cluster.stop()
    throw err
  }
}

/**
 * Polls `check` every 200 ms until it returns a value other than undefined, or fails after
 * `timeoutMs`; the failure names `what` and adds what `explain` says (a process's log, the state
 * it waited on), the one home of every scenario's wait.
 */
export async function eventually<T>(
  what: string,
  check: () => Promise<T | undefined>,
  timeoutMs = 30_000,
  explain?: () => string | Promise<string>
): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value !== undefined) return value
    if (Date.now() > deadline) {
      const why = explain === undefined ? '' : `\n${await explain()}`
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

/**
 * Rounds of the world (Metacontroller's passes, then whatever the scenario plays: KubeSwift, the
 * kubelets, the agent) until `check` holds for what `read` reads, at most `seconds`, a second
 * apart; `always` runs on every read (an invariant of every round). The failure names `what` and
 * adds what `explain` says of the last read.
 */
export async function roundsUntil<T>(
  what: string,
  world: {
    round: () => Promise<void>
    read: () => Promise<T>
    check: (value: T) => boolean
    seconds: number
    always?: (value: T) => void
    explain: (value: T) => string | Promise<string>
  }
): Promise<T> {
  const deadline = Date.now() + world.seconds * 1000
  for (;;) {
    await world.round()
    const value = await world.read()
    world.always?.(value)
    if (world.check(value)) return value
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${await world.explain(value)}`)
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}
