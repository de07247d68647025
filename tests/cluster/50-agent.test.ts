// The workload agent against real API servers (docs/workload.md; docs/testing.md, "The workload side runs
// for real too"): the infrastructure cluster holds the pool's CellNodeSet (its spec written here
// as the cellpool hook would) and the kubeconfig Secret; a second kube-apiserver on the same etcd
// is the workload cluster, where the test plays the kubelets (Nodes, Lease renewals, HAMi's
// annotations, Pods). The agent runs as a real process with the liveness windows shortened by
// its documented environment variables (a Lease unchanged 8 s instead of 90 s, renewed by the test every second), so the sweeps
// happen within the test without any timed assertion: everything is polled for.
import { readFileSync } from 'node:fs'
import t from 'tap'
import {
  createUnschedulablePod,
  grantAgentAccess,
  Kubelets,
  nodeRef,
  runAllocatedPod,
  setPodStatus,
  startAgent,
  WORK_NAMESPACE,
  type AgentProcess
} from './support/agent.ts'
import { passesOf, prepareAgentInfra, untilAgent } from './support/agent-infra.ts'
import { presentRow, withoutRecord } from './support/cellpool.ts'
import { startCluster } from './support/cluster.ts'
import { isReason, KubeClient, loadKubeconfig, type ResourceRef } from './support/kube.ts'
import { binariesDir, startWorkloadCluster } from './support/workload-cluster.ts'
import { condition } from './support/reads.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

const NS = 'tenant'
const GROUP = 'cells.kubeswift.io/v1alpha1'
const FINALIZER = 'cells.kubeswift.io/workload-nodes'

const binDir = binariesDir()
const cluster = await startCluster({ binDir })
const kube = new KubeClient(loadKubeconfig(cluster.kubeconfig))
const workload = await startWorkloadCluster(cluster, binDir)
const wl = workload.admin
// Assigned once the teardown that stops it is registered.
// eslint-disable-next-line prefer-const -- declared before the teardown that stops it
let agent: AgentProcess | undefined
const kubelets = new Kubelets(wl)
t.teardown(async () => {
  kubelets.stopAll()
  if (agent !== undefined && agent.child.exitCode === null) agent.child.kill('SIGKILL')
  await workload.stop()
  workload.close()
  kube.close()
  await cluster.stop()
})

// --- infrastructure cluster: CRDs, the pool (a stand-in CRD), the Secret, the CellNodeSet ---
const { cnsRef, createPool, createSecret, createCellNodeSet } = await prepareAgentInfra(cluster, kube, NS)
const podRef = (name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'pods', namespace: WORK_NAMESPACE, name })

async function getOrUndefined(client: KubeClient, ref: ResourceRef): Promise<Loose> {
  try {
    return (await client.get(ref)).body
  } catch (error) {
    if (isReason(error, 'NotFound')) return undefined
    throw error
  }
}

/** Writes spec fields as the cellpool hook would (a merge patch of the spec). */
async function setSpec(pool: string, spec: Loose): Promise<number> {
  const answer = await kube.patch(cnsRef(pool), { spec }, 'merge')
  return Number((answer.body as Loose).metadata.generation)
}

/** A spec entry as the cellpool hook writes it for a cell of pool-a: its labels, annotation and taint. */
const cellNode = (name: string, instance: string, options: { cordon?: boolean } = {}): Loose => ({
  name,
  instance,
  labels: { 'gpu.pool': 'pool-a', team: 'ml' },
  annotations: { 'example.com/note': 'cell' },
  taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }],
  cordon: options.cordon ?? false
})

const cns = async (name = 'pool-a'): Promise<Loose> => (await kube.get(cnsRef(name))).body
const row = (c: Loose, name: string): Loose => (c.status?.nodes ?? []).find((r: Loose) => r.name === name)
const reachable = (c: Loose): Loose => condition(c, 'Reachable')

// --- workload cluster: the agent's RBAC from deploy/agent-rbac, bound to its token's user ---
await grantAgentAccess(wl)

