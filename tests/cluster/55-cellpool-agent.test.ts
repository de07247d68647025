/**
 * The cell pool controller and the workload agent together (docs/cellpool.md; docs/workload.md): the
 * `gpuhooks-cellpool` driver plays Metacontroller against the hook service, the workload agent
 * runs as a real process against a second kube-apiserver (the workload cluster), and the test
 * plays only KubeSwift (guest statuses: devices, Running, addresses) and the kubelets (Nodes
 * registered with the labels of the rendered `--node-labels`, Lease renewals, HAMi's register
 * annotation, Pods). Nothing but the agent writes a CellNodeSet's status.
 *
 * Covered: a pool of one whose cell goes from Pending to Ready through the agent's rows, with the
 * labels and taints on its Node put there by the agent; an autoscaling pool that a pending GPU Pod
 * fitting its Nodes scales from 1 to 2, and that, once the demand is gone, drains its idle cell
 * (the agent cordons the Node), removes the guest, and whose orphan Node the agent sweeps once
 * its Lease stops being renewed. The agent's liveness windows are shortened by its documented
 * environment variables; everything is polled for, nothing is timed.
 */
import t from 'tap'
import { createUnschedulablePod, nodeRef, runAllocatedPod, WORK_NAMESPACE } from './support/agent.ts'
import {
  AUTOSCALING_ONE_TO_TWO,
  bootGuests,
  appliedOf,
  cellNodeSetRef,
  CELLS,
  listGuests,
  poolManifest,
  presentRow,
  withoutRecord,
  scenarioWorkloadCluster
} from './support/cellpool.ts'
import { startCellPoolAgentScenario } from './support/cellpool-agent.ts'
import { eventually, roundsUntil } from './support/env.ts'
import type { ResourceRef } from './support/kube.ts'
import { condition, reader } from './support/reads.ts'
import type { JsonObject } from '../support/merge.ts'

/** Scenario reads are loose views, checked by value. */
type Obj = any

const NS = 'cells'
const POOL_UID_LABEL = 'cells.kubeswift.io/pool-uid'
const INSTANCE_LABEL = 'cells.kubeswift.io/instance'

/** The admin permits one restricted label key: the hook service and the agent are given it alike. */
const PERMITTED = { PERMITTED_NODE_KEYS: 'node-restriction.kubernetes.io/gpu' }
const scenario = await startCellPoolAgentScenario(NS, { env: PERMITTED })
const { kube, cluster, wl, kubelets, agentLogTail, registrationLabels, kubeletJoins } = scenario

const infra = reader<Obj>(kube)
const work = reader<Obj>(wl)
const poolRef = (name: string): ResourceRef => ({ apiVersion: CELLS, resource: 'gpucellpools', namespace: NS, name })
const cnsRef = (name: string): ResourceRef => cellNodeSetRef(NS, name)
const podsRef: ResourceRef = { apiVersion: 'v1', resource: 'pods', namespace: WORK_NAMESPACE }
const cellOf = (p: Obj, name: string): Obj => (p.status?.cells ?? []).find((c: Obj) => c.name === name)
const rowOf = (c: Obj, name: string): Obj => (c?.status?.nodes ?? []).find((r: Obj) => r.name === name)
const phases = (p: Obj): string[] => (p.status?.cells ?? []).map((c: Obj) => `${c.name}:${c.phase}`)
const guests = async (): Promise<Obj[]> => listGuests(kube, NS)

// --- Metacontroller's part, played by the driver ---
/** Every cell phase the pool's status showed after a sync pass, in order (repeats collapsed). */
const seen: string[] = []

/** Syncs the pool until a pass writes nothing, recording the phases each pass showed. */
async function sync(pool: string): Promise<void> {
  await scenario.sync(pool, async () => {
    const p = await infra.get(poolRef(pool))
    if (p !== undefined) for (const phase of phases(p)) if (seen[seen.length - 1] !== phase) seen.push(phase)
  })
}

/**
 * Rounds of Metacontroller, then `world` (the test's KubeSwift and kubelets), until `check`
 * holds for the pool.
 */
