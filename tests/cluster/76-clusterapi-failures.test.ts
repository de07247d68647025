/**
 * Cluster API cells that fail and that autoscale (docs/cellpool.md, "Phases", "Cluster API cells"
 * and "Autoscaling"), in the world of 75-clusterapi-cells.test.ts: Cluster API's real core
 * manager, the stand-in providers, the hook service and the workload agent as processes, the
 * driver playing Metacontroller with the Machine child type. The test plays only HAMi's device
 * plugin and the GPU Pods, and tells KubeSwift's stand-in provider to hold a VM (no host has a
 * GPU free for it) and to let it go.
 *
 * Covered: a pool whose Machine the provider does not provision, under a short
 * `bootstrap.readyTimeout`: the cell turns Failed (`ReadyTimeout` in `GuestProvisioning`), its
 * Machine, which never had a Node, is released by the agent and deleted without Cluster API
 * draining anything and without a cordon, and its index is rebuilt once the failure backoff has
 * passed; once the provider lets the VM go, the rebuilt cell becomes Ready, its failure count
 * kept, and no version of the rebuilt Machine, which has the name and template of the one before,
 * ever lacks a deletion hook (a release names the uid of its Machine). An autoscaling pool: a pending GPU Pod adds a Machine that becomes a Ready cell; once the
 * Pod is gone, the idle cell drains by the pool's drain, its Machine is released and goes,
 * Cluster API drains nothing, and its Node is gone. Every version of the Machines, the
 * CellInfrastructures and the CellNodeSets is recorded by a watch, so brief states (a release)
 * and states that never occurred (a Node reference, a cordon) are checked exactly. Everything is
 * polled for, nothing is timed.
 */
import t from 'tap'
import { createUnschedulablePod, nodeRef, runAllocatedPod, WORK_NAMESPACE } from './support/agent.ts'
import { appliedOf, AUTOSCALING_ONE_TO_TWO } from './support/cellpool.ts'
import { capiRefs } from './support/clusterapi.ts'
import { KINDS, standInRef } from './support/clusterapi-providers.ts'
import { startClusterApiCellsWorld } from './support/clusterapi-cells.ts'
import {
  cellOf,
  clusterApiScenario,
  EXCLUDE_NODE_DRAINING,
  machineRows,
  PRE_DRAIN,
  PRE_TERMINATE,
  TEMPLATE_REF
} from './support/clusterapi-scenario.ts'
import { condition } from './support/reads.ts'
import { recordHistory, type History } from './support/watch.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

const NS = 'capi'
const CLUSTER = 'gpu'
/** The budget of each phase up to Joining in the failing pool: short, yet far above what a phase takes here. */
const BUDGET_SECONDS = 30
/** The first failure backoff (docs/cellpool.md, "Phases"). */
const BACKOFF_SECONDS = 30

const w = await startClusterApiCellsWorld(NS, CLUSTER)
const { kube, wl } = w
const { infra, work, cellsRef, machine, pool, until, drainedByClusterApi, createJoinTemplate } = clusterApiScenario(w, NS, CLUSTER)
await createJoinTemplate()
const machines = await recordHistory(kube, capiRefs.machine(NS))
const infrastructures = await recordHistory(kube, cellsRef('cellinfrastructures'))
const nodeSets = await recordHistory(kube, cellsRef('cellnodesets'))
t.teardown(() => {
  for (const history of [machines, infrastructures, nodeSets]) history.stop()
})

const seconds = (stamp: string): number => Date.parse(stamp) / 1000
const podRef = (name: string) => ({ apiVersion: 'v1', resource: 'pods', namespace: WORK_NAMESPACE, name })
/** Every recorded version of the Machine of `uid`, once its deletion has been recorded. */
const machineVersions = (uid: string): Promise<Loose[]> =>
  w.until(`the deletion of Machine ${uid} recorded`, async () => {
    const mine = machines.versions().filter((v) => v.object.metadata.uid === uid)
    return mine.some((v) => v.type === 'DELETED') ? mine.map((v) => v.object) : undefined
  })