const POOL_A_UID = await createPool('pool-a')
const POOL_LABELS = (instance: string): Record<string, string> => ({
  'cells.kubeswift.io/pool-uid': POOL_A_UID,
  'cells.kubeswift.io/instance': instance
})
/** What a cell's kubelet registers: the pool uid from its bootstrap's --node-labels, and no instance (not known yet then). */
const REGISTERED = { 'cells.kubeswift.io/pool-uid': POOL_A_UID }
await createSecret('wl-kubeconfig', true, workload.agentKubeconfig())
await createCellNodeSet('pool-a', POOL_A_UID, 'wl-kubeconfig', {
  demand: {
    resources: ['nvidia.com/gpu', 'nvidia.com/gpumem', 'nvidia.com/gpucores'],
    nodeLabels: { 'gpu.pool': 'pool-a' },
    taints: [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }]
  }
})

// --- the agent, a real process ---
agent = await startAgent(cluster.kubeconfig, cluster.dir)
const { port: agentPort, log: agentLog } = agent
const metric = async (line: string): Promise<string | undefined> => {
  try {
    const text = await (await fetch(`http://127.0.0.1:${agentPort}/metrics`)).text()
    return text.split('\n').find((l) => l.startsWith(line))
  } catch {
    return undefined
  }
}
/** How many passes the agent has logged for a CellNodeSet of the namespace. */
const passes = (name: string): number => (agent === undefined ? 0 : passesOf(agent, `${NS}/${name}`))
/** Polls until `check` answers, with the agent's log in the failure message. */
const until = <T>(what: string, check: () => Promise<T | undefined>, timeoutMs?: number): Promise<T> =>
  untilAgent(agent, what, check, timeoutMs)

t.test('the agent starts: probes answer, it leads, adds its finalizer and reports an empty pool', async (t) => {
  await until('/readyz 200', async () => {
    try {
      return (await fetch(`http://127.0.0.1:${agentPort}/readyz`)).status === 200 ? true : undefined
    } catch {
      return undefined
    }
  })
  t.equal((await fetch(`http://127.0.0.1:${agentPort}/healthz`)).status, 200)
  // One pass writes the status, then patches the finalizer on: a read between the two sees the
  // status alone, so the wait is for both (and fails, naming them, if either never comes).
  const c = await until('the first status and the finalizer', async () => {
    const c = await cns()
    return reachable(c)?.status === 'True' && (c.metadata.finalizers ?? []).includes(FINALIZER) ? c : undefined
  })
  t.equal(c.status.nodeCount, 0)
  t.equal(c.status.observedGeneration, c.metadata.generation)
  t.same(c.status.demand, { read: true, pendingPods: 0, shapes: [] })
  const lease = await getOrUndefined(kube, {
    apiVersion: 'coordination.k8s.io/v1',
    resource: 'leases',
    namespace: 'default',
    name: 'gpuhooks-workload-agent'
  })
  t.equal(lease?.spec?.holderIdentity, 'agent-under-test')
  t.match(await until('the reachable metric', () => metric('gpuhooks_workload_reachable{namespace="tenant",name="pool-a"}')), / 1$/)
})