function until(
  pool: string,
  what: string,
  check: (p: Obj) => boolean,
  options: { seconds?: number; world?: () => Promise<void> } = {}
): Promise<Obj> {
  return roundsUntil(what, {
    round: async () => {
      await sync(pool)
      await options.world?.()
    },
    read: () => infra.must(poolRef(pool)),
    check,
    seconds: options.seconds ?? 120,
    explain: async (p) =>
      `cells ${JSON.stringify(p.status?.cells?.map((c: Obj) => [c.name, c.phase, c.reason, c.message]))}\n` +
      `conditions ${JSON.stringify(p.status?.conditions?.map((c: Obj) => [c.type, c.status, c.reason]))}\n` +
      `CellNodeSet status ${JSON.stringify((await infra.get(cnsRef(pool)))?.status)}\nagent log:\n${agentLogTail()}`
  })
}

/** A pool of the unit fixtures' spec whose Nodes join the workload cluster through `wl-kubeconfig`, labelled, annotated and tainted. */
function pool(name: string, replicas: number, patch: JsonObject = {}): JsonObject {
  return poolManifest(name, NS, {
    ...patch,
    replicas,
    workloadCluster: scenarioWorkloadCluster(name)
  })
}

/** `pool(name, replicas)` whose Nodes also carry `labels`. */
function poolWithLabels(name: string, replicas: number, labels: Record<string, string>): JsonObject {
  const manifest = pool(name, replicas) as Obj
  Object.assign(manifest.spec.workloadCluster.node.labels, labels)
  return manifest
}

t.test("a pool of one: Pending → … → Ready through the agent's rows", async (t) => {
  const name = 'solo'
  const cell = 'solo-0'
  // A restricted label key the admin permits (PERMITTED) passes admission and the sync, and the
  // agent sets it; one it does not permit is still refused at kubectl apply.
  const refused = await cluster.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify(poolWithLabels(name, 1, { 'node-restriction.kubernetes.io/gold': 'true' })),
    allowFail: true
  })
  t.not(refused.code, 0)
  t.match(
    refused.stderr,
    /node-restriction\.kubernetes\.io\/gold is refused: .*a cluster admin may permit the key: chart value controllers\.cellpool\.permittedNodeKeys/,
    'a key the admin did not permit is refused by the webhook'
  )
  await cluster.kubectl(['apply', '-f', '-'], {
    input: JSON.stringify(poolWithLabels(name, 1, { 'node-restriction.kubernetes.io/gpu': 'true' }))
  })
  const reachable = await until(
    name,
    'the agent to observe the pool',
    (p) => condition(p, 'WorkloadClusterReachable')?.status === 'True' && cellOf(p, cell) !== undefined
  )
  const uid = String(reachable.metadata.uid)
  const cns = await infra.must(cnsRef(name))
  t.ok((cns.metadata.finalizers ?? []).includes('cells.kubeswift.io/workload-nodes'), 'the agent serves the CellNodeSet the hook rendered')

  // The guest is created only once the agent has reported the cell's Node absent.
  await eventually(
    'the guest to be created',
    async () => {
      await sync(name)
      return (await guests()).some((g: Obj) => g.metadata.name === cell) ? true : undefined
    },
    60_000
  )
  const absent = rowOf(await infra.must(cnsRef(name)), cell)
  t.same(absent, { name: cell, present: false }, "the agent's row: no Node yet")

  await bootGuests(kube, NS)
  const joining = await until(name, 'Joining', (p) => cellOf(p, cell)?.phase === 'Joining')
  t.equal(cellOf(joining, cell).reason, 'NodeNotRegistered')

  await kubeletJoins(cell)
  const guest = (await guests()).find((g: Obj) => g.metadata.name === cell)
  const awaiting = await until(name, 'AwaitingGPUCapacity', (p) => cellOf(p, cell)?.phase === 'AwaitingGPUCapacity')
  t.equal(cellOf(awaiting, cell).reason, 'TooFewDevices')
  const node = await work.must(nodeRef(cell))
  t.match(
    node.metadata.labels,
    {
      'gpu.pool': name,
      'node-role.kubernetes.io/gpu-cell': '',
      'cells.kubeswift.io/pool': name,
      [POOL_UID_LABEL]: uid,
      'cells.kubeswift.io/cell': cell,
      'cells.kubeswift.io/cell-index': '0',
      [INSTANCE_LABEL]: guest.metadata.uid,
      'node-restriction.kubernetes.io/gpu': 'true'
    },
    "the agent put the pool's labels and the instance on the Node"
  )
  t.notOk(
    'node-restriction.kubernetes.io/gpu' in (await registrationLabels(cell)),
    'the permitted key is no --node-labels of the kubelet (NodeRestriction would refuse it): the agent set it'
  )
  t.equal(node.metadata.annotations['example.com/owner'], 'ml-team')
  // The API server's TaintNodesByCondition adds not-ready at creation (no node controller here
  // removes it); the agent adds its own taint beside it and leaves that one alone.
  t.same(
    node.spec.taints.filter((x: Obj) => x.key === 'gpu'),
    [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }],
    "the agent put the pool's taint on the Node"
  )
  t.not(node.spec.unschedulable, true)

  await kubelets.hamiRegisters(cell)
  const ready = await until(name, 'Ready', (p) => cellOf(p, cell)?.phase === 'Ready' && p.status?.readyCells === 1)
  t.same([condition(ready, 'Ready')?.status, ready.status.replicas], ['True', 1])
  const row = rowOf(await infra.must(cnsRef(name)), cell)
  t.same(withoutRecord(row), presentRow(cell, guest.metadata.uid, uid), 'the row of a live, Ready Node with the device HAMi registered')
  t.match(row.applied, { uid: node.metadata.uid, instance: guest.metadata.uid, cordoned: false }, 'the agent recorded this Node object')
  const order = ['Pending', 'Joining', 'AwaitingGPUCapacity', 'Ready'].map((phase) => seen.indexOf(`${cell}:${phase}`))
  t.ok(
    order.every((i, k) => i >= 0 && (k === 0 || i > (order[k - 1] as number))),
    `phases in order: ${seen.join(' ')}`
  )
})

