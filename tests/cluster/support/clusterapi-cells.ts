/**
 * The world of a Cluster API cell pool scenario: the Cluster API world (clusterapi-world.ts: the
 * real core manager, the stand-in providers, one Cluster for the workload cluster) plus the
 * product around it: every CRD of `crds/`, the hook service as a process, the driver playing
 * Metacontroller with `gpuhooks-cellpool` as `metacontroller/clusterapi/cellpool.yaml` declares it
 * (the Machines among its children, as the chart's `controllers.cellpool.clusterAPI` renders it),
 * and the workload agent as a process, reading the workload cluster through its
 * own labelled kubeconfig Secret.
 */
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { grantAgentAccess, startAgent, type AgentProcess } from './agent.ts'
import { JOIN_TEMPLATE } from './cellpool.ts'
import { startClusterApiWorld, type ClusterApiWorld } from './clusterapi-world.ts'
import { Driver } from './driver.ts'
import { loadControllers, type CompositeSpec } from './driver-manifest.ts'
import { KUBESWIFT_CRDS } from './env.ts'
import { isReason } from './kube.ts'
import { startHookService, type HookService } from './service.ts'

const ROOT = join(import.meta.dirname, '..', '..', '..')

/** The cell pool controller as the chart renders it with `controllers.cellpool.clusterAPI: true`. */
export function clusterApiCellPoolController(): CompositeSpec {
  const controller = loadControllers(join(ROOT, 'metacontroller', 'clusterapi')).find((c) => c.name === 'gpuhooks-cellpool')
  if (controller?.kind !== 'CompositeController') throw new Error('no CompositeController gpuhooks-cellpool in metacontroller/clusterapi/')
  return controller
}

/** A running Cluster API cell pool world. */
export interface ClusterApiCellsWorld extends ClusterApiWorld {
  service: HookService
  driver: Driver
  agent: AgentProcess
  /** Syncs a pool until a pass writes nothing (at most 6 passes); a conflict with the agent's status write is retried next round. */
  sync(pool: string): Promise<void>
}

/**
 * Starts the world in `namespace` with the Cluster `clusterName`, the join Secret `join` (the
 * scenarios' kubeadm-style template) and the agent's kubeconfig Secret `wl-kubeconfig`.
 */
export async function startClusterApiCellsWorld(namespace: string, clusterName: string): Promise<ClusterApiCellsWorld> {
  const crdDir = join(ROOT, 'crds')
  const crds = readdirSync(crdDir)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .map((f) => join(crdDir, f))
  const world = await startClusterApiWorld({ namespace, clusterName, extraCrds: [...crds, KUBESWIFT_CRDS] })
  const { cluster, kube, workload } = world
  await grantAgentAccess(workload.admin)
  const secrets = { apiVersion: 'v1', resource: 'secrets', namespace }
  await kube.create(secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'join', namespace },
    data: { 'user-data': Buffer.from(JOIN_TEMPLATE).toString('base64') }
  })
  await kube.create(secrets, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'wl-kubeconfig', namespace, labels: { 'cells.kubeswift.io/workload-kubeconfig': 'true' } },
    data: { value: Buffer.from(workload.agentKubeconfig()).toString('base64') }
  })
  const service = await startHookService(cluster)
  const agent = await startAgent(cluster.kubeconfig, cluster.dir)
  t.teardown(async () => {
    await agent.stop()
    await service.stop()
  })
  const driver = new Driver({ kube, controller: clusterApiCellPoolController(), hookBaseUrl: service.hooksUrl })
  const sync = async (pool: string): Promise<void> => {
    for (let pass = 0; pass < 6; pass++) {
      try {
        if ((await driver.syncOnce({ namespace, name: pool })).writes.length === 0) return
      } catch (err) {
        if (!isReason(err, 'Conflict') && !/Conflict|the object has been modified/.test(String(err))) throw err
      }
    }
  }
  return { ...world, service, driver, agent, sync }
}