t.test('join → capacity → Ready rows', async (t) => {
  await setSpec('pool-a', { nodes: [cellNode('pool-a-0', 'guest-0', { cordon: false })] })
  const before = await until('the row of a Node not there yet', async () => {
    const r = row(await cns(), 'pool-a-0')
    return r?.present === false ? r : undefined
  })
  t.same(before, { name: 'pool-a-0', present: false })

  await kubelets.join('pool-a-0', REGISTERED)
  const node = await until('the Node labelled, annotated and tainted', async () => {
    const n = await getOrUndefined(wl, nodeRef('pool-a-0'))
    return n?.metadata?.labels?.team === 'ml' && (n.spec.taints ?? []).some((x: Loose) => x.key === 'gpu') ? n : undefined
  })
  t.match(node.metadata.labels, {
    'gpu.pool': 'pool-a',
    team: 'ml',
    'cells.kubeswift.io/pool': 'pool-a',
    'cells.kubeswift.io/pool-uid': POOL_A_UID,
    'cells.kubeswift.io/cell': 'pool-a-0',
    'cells.kubeswift.io/cell-index': '0',
    'cells.kubeswift.io/instance': 'guest-0',
    'kubernetes.io/hostname': 'pool-a-0'
  })
  t.equal(node.metadata.annotations['example.com/note'], 'cell')
  t.equal(node.metadata.annotations['cells.kubeswift.io/managed'], undefined, 'nothing recorded on the Node, which its kubelet may write')
  t.same(row(await cns(), 'pool-a-0').applied, {
    uid: node.metadata.uid,
    instance: 'guest-0',
    labels: [
      'cells.kubeswift.io/cell',
      'cells.kubeswift.io/cell-index',
      'cells.kubeswift.io/instance',
      'cells.kubeswift.io/pool',
      'cells.kubeswift.io/pool-uid',
      'gpu.pool',
      'team'
    ],
    annotations: ['example.com/note'],
    taints: [{ key: 'gpu', effect: 'NoSchedule' }],
    cordoned: false
  })
  const settledVersion = String(node.metadata.resourceVersion)

  // HAMi's device plugin registers the GPU.
  await kubelets.hamiRegisters('pool-a-0')
  const ready = await until('a Ready row with the device', async () => {
    const r = row(await cns(), 'pool-a-0')
    return r?.registration === 'Parsed' ? r : undefined
  })
  t.same(
    withoutRecord(ready),
    presentRow('pool-a-0', 'guest-0', POOL_A_UID),
    'the row of a live, Ready Node with the device HAMi registered'
  )
  t.equal((await cns()).status.nodeCount, 1)
  // Passes run every second; a settled Node is not written again (only HAMi's annotation moved it).
  const after = await getOrUndefined(wl, nodeRef('pool-a-0'))
  t.not(after.metadata.resourceVersion, settledVersion, "HAMi's own write moved it")
  const writes = await metric('gpuhooks_workload_node_writes_total{action="patch"}')
  const seen = passes('pool-a')
  await until('three more passes', async () => (passes('pool-a') >= seen + 3 ? true : undefined))
  t.equal(await metric('gpuhooks_workload_node_writes_total{action="patch"}'), writes, 'no patch of a Node already as required')
})

t.test("the leader exports the pool's series: capacity from the rows, cells and desired size from the pool's status", async (t) => {
  // The Ready row above: one healthy 80 GiB device on a schedulable Node.
  t.match(
    await until('the capacity series', () => metric('gpuhooks_cellpool_capacity_gpu_devices{namespace="tenant",pool="pool-a"}')),
    / 1$/
  )
  t.match(await metric('gpuhooks_cellpool_capacity_gpu_memory_bytes{namespace="tenant",pool="pool-a"}'), / 85899345920$/)
  t.match(await metric('gpuhooks_workload_reachable_reason{namespace="tenant",name="pool-a",reason="Reachable"}'), / 1$/)
  t.match(await metric('gpuhooks_workload_reachable_reason{namespace="tenant",name="pool-a",reason="Unreachable"}'), / 0$/)
  t.equal(
    await metric('gpuhooks_cellpool_cells_desired{namespace="tenant",pool="pool-a"}'),
    undefined,
    'no desired size before the pool has one'
  )
  // The cell pool hook's status, as it writes it (the stand-in CRD has no status subresource).
  await kube.patch(
    { apiVersion: GROUP, resource: 'gpucellpools', namespace: NS, name: 'pool-a' },
    {
      status: {
        desiredReplicas: 2,
        cells: [
          { name: 'pool-a-0', phase: 'Ready' },
          { name: 'pool-a-1', phase: 'Booting' }
        ],
        demand: { pendingPods: 3, satisfiable: 2 }
      }
    },
    'merge'
  )
  t.match(await until('the desired size', () => metric('gpuhooks_cellpool_cells_desired{namespace="tenant",pool="pool-a"}')), / 2$/)
  const ready = await until('the Ready cells', async () => {
    const line = await metric('gpuhooks_cellpool_cells{namespace="tenant",pool="pool-a",phase="Ready"}')
    return line?.endsWith(' 1') === true ? line : undefined
  })
  t.ok(ready, 'one Ready cell')
  t.match(await metric('gpuhooks_cellpool_cells{namespace="tenant",pool="pool-a",phase="Booting"}'), / 1$/)
  t.match(await metric('gpuhooks_cellpool_cells{namespace="tenant",pool="pool-a",phase="Failed"}'), / 0$/)
  t.match(await metric('gpuhooks_cellpool_demand_pending_pods{namespace="tenant",pool="pool-a"}'), / 3$/)
  t.match(await metric('gpuhooks_cellpool_demand_satisfiable_pods{namespace="tenant",pool="pool-a"}'), / 2$/)
  t.match(await metric('gpuhooks_cellpool_drain_timeout_seconds{namespace="tenant",pool="pool-a"}'), / 600$/)
})