/**
 * KubeSwift and the kubelets of a pool, as they act on their own: a new guest boots; a running
 * guest's kubelet registers its Node and HAMi its GPU; a guest that is gone stops renewing.
 */
async function playCells(pool: string): Promise<void> {
  await bootGuests(kube, NS)
  const mine = (await guests()).filter((g: Obj) => g.metadata.labels?.['cells.kubeswift.io/pool'] === pool)
  for (const g of mine) {
    const name = String(g.metadata.name)
    if (g.status?.phase === 'Running' && !kubelets.renewing().includes(name) && (await work.get(nodeRef(name))) === undefined) {
      await kubeletJoins(name)
      await kubelets.hamiRegisters(name)
    }
  }
  for (const name of kubelets.renewing())
    if (name.startsWith(`${pool}-`) && !mine.some((g: Obj) => g.metadata.name === name)) kubelets.stop(name)
}

t.test(
  'an autoscaling pool: a pending GPU Pod scales it to 2; without demand the idle cell drains, its guest goes and its Node is swept',
  async (t) => {
    const name = 'auto'
    await cluster.kubectl(['apply', '-f', '-'], { input: JSON.stringify(pool(name, 1, AUTOSCALING_ONE_TO_TWO)) })
    const world = (): Promise<void> => playCells(name)
    const one = await until(name, 'one Ready cell', (p) => p.status?.readyCells === 1 && cellOf(p, 'auto-0')?.phase === 'Ready', { world })
    t.same(one.status.cellDeviceShape, { memoryMiB: 81920, cores: 100 }, 'the shape of the device HAMi registered')
    t.equal(condition(one, 'ScalingActive')?.reason, 'AtMinReplicas')

    // auto-0 serves a GPU Pod (HAMi has allocated it a share): it is not idle.
    await runAllocatedPod(wl, 'trainer', 'auto-0', { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '20000' })
    // A GPU Pod the scheduler could not place, which fits the pool's Nodes (their label, their taint).
    await createUnschedulablePod(wl, 'wants-gpu', {
      nodeSelector: { 'gpu.pool': name },
      tolerations: [{ key: 'gpu', operator: 'Equal', value: 'true', effect: 'NoSchedule' }],
      limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '8192', 'nvidia.com/gpucores': '30' }
    })

    const up = await until(name, 'a scale-up', (p) => p.status?.desiredReplicas === 2, { world })
    t.match(condition(up, 'ScalingActive')?.reason, /^(ScaledUp|AtMaxReplicas)$/)
    t.type(up.status.lastScaleUpTime, 'string')
    t.match(up.status.demand, { pendingPods: 1, satisfiable: 1 }, 'the demand the agent read')
    const cns = await infra.must(cnsRef(name))
    t.same(cns.status.demand, { read: true, pendingPods: 1, shapes: [{ devices: 1, memoryMiB: 8192, cores: 30, pods: 1 }] })
    t.match(rowOf(cns, 'auto-0').allocations, { read: true, pods: 1, inFlight: false }, "the agent counts auto-0's allocation")

    const two = await until(name, 'two Ready cells', (p) => p.status?.readyCells === 2, { world })
    t.same(phases(two), ['auto-0:Ready', 'auto-1:Ready'])
    t.same(two.spec.replicas, 1, 'spec.replicas is never written')
    const guest1 = (await guests()).find((g: Obj) => g.metadata.name === 'auto-1')
    t.equal((await work.must(nodeRef('auto-1'))).metadata.labels[INSTANCE_LABEL], guest1.metadata.uid)

    // The demand is gone (the Pod was deleted): auto-1, idle, drains; auto-0 holds an allocation.
    await wl.delete({ ...podsRef, name: 'wants-gpu' })
    const down = await until(name, 'a scale-down', (p) => p.status?.drainingCells === 1, { world })
    t.same(phases(down), ['auto-0:Ready', 'auto-1:Draining'], 'the idle cell drains, not the one with an allocation')
    t.equal(down.status.desiredReplicas, 1)
    t.same(
      (await infra.must(cnsRef(name))).spec.nodes.map((n: Obj) => [n.name, n.cordon]),
      [
        ['auto-0', false],
        ['auto-1', true]
      ]
    )
    const cordoned = await eventually(
      'the agent to cordon auto-1',
      async () => {
        const node = await work.must(nodeRef('auto-1'))
        return node.spec.unschedulable === true ? node : undefined
      },
      60_000
    )
    t.equal(cordoned.metadata.annotations?.['cells.kubeswift.io/managed'], undefined, 'nothing recorded on the Node')
    t.equal((await appliedOf(infra.must, NS, name, 'auto-1'))?.cordoned, true, "recorded as the agent's cordon")
    t.not((await work.must(nodeRef('auto-0'))).spec.unschedulable, true, 'auto-0 stays schedulable')

    const gone = await until(name, 'the drained cell removed', (p) => (p.status?.cells ?? []).length === 1, { world, seconds: 180 })
    t.same(phases(gone), ['auto-0:Ready'])
    t.same(
      (await guests()).filter((g: Obj) => g.metadata.labels?.['cells.kubeswift.io/pool'] === name).map((g: Obj) => g.metadata.name),
      ['auto-0']
    )
    t.ok((await work.get({ ...podsRef, name: 'trainer' })) !== undefined, 'the GPU Pod on auto-0 is never touched')

    // The VM is gone, its kubelet stopped renewing: the agent sweeps the Node once it is not live.
    const swept = await eventually(
      "auto-1's Node swept",
      async () => {
        await sync(name)
        await world()
        const c = await infra.must(cnsRef(name))
        const record = (c.status?.swept ?? []).find((s: Obj) => s.name === 'auto-1')
        return record !== undefined && (await work.get(nodeRef('auto-1'))) === undefined ? { c, record } : undefined
      },
      120_000
    )
    t.match(swept.record, { name: 'auto-1', instance: guest1.metadata.uid, reason: 'Orphan' })
    t.same(
      swept.c.spec.nodes.map((n: Obj) => n.name),
      ['auto-0']
    )
    t.ok(await work.get(nodeRef('auto-0')), 'the live Node stays')
    const settled = await until(
      name,
      'the pool settled at one',
      (p) => p.status?.replicas === 1 && condition(p, 'Ready')?.status === 'True',
      { world }
    )
    t.same([settled.status.readyCells, settled.status.desiredReplicas], [1, 1])
  }
)
