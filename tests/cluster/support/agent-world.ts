/**
 * A scenario of the workload agent alone, as `tests/cluster/53-agent-kubelets` plays it: the
 * infrastructure cluster with the CellNodeSet CRD, a stand-in GPUCellPool and the opted-in
 * kubeconfig Secret; the workload cluster (support/workload-cluster.ts) with the agent's RBAC; a
 * CellNodeSet whose spec the scenario writes as the cellpool hook would; and the agent as a real
 * process. The reads and waits a scenario needs come with it, each wait naming the agent's log.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { createKubeconfigSecret, grantAgentAccess, startAgent, writeStandInPoolCrd, type AgentProcess } from './agent.ts'
import { cellNodeSetRef } from './cellpool.ts'
import { startCluster, type TestCluster } from './cluster.ts'
import { eventually, installCrds } from './env.ts'
import { KubeClient, loadKubeconfig, type ResourceRef } from './kube.ts'
import { binariesDir, startWorkloadCluster, type WorkloadCluster } from './workload-cluster.ts'

/** Loose views of what the scenario reads, checked by value. */
type Loose = any

const ROOT = join(import.meta.dirname, '..', '..', '..')
const CELLS = 'cells.kubeswift.io/v1alpha1'

/** The running scenario. */
export interface AgentWorld {
  cluster: TestCluster
  /** Admin of the infrastructure cluster. */
  kube: KubeClient
  workload: WorkloadCluster
  /** Admin of the workload cluster. */
  wl: KubeClient
  poolUID: string
  cnsRef: ResourceRef
  agent: AgentProcess
  /** The CellNodeSet as stored. */
  cns: () => Promise<Loose>
  /** The status row of Node `name`. */
  row: (cns: Loose, name: string) => Loose
  /** Polls `check` until it answers; a timeout names `what` and ends with the agent's log. */
  until: <T>(what: string, check: () => Promise<T | undefined>, timeoutMs?: number) => Promise<T>
  /** Waits until the agent has logged `count` more passes of the CellNodeSet. */
  morePasses: (count: number) => Promise<void>
  /** Writes `spec.nodes` as the cellpool hook would. */
  setNodes: (nodes: Loose[]) => Promise<void>
  /** Closes `client` with the world. */
  closeLater: (client: KubeClient) => void
  stop: () => Promise<void>
}

/** Starts the scenario for pool `pool` in namespace `namespace`. */
export async function startAgentWorld(namespace: string, pool: string): Promise<AgentWorld> {
  const binDir = binariesDir()
  const cluster = await startCluster({ binDir })
  const kube = new KubeClient(loadKubeconfig(cluster.kubeconfig))
  const workload = await startWorkloadCluster(cluster, binDir)
  const clients: KubeClient[] = [kube]
  // The agent's informers include CellInfrastructures: it runs no pass before they have synced.
  const crds = ['cellnodesets', 'cellinfrastructures'].map((plural) => join(ROOT, 'crds', `${plural}.cells.kubeswift.io.yaml`))
  await installCrds(cluster, [...crds, writeStandInPoolCrd(cluster.dir)])
  await kube.create({ apiVersion: 'v1', resource: 'namespaces' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
  const created = await kube.create(
    { apiVersion: CELLS, resource: 'gpucellpools', namespace },
    { apiVersion: CELLS, kind: 'GPUCellPool', metadata: { name: pool, namespace }, spec: {} }
  )
  const poolUID = String((created.body as Loose).metadata.uid)
  await createKubeconfigSecret(kube, namespace, 'wl-kubeconfig', workload.agentKubeconfig())
  const cnsRef = cellNodeSetRef(namespace, pool)
  const owner = { apiVersion: CELLS, kind: 'GPUCellPool', name: pool, uid: poolUID, controller: true, blockOwnerDeletion: true }
  await kube.create(cnsRef, {
    apiVersion: CELLS,
    kind: 'CellNodeSet',
    metadata: { name: pool, namespace, ownerReferences: [owner] },
    spec: { kubeconfigSecretRef: { name: 'wl-kubeconfig', key: 'value' }, poolUID, nodes: [] }
  })
  await grantAgentAccess(workload.admin)
  const agent = await startAgent(cluster.kubeconfig, cluster.dir)

  const passes = (): number =>
    readFileSync(agent.log, 'utf8')
      .split('\n')
      .filter((l) => l.includes(`"cellNodeSet":"${namespace}/${pool}"`) && l.includes('"msg":"pass"')).length
  const until = async <T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> => {
    try {
      return await eventually(what, check, timeoutMs)
    } catch (error) {
      throw new Error(`${(error as Error).message}\nagent log:\n${agent.logTail()}`)
    }
  }
  return {
    cluster,
    kube,
    workload,
    wl: workload.admin,
    poolUID,
    cnsRef,
    agent,
    cns: async () => (await kube.get(cnsRef)).body,
    row: (cns, name) => (cns.status?.nodes ?? []).find((r: Loose) => r.name === name),
    until,
    morePasses: async (count) => {
      const seen = passes()
      await until(`${count} more passes`, async () => (passes() >= seen + count ? true : undefined))
    },
    setNodes: async (nodes) => {
      await kube.patch(cnsRef, { spec: { nodes } }, 'merge')
    },
    closeLater: (client) => void clients.push(client),
    stop: async () => {
      if (agent.child.exitCode === null) agent.child.kill('SIGKILL')
      for (const client of clients) client.close()
      await workload.stop()
      workload.close()
      await cluster.stop()
    }
  }
}