t.test('cordon and drain with allocations ending', async (t) => {
  await runAllocatedPod(wl, 'trainer', 'pool-a-0', { 'nvidia.com/gpu': '1' })
  await until('one allocation on the row', async () => {
    const r = row(await cns(), 'pool-a-0')
    return r?.allocations?.pods === 1 ? r : undefined
  })

  const generation = await setSpec('pool-a', { nodes: [cellNode('pool-a-0', 'guest-0', { cordon: true })] })
  const drained = await until('the cordon carried out', async () => {
    const c = await cns()
    return c.status.observedGeneration === generation && row(c, 'pool-a-0')?.unschedulable === true ? c : undefined
  })
  t.same(
    row(drained, 'pool-a-0').allocations,
    { read: true, pods: 1, inFlight: false },
    'the running Pod still holds its GPU: nothing is evicted'
  )
  t.equal((await getOrUndefined(wl, nodeRef('pool-a-0'))).spec.unschedulable, true)
  t.ok(await getOrUndefined(wl, podRef('trainer')), 'the Pod is never deleted')

  // A Pod HAMi's scheduler has annotated for the Node but not bound yet, still being allocated.
  await wl.create(
    { apiVersion: 'v1', resource: 'pods', namespace: 'work' },
    {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'binding',
        namespace: 'work',
        annotations: { 'hami.io/vgpu-node': 'pool-a-0', 'hami.io/vgpu-devices-to-allocate': 'GPU-0,NVIDIA,1000,10:;' }
      },
      spec: { containers: [{ name: 'main', image: 'busybox' }] }
    }
  )
  await until('in flight', async () => (row(await cns(), 'pool-a-0')?.allocations?.inFlight === true ? true : undefined))
  await wl.delete(podRef('binding'))
  await setPodStatus(wl, 'trainer', { phase: 'Succeeded' })
  const empty = await until('the allocations ended', async () => {
    const r = row(await cns(), 'pool-a-0')
    return r?.allocations?.pods === 0 && r.allocations.inFlight === false ? r : undefined
  })
  t.same(empty.allocations, { read: true, pods: 0, inFlight: false })

  // The drain is called off: the agent clears the cordon it set.
  await setSpec('pool-a', { nodes: [cellNode('pool-a-0', 'guest-0', { cordon: false })] })
  await until('uncordoned', async () =>
    (await getOrUndefined(wl, nodeRef('pool-a-0'))).spec.unschedulable === undefined ? true : undefined
  )
  t.pass('the cordon the agent set is cleared')
})

t.test('a cordon someone else set is left alone', async (t) => {
  await wl.patch(nodeRef('pool-a-0'), { spec: { unschedulable: true } }, 'merge')
  // Removing a label the agent set proves passes ran since: the agent puts it back.
  await wl.patch(nodeRef('pool-a-0'), { metadata: { labels: { team: null } } }, 'merge')
  await until('the label restored', async () =>
    (await getOrUndefined(wl, nodeRef('pool-a-0'))).metadata.labels.team === 'ml' ? true : undefined
  )
  t.equal((await getOrUndefined(wl, nodeRef('pool-a-0'))).spec.unschedulable, true)
  await wl.patch(nodeRef('pool-a-0'), { spec: { unschedulable: null } }, 'merge')
})

