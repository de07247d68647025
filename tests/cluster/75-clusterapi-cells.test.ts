/**
 * Cluster API cells end to end (docs/cellpool.md, "Cluster API cells"): a GPUCellPool with
 * `provisioner: ClusterAPI` against Cluster API's real core manager (v1.14, built from its
 * module), with stand-ins only for the providers not built here (support/clusterapi-providers.ts:
 * KubeSwift's InfraMachine boots a kubelet in the workload cluster; a cloud-init bootstrap
 * provider; the workload cluster's control plane), the hook service and the workload agent as
 * processes, and the driver playing Metacontroller with the Machine child type. The test plays
 * only HAMi's device plugin (the GPU registration annotation) and the GPU Pods.
 *
 * Covered: cells Ready from a bootstrap config template (the kubelet registers with the
 * template's labels only, and the agent adopts the Node by its providerID and writes the pool's
 * labels, annotations and taints); a scale-down that waits for a GPU Pod by the pool's drain and
 * then lets the Machine go without Cluster API draining anything; a Machine deleted by hand, which
 * evicts nothing, waits for the pool's drain and is rebuilt; a cell from the pool's own rendered
 * data Secret; pool deletion. Phase budgets, failures and autoscaling of Cluster API cells are
 * in 76-clusterapi-failures.test.ts, which shares this file's setup (support/clusterapi-scenario.ts).
 * Everything is polled for, nothing is timed.
 */
import t from 'tap'
import { nodeRef, runAllocatedPod, WORK_NAMESPACE } from './support/agent.ts'
import { appliedOf } from './support/cellpool.ts'
import { capiRefs } from './support/clusterapi.ts'
import { KINDS, standInRef } from './support/clusterapi-providers.ts'
import { startClusterApiCellsWorld } from './support/clusterapi-cells.ts'
import {
  cellOf,
  clusterApiScenario,
  machineRows,
  owners,
  PRE_DRAIN,
  PRE_TERMINATE,
  TEMPLATE_JOIN,
  TEMPLATE_REF
} from './support/clusterapi-scenario.ts'
import { condition } from './support/reads.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

const NS = 'capi'
const CLUSTER = 'gpu'

const w = await startClusterApiCellsWorld(NS, CLUSTER)
const { kube, wl } = w
const { infra, work, list, poolRef, cellsRef, machine, pool, until, drainedByClusterApi, createJoinTemplate } = clusterApiScenario(
  w,
  NS,
  CLUSTER
)
await createJoinTemplate()

await kube.create(
  cellsRef('gpucellpools'),
  pool('cells', 2, { clusterAPI: { clusterName: CLUSTER, bootstrapConfigTemplateRef: TEMPLATE_REF } }, { bootstrap: null })
)

