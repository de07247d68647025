/**
 * A failure is stored as data in the cell's status row (`failure`), and the row's message is
 * rendered from it each sync: what happens to a Failed cell is appended to the failure's own
 * sentence, never parsed back out of an earlier message. Failures are counted per index, through
 * a rebuild.
 */
import t from 'tap'
import type { CellNodeStatus } from '../../hooks/api/cellnodeset.ts'
import { cellPhase } from '../../hooks/cellpool/cells/phases.ts'
import { planScaling } from '../../hooks/cellpool/plan/scaling.ts'
import { cellStatusRow, statusRow } from '../../hooks/cellpool/answer/status.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { sync } from '../../hooks/cellpool/hooks.ts'
import { T0 as NOW, T0_STAMP as NOW_STAMP, ago, OBSERVED, PoolWorld, poolSpec, UNOBSERVED } from './fixtures/cellpool.ts'
import type { Cell, PhaseConfig, PreviousCell } from '../../hooks/cellpool/model/cell.ts'

const CONFIG: PhaseConfig = {
  bootstrapReadyTimeoutSeconds: 900,
  capacityReadyTimeoutSeconds: 300,
  expectedDevices: 1,
  nodeIPFrom: undefined
}
const JOINING: PreviousCell = {
  phase: 'Joining',
  reason: 'NodeNotRegistered',
  message: '',
  lastTransitionTime: ago(901),
  readyOnce: false,
  failureCount: 0,
  guestUID: 'g1',
  templateHash: 'h'
}
const guest = {
  name: 'p-0',
  uid: 'g1',
  phase: 'Running',
  devices: ['0000:3b:00.0'],
  hostNode: 'host-1',
  interfaces: [],
  primaryIP: '10.0.0.5',
  conditions: [],
  deleting: false,
  templateHash: 'h'
}
const noNode: CellNodeStatus = { name: 'p-0', present: false }

/** A Failed row of `ageSeconds`, stored with its failure, its message `message`. */
function failedRow(ageSeconds: number, message: string, failureCount = 0) {
  const failure = {
    reason: 'ReadyTimeout',
    phase: 'Joining' as const,
    since: ago(ageSeconds),
    message: 'The cell stayed Joining too long.'
  }
  const previous: PreviousCell = {
    ...JOINING,
    phase: 'Failed',
    reason: 'ReadyTimeout',
    message,
    lastTransitionTime: ago(ageSeconds),
    failureCount,
    failure
  }
  return { failure, previous }
}

/** Cell p-0 with what its phase and its previous row say; children observed when `observed`. */
function failedCell(seen: Cell['seen'], previous: PreviousCell, observed: boolean): Cell {
  return {
    index: 0,
    name: 'p-0',
    seen,
    previous,
    children: { secret: observed, seed: observed, guest: observed },
    guestDeleting: false,
    templateHash: 'h',
    row: observed ? noNode : undefined,
    ownRow: undefined,
    witness: { named: false, readyOnce: false, cordon: false }
  }
}

t.test('a phase that outlives its budget fails the cell with its cause as data', async (t) => {
  const got = cellPhase({ guest, row: noNode, workload: OBSERVED, config: CONFIG, previous: JOINING, now: NOW })
  t.equal(got.phase, 'Failed')
  t.same(got.failure, {
    reason: 'ReadyTimeout',
    phase: 'Joining',
    since: NOW_STAMP,
    message:
      'The cell stayed Joining longer than bootstrap.readyTimeout (15m): No Node of this guest in the workload cluster yet (node address 10.0.0.5).'
  })
  t.equal(got.message, got.failure?.message)
})

t.test("a Failed cell's message is the failure's, whatever the stored message says after it", async (t) => {
  const { failure, previous } = failedRow(60, 'The cell stayed Joining too long. Kept as it is while the workload cluster is unobserved.')
  const seen = cellPhase({ guest, row: noNode, workload: UNOBSERVED, config: CONFIG, previous, now: NOW })
  t.equal(seen.message, 'The cell stayed Joining too long.')
  t.same(seen.failure, failure)
  const cell = failedCell(seen, previous, true)
  for (const workload of [UNOBSERVED, UNOBSERVED]) {
    const plan = planScaling({
      pool: 'p',
      cells: [cell],
      desired: 1,
      workload,
      templateHash: 'h',
      updatePolicy: 'Manual',
      specChanged: false,
      now: NOW
    })
    const decided = plan.cells[0]
    t.equal(decided?.message, 'The cell stayed Joining too long. Kept as it is while the workload cluster is unobserved.')
    if (decided === undefined) continue
    const row = cellStatusRow(statusRow(decided, cell))
    t.same(row.failure, failure, 'the status row keeps the failure')
  }
})