t.test('labels and taints a pool may not set are never written, whatever the CellNodeSet says; the row says so', async (t) => {
  const asked = cellNode('pool-a-0', 'guest-0')
  asked.labels = { ...asked.labels, 'node-restriction.kubernetes.io/trusted': 'true', 'node-role.kubernetes.io/control-plane': '' }
  asked.taints = [...asked.taints, { key: 'node.kubernetes.io/out-of-service', value: 'nodeshutdown', effect: 'NoExecute' }]
  await setSpec('pool-a', { nodes: [asked] })
  const r = await until('the row names what was not written', async () => {
    const r = row(await cns(), 'pool-a-0')
    return typeof r?.message === 'string' && r.message.startsWith('not written:') ? r : undefined
  })
  t.equal(
    r.message,
    'not written: label node-restriction.kubernetes.io/trusted, label node-role.kubernetes.io/control-plane, taint node.kubernetes.io/out-of-service:NoExecute ' +
      "(a pool may not set what NodeRestriction keeps from a kubelet, or what Kubernetes' controllers own)"
  )
  // Removing a label the agent set proves passes ran since: the agent puts it back, and nothing else.
  await wl.patch(nodeRef('pool-a-0'), { metadata: { labels: { team: null } } }, 'merge')
  const node = await until('the label restored', async () => {
    const n = await getOrUndefined(wl, nodeRef('pool-a-0'))
    return n.metadata.labels.team === 'ml' ? n : undefined
  })
  t.equal(node.metadata.labels['node-restriction.kubernetes.io/trusted'], undefined, 'no node-restriction label')
  t.equal(node.metadata.labels['node-role.kubernetes.io/control-plane'], undefined, 'no control-plane role')
  const taints = (node.spec.taints ?? []).map((x: Loose) => String(x.key))
  t.ok(taints.includes('gpu'), "the pool's own taint is there")
  // The node lifecycle controller of the test cluster may have added its own taints; none is the agent's.
  t.notOk(taints.includes('node.kubernetes.io/out-of-service'), `no out-of-service taint: ${taints.join(', ')}`)
  await setSpec('pool-a', { nodes: [cellNode('pool-a-0', 'guest-0')] })
  await until('the row message gone', async () => (row(await cns(), 'pool-a-0')?.message === undefined ? true : undefined))
})

t.test("stale and orphan Nodes are swept; live ones never; another pool's Node is not written", async (t) => {
  // pool-a-1: listed for guest-1, but an old VM (guest-old) registered under the name and stopped.
  await kubelets.join('pool-a-1', POOL_LABELS('guest-old'), false)
  // pool-a-2: listed for guest-2, but guest-old-2's kubelet is still live there.
  await kubelets.join('pool-a-2', POOL_LABELS('guest-old-2'))
  // pool-a-8: not listed, stopped.  pool-a-7: not listed, live (a VM still shutting down).
  await kubelets.join('pool-a-8', POOL_LABELS('guest-8'), false)
  await kubelets.join('pool-a-7', POOL_LABELS('guest-7'))
  // pool-a-3: listed, but it carries another pool's uid.
  await kubelets.join('pool-a-3', { 'cells.kubeswift.io/pool-uid': 'uid-of-another-pool', 'cells.kubeswift.io/instance': 'guest-3' }, false)
  await setSpec('pool-a', { nodes: [0, 1, 2, 3].map((i) => cellNode(`pool-a-${i}`, `guest-${i}`)) })
  const swept = await until(
    'the stale and the orphan Node swept',
    async () => {
      const c = await cns()
      const names = (c.status.swept ?? []).map((s: Loose) => `${s.name}:${s.reason}:${s.instance}`).sort()
      return names.includes('pool-a-1:Stale:guest-old') && names.includes('pool-a-8:Orphan:guest-8') ? c : undefined
    },
    90_000
  )
  t.equal(await getOrUndefined(wl, nodeRef('pool-a-1')), undefined, 'the stale Node is gone')
  t.equal(await getOrUndefined(wl, nodeRef('pool-a-8')), undefined, 'the orphan is gone')
  // Registered at the same time as the swept ones, past the same windows: kept because live.
  t.ok(await getOrUndefined(wl, nodeRef('pool-a-7')), 'the live orphan is kept')
  t.ok(await getOrUndefined(wl, nodeRef('pool-a-2')), 'the live Node of another instance is kept')
  const c = await until('the status after the sweep', async () => {
    const c = await cns()
    return row(c, 'pool-a-1')?.present === false ? c : undefined
  })
  t.match(row(c, 'pool-a-2'), { present: true, conflict: true, live: true, instance: '' })
  t.match(row(c, 'pool-a-2').message, /guest-old-2/)
  t.match(row(c, 'pool-a-3'), { present: true, conflict: true, poolUID: 'uid-of-another-pool' })
  t.equal(c.status.nodeCount, 3, 'pool-a-0, pool-a-2 and the live orphan pool-a-7 carry the pool uid')
  t.same(swept.status.swept.map((s: Loose) => s.name).sort(), ['pool-a-1', 'pool-a-8'])
  const other = await getOrUndefined(wl, nodeRef('pool-a-3'))
  t.equal(other.metadata.labels.team, undefined, "another pool's Node is not written")
  t.equal(row(c, 'pool-a-3').applied, undefined, "nothing recorded for another pool's Node")
  t.ok(other, "another pool's Node is not deleted, though it does not heartbeat")
  const grown = (await getOrUndefined(wl, nodeRef('pool-a-2'))).metadata.labels
  t.equal(grown.team, undefined, 'a Node of another instance is not written')
})