t.test(
  'two cells Ready from a bootstrap config template: Machines of the pool, objects of the agent, Nodes with the pool labels',
  async (t) => {
    const ready = await until('cells', 'two Ready cells', (p) => p?.status?.readyCells === 2)
    const uid = String(ready.metadata.uid)
    const m = await machine('cells-0')
    t.same(
      owners(m),
      [{ kind: 'GPUCellPool', name: 'cells', controller: true }],
      "the pool is the Machine's controller, and its only owner"
    )
    t.match(m.metadata.annotations, { [PRE_DRAIN]: 'gpuhooks', [PRE_TERMINATE]: 'gpuhooks' }, 'both deletion hooks from creation')
    t.equal(m.metadata.labels['cluster.x-k8s.io/cluster-name'], CLUSTER, 'Cluster API labelled it')
    t.equal(m.spec.providerID, 'kubeswift://capi/cells-0')
    t.equal(m.spec.bootstrap.dataSecretName, 'cells-0', "Cluster API wrote the config's data Secret into the Machine, and it stayed")
    t.equal(m.status.nodeRef.name, 'cells-0')
    for (const ref of [standInRef(KINDS.machine, NS, 'cells-0'), standInRef(KINDS.bootstrapConfig, NS, 'cells-0')]) {
      const made = await infra.must(ref)
      t.same(
        owners(made),
        [{ kind: 'Machine', name: 'cells-0', controller: true }],
        `${made.kind}: made by the agent, taken over by Cluster API`
      )
    }
    const config = await infra.must(standInRef(KINDS.bootstrapConfig, NS, 'cells-0'))
    t.same(config.spec, { userData: TEMPLATE_JOIN }, "the config's spec is the template's")
    const node = await work.must(nodeRef('cells-0'))
    t.match(
      node.metadata.labels,
      {
        gpu: 'on',
        'gpu.pool': 'cells',
        'node-role.kubernetes.io/gpu-cell': '',
        'cells.kubeswift.io/pool': 'cells',
        'cells.kubeswift.io/pool-uid': uid,
        'cells.kubeswift.io/cell': 'cells-0',
        'cells.kubeswift.io/instance': m.metadata.uid
      },
      "registered with the template's label; the agent wrote the pool's, the Machine's uid as the instance"
    )
    t.equal(node.metadata.annotations['example.com/owner'], 'ml-team')
    t.same(
      node.spec.taints.filter((x: Loose) => x.key === 'gpu'),
      [{ key: 'gpu', value: 'true', effect: 'NoSchedule' }]
    )
    const cinfra = await infra.must(cellsRef('cellinfrastructures', 'cells'))
    t.same(machineRows(cinfra), [
      ['cells-0', true, true, false],
      ['cells-1', true, true, false]
    ])
  }
)

t.test('scale-down: a GPU Pod holds the drain; then the Machine goes, released, and Cluster API drains nothing', async (t) => {
  await runAllocatedPod(wl, 'trainer', 'cells-1', { 'nvidia.com/gpu': '1' })
  await kube.patch(poolRef('cells'), { spec: { replicas: 1 } }, 'merge')
  await until('cells', 'cells-1 Draining', (p) => cellOf(p, 'cells-1')?.phase === 'Draining')
  await until('cells', 'the agent to cordon cells-1', () => true).then(() =>
    w.until('the Node cordoned', async () => {
      const node = await work.must(nodeRef('cells-1'))
      return node.spec.unschedulable === true ? node : undefined
    })
  )
  t.equal((await appliedOf(infra.must, NS, 'cells', 'cells-1'))?.cordoned, true, "the agent's cordon, in its record")
  const held = await until('cells', 'the row to count the GPU Pod', (p) => /allocation|Pod/i.test(String(cellOf(p, 'cells-1')?.message)))
  t.equal(cellOf(held, 'cells-1').phase, 'Draining', 'the GPU Pod holds the drain')
  t.equal((await machine('cells-1')).metadata.deletionTimestamp, undefined, 'the Machine is not deleted while the Pod runs')
  t.equal(
    (await work.must({ apiVersion: 'v1', resource: 'pods', namespace: WORK_NAMESPACE, name: 'trainer' })).metadata.deletionTimestamp,
    undefined
  )

  // The job ends.
  await wl.delete({ apiVersion: 'v1', resource: 'pods', namespace: WORK_NAMESPACE, name: 'trainer' }, { gracePeriodSeconds: 0 })
  const one = await until('cells', 'cells-1 removed', (p) => (p?.status?.cells ?? []).length === 1 && (p?.status?.readyCells ?? 0) === 1)
  t.same(
    one.status.cells.map((c: Loose) => c.name),
    ['cells-0']
  )
  await w.until('Machine cells-1 gone', async () => ((await machine('cells-1')) === undefined ? true : undefined))
  t.equal(await infra.get(standInRef(KINDS.machine, NS, 'cells-1')), undefined, 'Cluster API deleted the KubeSwiftMachine')
  t.equal(await infra.get(standInRef(KINDS.bootstrapConfig, NS, 'cells-1')), undefined, 'and the bootstrap config')
  await w.until('the Node cells-1 gone', async () => ((await work.get(nodeRef('cells-1'))) === undefined ? true : undefined))
  t.same(drainedByClusterApi('cells-1'), [], 'Cluster API never drained the Node')
  t.ok(await work.get(nodeRef('cells-0')), 'cells-0 serves on')
})

