/**
 * The start of a real-node scenario file: the host prepared (the node's lock and address), a
 * cluster whose API server binds that address with the controllers a node's workloads need, and
 * the node itself; stopped in the file's teardown, node first (its Pods are deleted while kubelet
 * still runs), then the cluster.
 */
import t from 'tap'
import { startCluster, type TestCluster } from './cluster.ts'
import { startEnv, type ClusterEnv, type EnvOptions } from './env.ts'
import { NODE_NET } from './node-host.ts'
import { prepareNode, startNode, type NodeOptions, type RealNode } from './node.ts'

/** Besides cluster.ts's: what Deployments, Jobs, Services and the Node's taints need. */
const NODE_CONTROLLERS = [
  'deployment-controller',
  'replicaset-controller',
  'job-controller',
  'endpointslice-controller',
  'node-lifecycle-controller',
  // A Pod's ResourceClaim made from its template, and deleted after the Pod (a DRA Instance).
  'resourceclaim-controller',
  // A persistent workspace's claim bound to a pre-created PersistentVolume, and released from its
  // protection finalizer once no Pod uses it.
  'persistentvolume-binder-controller',
  'persistentvolumeclaim-protection-controller'
] as const

const CLUSTER = { nodeAddress: NODE_NET.address, extraControllers: NODE_CONTROLLERS }

/** A scenario world (env.ts: the hook service, the drivers) with a real node. */
export interface NodeEnv extends ClusterEnv {
  node: RealNode
}

/** Starts `world` for a prepared host, then the node; everything is stopped in the file's teardown. */
async function withNode<W extends { cluster: TestCluster; stop(): Promise<void> }>(
  world: () => Promise<W>,
  nodeOptions: NodeOptions = {}
): Promise<W & { node: RealNode }> {
  const prepared = await prepareNode()
  let started: W
  try {
    started = await world()
  } catch (error) {
    await prepared.abandon()
    throw error
  }
  let node: RealNode
  try {
    node = await startNode(started.cluster, prepared, nodeOptions)
  } catch (error) {
    await started.stop()
    throw error
  }
  t.teardown(async () => {
    const errors = await node.stop()
    await started.stop()
    for (const error of errors) process.stderr.write(`[node] ${error}\n`)
  })
  return Object.assign(started, { node })
}

/** The hook service, the drivers and a real node (running what `node` adds). */
export function startNodeScenario(options: EnvOptions = {}, node: NodeOptions = {}): Promise<NodeEnv> {
  return withNode(() => startEnv({ ...options, cluster: CLUSTER }), node)
}

/** A bare cluster and a real node (the chart brings its own hook service). */
export function startNodeCluster(): Promise<{ cluster: TestCluster; node: RealNode; stop(): Promise<void> }> {
  return withNode(async () => {
    const cluster = await startCluster(CLUSTER)
    return { cluster, stop: () => cluster.stop() }
  })
}