t.test('pending demand that fits the pool is read', async (t) => {
  const pending = (name: string, tolerations: Loose[], limits: Record<string, string>): Promise<void> =>
    createUnschedulablePod(wl, name, { limits, tolerations, nodeSelector: { 'gpu.pool': 'pool-a' } })
  const tolerate = [{ key: 'gpu', operator: 'Equal', value: 'true', effect: 'NoSchedule' }]
  await pending('wants-gpu', tolerate, { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '20000' })
  await pending('wants-gpu-2', tolerate, { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '20000' })
  await pending('intolerant', [], { 'nvidia.com/gpu': '1' })
  await pending('cpu-only', tolerate, { cpu: '1' })
  const demand = await until('demand read', async () => {
    const d = (await cns()).status.demand
    return d?.pendingPods === 2 ? d : undefined
  })
  t.same(demand, { read: true, pendingPods: 2, shapes: [{ devices: 1, memoryMiB: 20000, cores: 0, pods: 2 }] })
})

t.test('a Secret without the opt-in label is CredentialInvalid, and nothing is read with it', async (t) => {
  const uid = await createPool('pool-b')
  await createSecret('unlabelled', false, workload.agentKubeconfig())
  await createCellNodeSet('pool-b', uid, 'unlabelled')
  const unreachable = await until('CredentialInvalid', async () => {
    const c = reachable(await cns('pool-b'))
    return c?.status === 'False' ? c : undefined
  })
  t.equal(unreachable.reason, 'CredentialInvalid')
  t.match(unreachable.message, /lacks the label cells.kubeswift.io\/workload-kubeconfig/)
})

t.test("a CellNodeSet whose spec.poolUID is not its controller pool's uid is not served", async (t) => {
  const uid = await createPool('pool-c')
  // The owner reference is real (the garbage collector keeps it); the spec names another pool.
  await kube.create(cnsRef('pool-c'), {
    apiVersion: GROUP,
    kind: 'CellNodeSet',
    metadata: {
      name: 'pool-c',
      namespace: NS,
      ownerReferences: [{ apiVersion: GROUP, kind: 'GPUCellPool', name: 'pool-c', uid, controller: true }]
    },
    spec: { kubeconfigSecretRef: { name: 'wl-kubeconfig', key: 'value' }, poolUID: POOL_A_UID, nodes: [] }
  })
  const line = await until('the agent to look at pool-c', async () =>
    readFileSync(agentLog, 'utf8')
      .split('\n')
      .find((l) => l.includes('"cellNodeSet":"tenant/pool-c"') && l.includes('not served'))
  )
  t.match(JSON.parse(line).why, /is not spec.poolUID/)
  const c = await cns('pool-c')
  t.equal(c.status, undefined, 'no status written')
  t.same(c.metadata.finalizers ?? [], [], 'no finalizer added')
})