t.test('a Machine deleted by hand evicts nothing, waits for the pool drain, and its cell is rebuilt', async (t) => {
  const before = await machine('cells-0')
  await runAllocatedPod(wl, 'trainer-2', 'cells-0', { 'nvidia.com/gpu': '1' })
  await kube.delete(capiRefs.machine(NS, 'cells-0'))
  await w.until('Cluster API waiting for the pre-drain hook', async () => {
    const m = await machine('cells-0')
    return condition(m, 'Deleting')?.reason === 'WaitingForPreDrainHook' ? m : undefined
  })
  const draining = await until('cells', 'cells-0 Draining', (p) => cellOf(p, 'cells-0')?.phase === 'Draining')
  t.ok(draining, 'the pool drains the cell whose Machine someone deleted')
  await w.until('the agent to cordon cells-0', async () =>
    (await work.must(nodeRef('cells-0'))).spec.unschedulable === true ? true : undefined
  )
  await until('cells', 'a few rounds with the Pod still running', () => true)
  const pod = await work.must({ apiVersion: 'v1', resource: 'pods', namespace: WORK_NAMESPACE, name: 'trainer-2' })
  t.equal(pod.metadata.deletionTimestamp, undefined, 'the GPU Pod is not evicted')
  t.ok((await machine('cells-0'))?.metadata.annotations?.[PRE_DRAIN], 'the hook stays while the Pod runs')
  t.same(drainedByClusterApi('cells-0'), [], 'Cluster API has not drained')

  await wl.delete({ apiVersion: 'v1', resource: 'pods', namespace: WORK_NAMESPACE, name: 'trainer-2' }, { gracePeriodSeconds: 0 })
  const rebuilt = await until(
    'cells',
    'cells-0 rebuilt and Ready',
    (p) => cellOf(p, 'cells-0')?.phase === 'Ready' && p.status.readyCells === 1 && cellOf(p, 'cells-0')?.guestUID !== before.metadata.uid,
    360
  )
  const after = await machine('cells-0')
  t.not(after.metadata.uid, before.metadata.uid, 'a new Machine')
  t.match(after.metadata.annotations, { [PRE_DRAIN]: 'gpuhooks', [PRE_TERMINATE]: 'gpuhooks' })
  t.equal(cellOf(rebuilt, 'cells-0').phase, 'Ready')
  t.same(drainedByClusterApi('cells-0'), [], 'Cluster API never drained the old Machine either')
})

t.test('scale-up: a new Machine at the free index, with its hooks, and its objects made by the agent', async (t) => {
  await kube.patch(poolRef('cells'), { spec: { replicas: 2 } }, 'merge')
  const two = await until(
    'cells',
    'two Ready cells again',
    (p) => p?.status?.readyCells === 2 && cellOf(p, 'cells-1')?.phase === 'Ready',
    360
  )
  t.same(
    two.status.cells.map((c: Loose) => c.name),
    ['cells-0', 'cells-1']
  )
  const m = await machine('cells-1')
  t.match(m.metadata.annotations, { [PRE_DRAIN]: 'gpuhooks', [PRE_TERMINATE]: 'gpuhooks' })
  t.same(owners(await infra.must(standInRef(KINDS.machine, NS, 'cells-1'))), [{ kind: 'Machine', name: 'cells-1', controller: true }])
  const node = await work.must(nodeRef('cells-1'))
  t.equal(node.metadata.labels['cells.kubeswift.io/instance'], m.metadata.uid, "the new Node carries the new Machine's uid")
})