/** The entries of Machine `name` in every recorded version of a pool's child (`spec.nodes` or `spec.machines`). */
const entriesOf = (history: History, list: 'nodes' | 'machines', name: string): Loose[] =>
  history.versions().flatMap((v) => (v.object.spec?.[list] ?? []).filter((e: Loose) => e.name === name))
/** The version in which the agent let the Machine go: Cluster API's drain skipped, the pool's hooks gone. */
const released = (m: Loose): boolean =>
  m.metadata.annotations?.[EXCLUDE_NODE_DRAINING] === 'true' &&
  m.metadata.annotations?.[PRE_DRAIN] === undefined &&
  m.metadata.annotations?.[PRE_TERMINATE] === undefined

t.test(
  'a Machine the provider never provisions: Failed by bootstrap.readyTimeout, released and deleted undrained, rebuilt after the backoff, Ready once let go',
  async (t) => {
    const cell = 'flaky-0'
    w.providers.hold(cell)
    await kube.create(
      cellsRef('gpucellpools'),
      pool(
        'flaky',
        1,
        { clusterAPI: { clusterName: CLUSTER, bootstrapConfigTemplateRef: TEMPLATE_REF } },
        { bootstrap: { joinSecretRef: null, readyTimeout: `${BUDGET_SECONDS}s` } }
      )
    )
    const waiting = await until('flaky', `${cell} waiting for its VM`, (p) => cellOf(p, cell)?.phase === 'GuestProvisioning')
    const first = await machine(cell)
    const uid = String(first.metadata.uid)
    t.match(first.metadata.annotations, { [PRE_DRAIN]: 'gpuhooks', [PRE_TERMINATE]: 'gpuhooks' }, 'both deletion hooks from creation')
    t.equal(first.status?.nodeRef, undefined, 'no Node')
    await w.until('the agent to report the objects it made', async () => {
      const rows = machineRows(await infra.get(cellsRef('cellinfrastructures', 'flaky')))
      return JSON.stringify(rows) === JSON.stringify([[cell, true, true, false]]) ? rows : undefined
    })
    const ksm = await infra.must(standInRef(KINDS.machine, NS, cell))
    t.equal(ksm.status?.initialization?.provisioned, undefined, 'the provider holds the VM: not provisioned')
    t.equal(ksm.spec.providerID, undefined)

    const failed = await until('flaky', `${cell} Failed`, (p) => cellOf(p, cell)?.phase === 'Failed', 180)
    const row = cellOf(failed, cell)
    t.equal(row.reason, 'ReadyTimeout')
    t.match(row.failure, {
      reason: 'ReadyTimeout',
      phase: 'GuestProvisioning',
      since: String,
      message: new RegExp(`^The cell stayed GuestProvisioning longer than bootstrap\\.readyTimeout \\(${BUDGET_SECONDS}s\\)`)
    })
    t.ok(String(row.message).startsWith(row.failure.message), `the row says the failure, then what is done: ${String(row.message)}`)
    t.equal(row.failureCount, 1)
    t.not(row.readyOnce, true)
    t.equal(failed.status.failedCells, 1)
    const outlived = seconds(row.failure.since) - seconds(cellOf(waiting, cell).lastTransitionTime)
    t.ok(outlived >= BUDGET_SECONDS, `failed ${outlived}s after it began GuestProvisioning, past its budget`)

    // The Failed cell goes without a drain: the agent releases its Machine and Cluster API deletes it.
    const history = await machineVersions(uid)
    t.same(
      history.filter((m) => m.status?.nodeRef !== undefined),
      [],
      'the Machine never had a Node'
    )
    t.ok(
      history.some((m) => m.metadata.deletionTimestamp !== undefined && released(m)),
      'deleted and released by the agent'
    )
    const releases = entriesOf(infrastructures, 'machines', cell).filter((e) => e.release === true)
    t.ok(releases.length > 0, 'the CellInfrastructure entry asked the agent to release it')
    t.same([...new Set(releases.map((e) => e.machineUID))], [uid], 'every release named this Machine')
    t.same(
      entriesOf(nodeSets, 'nodes', cell).filter((e) => e.cordon === true),
      [],
      'never cordoned: a Failed cell is not drained'
    )
    t.same(drainedByClusterApi(cell), [], 'Cluster API drained nothing')
    const leftover = await infra.get(standInRef(KINDS.machine, NS, cell))
    t.ok(
      leftover === undefined || !leftover.metadata.ownerReferences?.some((r: Loose) => r.uid === uid),
      "Cluster API deleted the Machine's KubeSwiftMachine"
    )
    t.equal(await work.get(nodeRef(cell)), undefined, 'no Node was ever made')

    // The index is rebuilt once the backoff has passed, and waits for its VM again.
    const rebuilt = await w.until(
      `${cell} rebuilt`,
      async () => {
        await w.sync('flaky')
        const m = await machine(cell)
        return m !== undefined && m.metadata.uid !== uid ? m : undefined
      },
      180_000
    )
    const after = seconds(rebuilt.metadata.creationTimestamp) - seconds(row.failure.since)
    t.ok(after >= BACKOFF_SECONDS, `the new Machine was made ${after}s after the failure, past the ${BACKOFF_SECONDS}s backoff`)
    t.match(rebuilt.metadata.annotations, { [PRE_DRAIN]: 'gpuhooks', [PRE_TERMINATE]: 'gpuhooks' })
    const again = await until(
      'flaky',
      `the rebuilt ${cell} waiting for its VM`,
      (p) => cellOf(p, cell)?.phase === 'GuestProvisioning' && cellOf(p, cell)?.guestUID === rebuilt.metadata.uid
    )
    t.equal(cellOf(again, cell).failureCount, 1, 'the failure count survives the rebuild')

    w.providers.letGo(cell)
    const ready = await until(
      'flaky',
      `the rebuilt ${cell} Ready`,
      (p) => p?.status?.readyCells === 1 && cellOf(p, cell)?.phase === 'Ready'
    )
    const readyRow = cellOf(ready, cell)
    t.equal(readyRow.guestUID, rebuilt.metadata.uid)
    t.equal(readyRow.failureCount, 1)
    t.equal(readyRow.failure, undefined, 'a Ready cell carries no failure')
    t.equal(ready.status.failedCells, 0)
    const node = await work.must(nodeRef(cell))
    t.equal(node.metadata.labels['cells.kubeswift.io/instance'], rebuilt.metadata.uid, "the Node is the new Machine's")
    t.same(machineRows(await infra.must(cellsRef('cellinfrastructures', 'flaky'))), [[cell, true, true, false]])
    t.equal((await machine(cell)).status.nodeRef.name, cell)
    const unhooked = machines
      .versions()
      .filter((v) => v.object.metadata.uid === rebuilt.metadata.uid)
      .filter(
        (v) => v.object.metadata.annotations?.[PRE_DRAIN] === undefined || v.object.metadata.annotations?.[PRE_TERMINATE] === undefined
      )
    t.same(unhooked, [], 'no version of the rebuilt Machine lacks a deletion hook: the release of the one before never reached it')
  }
)