t.test('the workload API server stopped mid-run: Unreachable, nothing deleted, recovery when it returns', async (t) => {
  const before = (await wl.list({ apiVersion: 'v1', resource: 'nodes' })).body.map((n: Loose) => n.metadata.name).sort()
  await workload.stop()
  const down = await until(
    'Reachable=False',
    async () => {
      const c = reachable(await cns())
      return c?.status === 'False' ? c : undefined
    },
    90_000
  )
  t.equal(down.reason, 'Unreachable')
  t.match(
    await until('the metric', async () => {
      const m = await metric('gpuhooks_workload_reachable{namespace="tenant",name="pool-a"}')
      return m?.endsWith(' 0') ? m : undefined
    }),
    / 0$/
  )
  const frozen = await cns()
  t.equal(row(frozen, 'pool-a-0').present, true, 'the last observation is kept')
  await workload.start()
  await until('Reachable=True again', async () => (reachable(await cns())?.status === 'True' ? true : undefined), 90_000)
  const after = (await wl.list({ apiVersion: 'v1', resource: 'nodes' })).body.map((n: Loose) => n.metadata.name).sort()
  t.same(after, before, 'no Node was deleted across the outage')
  t.equal(row(await cns(), 'pool-a-0').live, true)
})

t.test('the agent identity loses its ClusterRole binding: Forbidden; bound again: Reachable', async (t) => {
  const bindingRef: ResourceRef = { apiVersion: 'rbac.authorization.k8s.io/v1', resource: 'clusterrolebindings', name: 'agent-token-user' }
  const binding = (await wl.get(bindingRef)).body as Loose
  await wl.delete(bindingRef)
  const forbidden = await until('Forbidden', async () => {
    const c = reachable(await cns())
    return c?.reason === 'Forbidden' ? c : undefined
  })
  t.equal(forbidden.status, 'False')
  t.match(forbidden.message, /403/)
  await wl.create(
    { apiVersion: 'rbac.authorization.k8s.io/v1', resource: 'clusterrolebindings' },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'agent-token-user' },
      roleRef: binding.roleRef,
      subjects: binding.subjects
    }
  )
  await until('Reachable again', async () => (reachable(await cns())?.status === 'True' ? true : undefined))
  t.pass('reachable again once bound')
})

t.test("deleting the CellNodeSet sweeps the pool's Nodes once they stop, then lets it go", async (t) => {
  kubelets.stopAll()
  await kube.delete(cnsRef('pool-a'))
  await until(
    'the CellNodeSet gone',
    async () => ((await getOrUndefined(kube, cnsRef('pool-a'))) === undefined ? true : undefined),
    120_000
  )
  const left = (await wl.list({ apiVersion: 'v1', resource: 'nodes' })).body.map((n: Loose) => n.metadata.name).sort()
  t.same(left, ['pool-a-3'], "every Node of the pool is swept; another pool's Node stays")
})