t.test('rolling update on a template change: each cell drained by the pool and rebuilt, one at a time', async (t) => {
  const before = new Map<string, string>()
  for (const name of ['cells-0', 'cells-1']) before.set(name, String((await machine(name)).metadata.uid))
  const oldHash = String(cellOf(await infra.get(poolRef('cells')), 'cells-0')?.templateHash)
  await kube.patch(
    poolRef('cells'),
    { spec: { updatePolicy: { type: 'RollingUpdate' }, cell: { guestTemplate: { imageRef: { name: 'noble-2' } } } } },
    'merge'
  )
  let most = 0
  const updated = await until(
    'cells',
    'both cells rebuilt from the new template',
    (p) => {
      const replacing = (p?.status?.cells ?? []).filter((c: Loose) => c.phase === 'Draining' || c.phase === 'Deleting').length
      most = Math.max(most, replacing)
      return condition(p, 'Updated')?.status === 'True' && p.status.readyCells === 2
    },
    720
  )
  t.equal(most, 1, 'one cell at a time')
  for (const name of ['cells-0', 'cells-1']) {
    const m = await machine(name)
    t.not(String(m.metadata.uid), before.get(name), `${name}: a new Machine`)
    t.not(cellOf(updated, name).templateHash, oldHash, `${name}: built from the new template`)
    const ksm = await infra.must(standInRef(KINDS.machine, NS, name))
    t.equal(ksm.spec.backend.swiftGuest.imageRef.name, 'noble-2', `${name}: its KubeSwiftMachine has the new image`)
    t.same(drainedByClusterApi(name), [], `${name}: Cluster API drained nothing`)
  }
})

t.test("a cell from the pool's own data Secret: the join template's labels at registration", async (t) => {
  await kube.create(cellsRef('gpucellpools'), pool('solo', 1, { clusterAPI: { clusterName: CLUSTER } }, { deletion: { policy: 'Force' } }))
  const ready = await until('solo', 'solo-0 Ready', (p) => p?.status?.readyCells === 1)
  const m = await machine('solo-0')
  t.same(m.spec.bootstrap, { dataSecretName: 'solo-0-bootstrap' }, 'the Machine names the rendered Secret')
  t.equal(await infra.get(standInRef(KINDS.bootstrapConfig, NS, 'solo-0')), undefined, 'no bootstrap config is made')
  const node = await work.must(nodeRef('solo-0'))
  t.equal(node.metadata.labels['cells.kubeswift.io/pool-uid'], ready.metadata.uid, 'the pool-uid label came with the registration')
})

t.test('Force deletion: a cell whose GPU Pod still runs goes at once, released, evicting nothing', async (t) => {
  await runAllocatedPod(wl, 'trainer-3', 'solo-0', { 'nvidia.com/gpu': '1' })
  await until('solo', 'the row to count the GPU Pod', (p) => (cellOf(p, 'solo-0')?.phase ?? '') === 'Ready' && p.status.readyCells === 1)
  await w.until('the GPU Pod counted in the CellNodeSet row', async () => {
    const cns = await infra.get(cellsRef('cellnodesets', 'solo'))
    const row = (cns?.status?.nodes ?? []).find((n: Loose) => n.name === 'solo-0')
    return row?.allocations?.pods === 1 ? true : undefined
  })
  await kube.delete(poolRef('solo'))
  // Drain would wait for the Pod up to drainTimeout (10m); Force does not.
  await until('solo', 'pool solo gone', (p) => p === undefined, 300)
  t.equal(await machine('solo-0'), undefined, 'no Machine left')
  t.equal(await infra.get(standInRef(KINDS.machine, NS, 'solo-0')), undefined, 'no KubeSwiftMachine left')
  t.same(drainedByClusterApi('solo-0'), [], 'Cluster API drained nothing')
})

t.test('pool deletion (Drain): every Machine released and gone, then the pool children, then the pool', async (t) => {
  await kube.delete(poolRef('cells'))
  await until('cells', 'pool cells gone', (p) => p === undefined, 300)
  t.same(await list(kube, capiRefs.machine(NS)), [], 'no Machine left')
  t.same(await list(kube, standInRef(KINDS.machine, NS)), [], 'no KubeSwiftMachine left')
  t.same(await list(kube, cellsRef('cellinfrastructures')), [])
  t.same(await list(kube, cellsRef('cellnodesets')), [])
  for (const cell of ['cells-0', 'cells-1']) t.same(drainedByClusterApi(cell), [], `Cluster API drained nothing of ${cell}`)
})