t.test('a rebuild forgets the failure; the failure count stays', async (t) => {
  const { previous } = failedRow(86400, 'The cell stayed Joining too long.', 1)
  const seen = cellPhase({ guest: undefined, row: undefined, workload: OBSERVED, config: CONFIG, previous, now: NOW })
  const cell = failedCell(seen, previous, false)
  const other: Cell = { ...cell, index: 1, name: 'p-1', seen: { ...seen, phase: 'Ready', readyOnce: true }, previous: undefined }
  const plan = planScaling({
    pool: 'p',
    cells: [cell, other],
    desired: 2,
    workload: OBSERVED,
    templateHash: 'h',
    updatePolicy: 'Manual',
    specChanged: false,
    now: NOW
  })
  const rebuilt = plan.cells[0]
  t.equal(rebuilt?.building, true)
  t.equal(rebuilt?.failure, undefined)
  t.equal(rebuilt?.failureCount, 1)
})

/** A one-cell Cluster API pool whose Machines take their bootstrap data from a config template, with a 60 s budget. */
function clusterApiTemplateWorld(): PoolWorld {
  const spec = poolSpec({ replicas: 1 })
  const cell = spec.cell as Record<string, unknown>
  const { imageRef, guestClassRef, interfaces } = cell.guestTemplate as Record<string, unknown>
  cell.provisioner = 'ClusterAPI'
  cell.guestTemplate = { imageRef, guestClassRef, interfaces }
  cell.clusterAPI = {
    clusterName: 'capi',
    bootstrapConfigTemplateRef: { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfigTemplate', name: 'join' }
  }
  spec.bootstrap = { readyTimeout: '60s' }
  return new PoolWorld(spec)
}

t.test(
  'a Cluster API cell with a bootstrap config template keeps its failure count while its rebuilt Machine waits to be made',
  async (t) => {
    const world = clusterApiTemplateWorld()
    const machines = (): KubeObject[] => world.of('Machine.cluster.x-k8s.io/v1beta2')
    for (let i = 0; i < 4 && machines().length === 0; i++) {
      world.pass(sync)
      world.agent()
    }
    t.equal(machines().length, 1, 'the Machine is made')
    world.pass(sync)
    t.equal(world.cells()[0]?.phase, 'GuestProvisioning')
    // Nobody provisions it: its phase outlives the budget.
    world.advance(61)
    world.pass(sync)
    t.same(
      world.cells().map((c) => [c.name, c.phase, c.failureCount]),
      [['inference-0', 'Failed', 1]]
    )
    t.same(machines(), [], 'the Failed cell lets its Machine go')
    // A sync during the backoff: the cell has no child, so its CellNodeSet entry goes too.
    world.agent()
    world.advance(5)
    world.pass(sync)
    world.agent()
    // The backoff passes; the rebuild starts, but the agent has yet to report the new entry's row.
    world.advance(31)
    world.pass(sync)
    t.same(
      world.cells().map((c) => [c.phase, c.failureCount]),
      [['Pending', 1]]
    )
    const since = world.cells()[0] as { lastTransitionTime?: string }
    t.same(machines(), [], 'no Machine before the row says no Node of its name is there')
    world.advance(5)
    world.pass(sync)
    t.same(
      world.cells().map((c) => [c.phase, c.failureCount]),
      [['Pending', 1]],
      'a sync with no child of the cell observed keeps its failure count'
    )
    t.equal((world.cells()[0] as { lastTransitionTime?: string }).lastTransitionTime, since.lastTransitionTime, 'and its Pending clock')
    world.agent()
    world.pass(sync)
    t.equal(machines().length, 1, 'the rebuilt Machine is made')
    t.equal(world.cells()[0]?.failureCount, 1, 'the failure count survives the rebuild')
  }
)