t.test(
  'an autoscaling pool: a pending GPU Pod adds a Machine that becomes Ready; without demand the idle cell drains, its Machine released and gone, Cluster API draining nothing, its Node gone',
  async (t) => {
    await kube.create(cellsRef('gpucellpools'), pool('auto', 1, {}, AUTOSCALING_ONE_TO_TWO))
    const one = await until('auto', 'one Ready cell', (p) => p?.status?.readyCells === 1 && cellOf(p, 'auto-0')?.phase === 'Ready')
    t.same(one.status.cellDeviceShape, { memoryMiB: 81920, cores: 100 }, 'the shape of the device HAMi registered')
    t.equal(condition(one, 'ScalingActive')?.reason, 'AtMinReplicas')

    // auto-0 serves a GPU Pod: it is not idle. A GPU Pod the scheduler could not place fits the pool's Nodes.
    await runAllocatedPod(wl, 'trainer', 'auto-0', { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '20000' })
    await createUnschedulablePod(wl, 'wants-gpu', {
      nodeSelector: { 'gpu.pool': 'auto' },
      tolerations: [{ key: 'gpu', operator: 'Equal', value: 'true', effect: 'NoSchedule' }],
      limits: { 'nvidia.com/gpu': '1', 'nvidia.com/gpumem': '8192', 'nvidia.com/gpucores': '30' }
    })
    const up = await until('auto', 'a scale-up', (p) => p?.status?.desiredReplicas === 2)
    t.match(condition(up, 'ScalingActive')?.reason, /^(ScaledUp|AtMaxReplicas)$/)
    t.match(up.status.demand, { pendingPods: 1, satisfiable: 1 }, 'the demand the agent read')

    const two = await until('auto', 'two Ready cells', (p) => p?.status?.readyCells === 2)
    t.same(
      two.status.cells.map((c: Loose) => `${c.name}:${c.phase}`),
      ['auto-0:Ready', 'auto-1:Ready']
    )
    t.equal(two.spec.replicas, 1, 'spec.replicas is never written')
    const added = await machine('auto-1')
    t.match(added.metadata.annotations, { [PRE_DRAIN]: 'gpuhooks', [PRE_TERMINATE]: 'gpuhooks' })
    t.equal(added.spec.bootstrap.dataSecretName, 'auto-1-bootstrap', "the Machine names the pool's rendered Secret")
    t.equal((await work.must(nodeRef('auto-1'))).metadata.labels['cells.kubeswift.io/instance'], added.metadata.uid)

    // The demand is gone: auto-1, idle, drains; auto-0 holds an allocation.
    await wl.delete(podRef('wants-gpu'))
    const down = await until('auto', 'a scale-down', (p) => p?.status?.drainingCells === 1)
    t.same(
      down.status.cells.map((c: Loose) => `${c.name}:${c.phase}`),
      ['auto-0:Ready', 'auto-1:Draining'],
      'the idle cell drains, not the one with an allocation'
    )
    t.equal(down.status.desiredReplicas, 1)
    await w.until('the agent to cordon auto-1', async () => {
      const node = await work.must(nodeRef('auto-1'))
      return node.spec.unschedulable === true ? node : undefined
    })
    t.equal((await appliedOf(infra.must, NS, 'auto', 'auto-1'))?.cordoned, true, "the agent's cordon, in its record")
    t.not((await work.must(nodeRef('auto-0'))).spec.unschedulable, true, 'auto-0 stays schedulable')

    const gone = await until('auto', 'the drained cell removed', (p) => (p?.status?.cells ?? []).length === 1)
    t.same(
      gone.status.cells.map((c: Loose) => c.name),
      ['auto-0']
    )
    const history = await machineVersions(String(added.metadata.uid))
    t.ok(
      history.some((m) => m.metadata.deletionTimestamp !== undefined && released(m)),
      'deleted and released by the agent'
    )
    t.ok(
      entriesOf(infrastructures, 'machines', 'auto-1').some((e) => e.release === true),
      'the CellInfrastructure entry asked the agent to release it'
    )
    t.equal(await infra.get(standInRef(KINDS.machine, NS, 'auto-1')), undefined, 'Cluster API deleted the KubeSwiftMachine')
    await w.until('the Node auto-1 gone', async () => ((await work.get(nodeRef('auto-1'))) === undefined ? true : undefined))
    t.same(drainedByClusterApi('auto-1'), [], 'Cluster API never drained the Node')
    t.ok(await work.get(podRef('trainer')), 'the GPU Pod on auto-0 is never touched')
    t.ok(await work.get(nodeRef('auto-0')), 'auto-0 serves on')

    const settled = await until(
      'auto',
      'the pool settled at one',
      (p) => p?.status?.replicas === 1 && condition(p, 'Ready')?.status === 'True'
    )
    t.same([settled.status.readyCells, settled.status.desiredReplicas], [1, 1])
  }
)