t.test("the pool's Events tell the story: each change once, about the GPUCellPool, as kubectl describe shows it", async (t) => {
  const events = async (pool: string): Promise<Loose[]> =>
    (await kube.list({ apiVersion: 'v1', resource: 'events', namespace: NS })).body.filter(
      (e: Loose) => e.involvedObject?.kind === 'GPUCellPool' && e.involvedObject.name === pool
    )
  // The last sweep (the deleted CellNodeSet's Nodes) is told by the pass that carried it out.
  const story = await until('the Events of the final sweep', async () => {
    const all = await events('pool-a')
    return all.filter((e) => e.reason === 'NodeSwept').length >= 5 ? all : undefined
  })
  const of = (reason: string): Loose[] => story.filter((e) => e.reason === reason)
  const told = (reason: string): number => of(reason).reduce((n, e) => n + Number(e.count), 0)
  t.same(
    Object.fromEntries(['DrainStarted', 'DrainFinished', 'Uncordoned', 'NodeSwept'].map((r) => [r, [of(r).length, told(r)]])),
    {
      DrainStarted: [1, 1],
      DrainFinished: [1, 1],
      // The drain called off, then the cordon someone else set and lifted: the same Event, x2.
      Uncordoned: [1, 2],
      // pool-a-1 (Stale) and pool-a-8 (Orphan), then pool-a-0, pool-a-2 and pool-a-7 once the CellNodeSet was deleted.
      NodeSwept: [5, 5]
    },
    '[Events, occurrences] by reason: each change told once'
  )
  t.same([...new Set(story.map((e) => e.reason))].sort(), [
    'DrainFinished',
    'DrainStarted',
    'NodeSwept',
    'Uncordoned',
    'WorkloadClusterReachable',
    'WorkloadClusterUnreachable'
  ])
  for (const e of story) {
    t.match(
      e,
      {
        type: e.reason === 'WorkloadClusterUnreachable' ? 'Warning' : 'Normal',
        involvedObject: { apiVersion: GROUP, kind: 'GPUCellPool', name: 'pool-a', namespace: NS, uid: POOL_A_UID },
        source: { component: 'gpuhooks-workload-agent' }
      },
      `${e.reason}: about the pool, by the agent`
    )
  }
  t.equal(of('Uncordoned')[0]?.message, 'Node pool-a-0 is schedulable again.')
  t.ok(
    Date.parse(of('Uncordoned')[0]?.lastTimestamp) >= Date.parse(of('Uncordoned')[0]?.firstTimestamp),
    'counted: last seen at its second time'
  )
  t.equal(of('DrainStarted')[0]?.message, "Node pool-a-0 is cordoned for its cell's drain; 1 GPU Pods run on it.")
  t.equal(of('DrainFinished')[0]?.message, 'Node pool-a-0 holds no GPU Pod any more: its cell can be removed.')
  t.same(
    of('NodeSwept')
      .map((e) => String(e.message).split(' ')[2])
      .sort(),
    ['pool-a-0', 'pool-a-1', 'pool-a-2', 'pool-a-7', 'pool-a-8']
  )
  // Stopping the workload API server, and removing the agent's binding there: each lost, and
  // regained. (A restarting API server may answer 403 for a moment before its RBAC is loaded, so
  // the first loss can be told twice, Unreachable then Forbidden.)
  const lostFor = of('WorkloadClusterUnreachable').map((e) => /\((\w+)\)/.exec(String(e.message))?.[1])
  t.ok(lostFor.includes('Unreachable') && lostFor.includes('Forbidden'), `lost for ${lostFor.join(', ')}`)
  t.ok(told('WorkloadClusterUnreachable') >= 2 && told('WorkloadClusterReachable') >= 2, 'each loss and its recovery told')
  const b = await until('the Event of pool-b', async () => {
    const all = await events('pool-b')
    return all.length > 0 ? all : undefined
  })
  t.match(b, [{ type: 'Warning', reason: 'WorkloadClusterUnreachable', message: /\(CredentialInvalid\)/, count: 1 }])
  t.match(await metric('gpuhooks_workload_events_total{reason="NodeSwept",result="created"}'), / 5$/)
  t.match(await metric('gpuhooks_workload_events_total{reason="Uncordoned",result="counted"}'), / 1$/)
  // The deleted CellNodeSet's pool is no longer served: its series go with it.
  await until("pool-a's series dropped", async () =>
    (await metric('gpuhooks_cellpool_cells_desired{namespace="tenant",pool="pool-a"}')) === undefined ? true : undefined
  )
  t.equal(await metric('gpuhooks_cellpool_cells{namespace="tenant",pool="pool-a"'), undefined, 'no cells series of pool-a')
  t.equal(await metric('gpuhooks_workload_reachable{namespace="tenant",name="pool-a"}'), undefined, 'no reachability of pool-a')
})

t.test('SIGTERM: the agent releases its Lease and exits 0', async (t) => {
  const child = agent.child
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  child.kill('SIGTERM')
  t.equal(await exited, 0)
  const lease = await getOrUndefined(kube, {
    apiVersion: 'coordination.k8s.io/v1',
    resource: 'leases',
    namespace: 'default',
    name: 'gpuhooks-workload-agent'
  })
  t.equal(lease.spec.holderIdentity ?? '', '', 'released')
})
