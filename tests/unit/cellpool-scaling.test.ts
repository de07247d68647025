/**
 * Scaling, drain, rebuild and update decisions, one table row per rule of docs/cellpool.md
 * ("Cells and their children" order, "Phases" failures, "Scaling, drain and updates").
 */
import t from 'tap'
import type { CellNodeStatus } from '../../hooks/api/cellnodeset.ts'
import type { CellPhase } from '../../hooks/api/gpucellpool.ts'
import { drainComplete } from '../../hooks/cellpool/cells/drain.ts'
import { backoffSeconds, planScaling } from '../../hooks/cellpool/plan/scaling.ts'
import { T0 as NOW, T0_STAMP as NOW_STAMP, ago, OBSERVED, UNOBSERVED } from './fixtures/cellpool.ts'
import type { Cell, PreviousCell } from '../../hooks/cellpool/model/cell.ts'
import type { WorkloadState } from '../../hooks/cellpool/model/workload.ts'
import type { CellPlan, ScalingInput } from '../../hooks/cellpool/model/plan.ts'

const HASH = 'current'

const idleRow = (name: string, extra: Partial<CellNodeStatus> = {}): CellNodeStatus => ({
  name,
  present: true,
  instance: `uid-${name}`,
  live: true,
  ready: true,
  unschedulable: false,
  devices: [{ id: 'GPU-0', type: 'A100', memoryMiB: 81920, cores: 100, healthy: true }],
  registration: 'Parsed',
  allocations: { read: true, pods: 0 },
  ...extra
})

interface CellOptions {
  readyOnce?: boolean
  failedNow?: boolean
  ltt?: string
  prev?: Partial<PreviousCell>
  children?: Partial<Cell['children']>
  row?: CellNodeStatus
  ownRow?: CellNodeStatus | null
  hash?: string
  guestDeleting?: boolean
  reason?: string
  witness?: Partial<Cell['witness']>
}

/** A cell of pool `p` at `index` whose observation gives `phase`. */
function cell(index: number, phase: CellPhase, o: CellOptions = {}): Cell {
  const name = `p-${index}`
  const readyOnce = o.readyOnce ?? phase === 'Ready'
  const own = o.ownRow === null ? undefined : (o.ownRow ?? (phase === 'Ready' ? idleRow(name) : undefined))
  return {
    index,
    name,
    seen: {
      phase,
      reason: o.reason ?? (phase === 'Ready' ? 'Ready' : 'Seen'),
      message: phase === 'Failed' ? (o.prev?.message ?? 'failed') : 'seen',
      readyOnce,
      lastTransitionTime: o.ltt ?? ago(600),
      failedNow: o.failedNow ?? false
    },
    previous:
      o.prev === undefined
        ? undefined
        : {
            phase,
            reason: '',
            message: '',
            lastTransitionTime: o.ltt ?? ago(600),
            readyOnce,
            failureCount: 0,
            guestUID: `uid-${name}`,
            templateHash: HASH,
            ...o.prev
          },
    children: { secret: true, seed: true, guest: true, ...o.children },
    guestDeleting: o.guestDeleting ?? false,
    templateHash: o.hash ?? HASH,
    row: o.row ?? own,
    ownRow: own,
    witness: { named: false, readyOnce: false, cordon: false, ...o.witness }
  }
}

function plan(cells: Cell[], desired: number, extra: Partial<ScalingInput> = {}) {
  return planScaling({
    pool: 'p',
    cells,
    desired,
    workload: OBSERVED,
    templateHash: HASH,
    updatePolicy: 'Manual',
    specChanged: false,
    now: NOW,
    ...extra
  })
}

const summary = (cells: readonly CellPlan[]) =>
  cells.map(
    (c) => `${c.name}:${c.phase}:${c.answer}${c.cordon ? ':cordon' : ''}${c.building ? ':build' : ''}${c.createGuest ? ':guest' : ''}`
  )

t.test('scale up', async (t) => {
  t.test('new cells take the lowest free indices, at most four being built at once', async (t) => {
    const got = plan([], 6)
    t.same(summary(got.cells), ['p-0:Pending:serve:build', 'p-1:Pending:serve:build', 'p-2:Pending:serve:build', 'p-3:Pending:serve:build'])
    t.equal(got.progressing.status, 'True')
    t.equal(got.cells[0]?.lastTransitionTime, NOW_STAMP)
  })
  t.test('a gap is filled first', async (t) => {
    const got = plan([cell(0, 'Ready'), cell(2, 'Ready')], 3)
    t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Pending:serve:build', 'p-2:Ready:serve'])
  })
  t.test('two machines being created: two more cells are prepared, none beyond', async (t) => {
    const got = plan([cell(0, 'Joining'), cell(1, 'AwaitingGPUCapacity')], 6)
    t.same(summary(got.cells), ['p-0:Joining:serve', 'p-1:AwaitingGPUCapacity:serve', 'p-2:Pending:serve:build', 'p-3:Pending:serve:build'])
    t.equal(got.progressing.message, 'Creating p-0, p-1, p-2, p-3.')
  })
  t.test('no new cell while four are being built', async (t) => {
    const waiting = { children: { guest: false }, ownRow: null, reason: 'GuestNotCreated' } as const
    const got = plan([cell(0, 'Joining'), cell(1, 'Booting'), cell(2, 'Pending', waiting), cell(3, 'Pending', waiting)], 6)
    t.same(summary(got.cells), ['p-0:Joining:serve', 'p-1:Booting:serve', 'p-2:Pending:serve', 'p-3:Pending:serve'])
    t.match(got.cells[2]?.message, /Waiting for the workload agent to confirm/)
  })
  t.test('a regressed cell (Ready before) does not count as being created', async (t) => {
    const got = plan([cell(0, 'Joining', { readyOnce: true }), cell(1, 'Joining')], 3)
    t.same(summary(got.cells), ['p-0:Joining:serve', 'p-1:Joining:serve', 'p-2:Pending:serve:build'])
  })
  t.test('not while the workload cluster is unobserved: Progressing False, WorkloadUnobserved', async (t) => {
    const got = plan([cell(0, 'Ready')], 3, { workload: UNOBSERVED })
    t.same(summary(got.cells), ['p-0:Ready:serve'])
    t.same([got.progressing.status, got.progressing.reason], ['False', 'WorkloadUnobserved'])
  })
  t.test('nothing to do: Progressing False, Settled', async (t) => {
    const got = plan([cell(0, 'Ready'), cell(1, 'Ready')], 2)
    t.same([got.progressing.status, got.progressing.reason], ['False', 'Settled'])
  })
})

t.test('creation order: the guest only once Secret and seed profile are observed and the row shows no Node of that name', async (t) => {
  const absent = (name: string): CellNodeStatus => ({ name, present: false })
  const rows: Array<{ name: string; given: Cell; workload?: WorkloadState; guest: boolean }> = [
    {
      name: 'Secret, seed profile observed, row present false, generation-matched: guest answered',
      given: cell(0, 'Pending', { children: { guest: false }, row: absent('p-0'), ownRow: null }),
      guest: true
    },
    {
      name: 'seed profile not observed yet: no guest',
      given: cell(0, 'Pending', { children: { guest: false, seed: false }, row: absent('p-0'), ownRow: null }),
      guest: false
    },
    {
      name: 'Secret not observed yet: no guest',
      given: cell(0, 'Pending', { children: { guest: false, secret: false }, row: absent('p-0'), ownRow: null }),
      guest: false
    },
    { name: 'no row for the cell yet: no guest', given: cell(0, 'Pending', { children: { guest: false }, ownRow: null }), guest: false },
    {
      name: 'a Node of that name is present: no guest',
      given: cell(0, 'Pending', { children: { guest: false }, row: idleRow('p-0', { instance: 'old' }), ownRow: null }),
      guest: false
    },
    {
      name: 'status not generation-matched: no guest',
      given: cell(0, 'Pending', { children: { guest: false }, row: absent('p-0'), ownRow: null }),
      workload: { ...OBSERVED, generationMatched: false },
      guest: false
    },
    {
      name: 'workload cluster unobserved: no guest',
      given: cell(0, 'Pending', { children: { guest: false }, row: absent('p-0'), ownRow: null }),
      workload: UNOBSERVED,
      guest: false
    }
  ]
  for (const r of rows) {
    t.test(r.name, async (t) => {
      const got = plan([r.given], 1, r.workload !== undefined ? { workload: r.workload } : {})
      t.equal(got.cells[0]?.createGuest, r.guest)
      t.equal(got.cells[0]?.answer, 'serve', 'Secret and seed profile are answered either way')
    })
  }
})

t.test(
  'machines queue: at most two being created; a prepared cell waits with no budget and gets its machine once one turns Ready',
  async (t) => {
    const absent = (name: string): CellNodeStatus => ({ name, present: false })
    const prepared = (index: number, o: CellOptions = {}): Cell =>
      cell(index, 'Pending', { children: { guest: false }, row: absent(`p-${index}`), ownRow: null, reason: 'GuestNotCreated', ...o })
    t.test('two machines being created: the next prepared cells are queued, lowest index first', async (t) => {
      const got = plan([cell(0, 'Booting'), prepared(2), prepared(1)], 3)
      t.same(summary(got.cells), ['p-0:Booting:serve', 'p-1:Pending:serve:guest', 'p-2:Pending:serve'])
      t.same([got.cells[2]?.reason, got.cells[2]?.lastTransitionTime], ['MachineQueued', NOW_STAMP], 'queued now')
      t.match(
        got.cells[2]?.message,
        /^Prepared, no Node of this name present: its machine is created once fewer than 2 are being created\.$/
      )
    })
    t.test('still queued: the time it was queued at is kept', async (t) => {
      const queued = prepared(2, { reason: 'MachineQueued', prev: { phase: 'Pending', reason: 'MachineQueued' }, ltt: ago(3600) })
      const got = plan([cell(0, 'Booting'), cell(1, 'Joining'), queued], 3)
      t.same([got.cells[2]?.reason, got.cells[2]?.createGuest, got.cells[2]?.lastTransitionTime], ['MachineQueued', false, ago(3600)])
    })
    t.test('a machine turned Ready: the queued cell gets its machine, and its budget starts now', async (t) => {
      const queued = prepared(2, { reason: 'MachineQueued', prev: { phase: 'Pending', reason: 'MachineQueued' }, ltt: ago(3600) })
      const got = plan([cell(0, 'Ready'), cell(1, 'Joining'), queued], 3)
      t.same([got.cells[2]?.createGuest, got.cells[2]?.reason, got.cells[2]?.lastTransitionTime], [true, 'GuestNotCreated', NOW_STAMP])
    })
    t.test('a queued cell with no child yet (a Cluster API template cell) keeps the time it was queued at', async (t) => {
      const earlierRows = new Map([
        ['p-2', { phase: 'Pending' as const, reason: 'MachineQueued', failureCount: 0, lastTransitionTime: ago(100) }]
      ])
      const given = { rows: new Map([['p-2', absent('p-2')]]), earlierRows, prerequisites: { secret: false, seed: false } }
      const got = plan([cell(0, 'Booting'), cell(1, 'Joining')], 3, given)
      t.same(
        [got.cells[2]?.name, got.cells[2]?.reason, got.cells[2]?.createGuest, got.cells[2]?.lastTransitionTime],
        ['p-2', 'MachineQueued', false, ago(100)],
        'the same row every sync: no status write while it waits'
      )
      const freed = plan([cell(0, 'Ready'), cell(1, 'Joining')], 3, given)
      t.same(
        [freed.cells[2]?.reason, freed.cells[2]?.createGuest, freed.cells[2]?.lastTransitionTime],
        ['GuestNotCreated', true, NOW_STAMP]
      )
    })
    t.test('a queued cell whose confirmation lapsed waits for the agent, its budget from now', async (t) => {
      const queued = prepared(2, { reason: 'MachineQueued', prev: { phase: 'Pending', reason: 'MachineQueued' }, ltt: ago(3600) })
      const got = plan([cell(0, 'Ready'), cell(1, 'Joining'), queued], 3, { workload: { ...OBSERVED, generationMatched: false } })
      t.same([got.cells[2]?.createGuest, got.cells[2]?.reason, got.cells[2]?.lastTransitionTime], [false, 'GuestNotCreated', NOW_STAMP])
    })
  }
)

t.test("scale down order: Failed, then never Ready, then the autoscaler's idle cell, else the highest index", async (t) => {
  t.test('Failed first, then never-Ready cells deleted at once', async (t) => {
    const cells = [
      cell(0, 'Ready'),
      cell(1, 'Ready'),
      cell(2, 'Joining'),
      cell(3, 'Failed', { prev: { phase: 'Failed', failureCount: 1 } })
    ]
    const got = plan(cells, 2)
    t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Ready:serve', 'p-2:Deleting:remove', 'p-3:Failed:remove'])
  })
  t.test('a cell that was Ready drains: cordoned, children kept', async (t) => {
    const got = plan([cell(0, 'Ready'), cell(1, 'Ready'), cell(2, 'Ready')], 2)
    t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Ready:serve', 'p-2:Draining:serve:cordon'])
    t.equal(got.cells[2]?.reason, 'ScaleDown')
    t.equal(got.cells[2]?.lastTransitionTime, NOW_STAMP)
  })
  t.test("the autoscaler's idle cell drains instead of the highest index", async (t) => {
    const got = plan([cell(0, 'Ready'), cell(1, 'Ready'), cell(2, 'Ready')], 2, { cellToDrain: 'p-0' })
    t.same(summary(got.cells), ['p-0:Draining:serve:cordon', 'p-1:Ready:serve', 'p-2:Ready:serve'])
  })
  t.test('a Failed row without children is dropped', async (t) => {
    const got = plan(
      [
        cell(0, 'Ready'),
        cell(1, 'Failed', { children: { secret: false, seed: false, guest: false }, prev: { phase: 'Failed', failureCount: 2 } })
      ],
      1
    )
    t.same(
      got.cells.filter((c) => c.keepRow).map((c) => c.name),
      ['p-0']
    )
  })
  t.test('nothing is deleted while the workload cluster is unobserved', async (t) => {
    const got = plan([cell(0, 'Ready'), cell(1, 'Joining'), cell(2, 'Failed', { prev: { phase: 'Failed', failureCount: 1 } })], 0, {
      workload: UNOBSERVED
    })
    t.notOk(
      got.cells.some((c) => c.answer === 'remove' || c.answer === 'none'),
      summary(got.cells).join(' ')
    )
  })
})

t.test('drain', async (t) => {
  const draining = (row: Partial<CellNodeStatus>, since = 31): Cell =>
    cell(2, 'Ready', {
      prev: { phase: 'Draining', reason: 'ScaleDown', lastTransitionTime: ago(since) },
      ownRow: idleRow('p-2', { unschedulable: true, ...row })
    })
  t.test('complete when the row shows the cordon, allocations read 0, nothing in flight, after 30 s: guest first', async (t) => {
    const got = plan([cell(0, 'Ready'), cell(1, 'Ready'), draining({})], 2)
    t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Ready:serve', 'p-2:Deleting:remove:cordon'])
  })
  const waits: Array<{ name: string; given: Cell; workload?: WorkloadState }> = [
    { name: 'the Node not cordoned yet', given: draining({ unschedulable: false }) },
    { name: 'a Pod still holds an allocation', given: draining({ allocations: { read: true, pods: 1 } }) },
    { name: 'an allocation in flight', given: draining({ allocations: { read: true, pods: 0, inFlight: true } }) },
    { name: 'allocations not read', given: draining({ allocations: { read: false, pods: 0 } }) },
    { name: 'draining for less than 30 s', given: draining({}, 29) },
    { name: 'status not generation-matched', given: draining({}), workload: { ...OBSERVED, generationMatched: false } },
    { name: 'the workload cluster unobserved', given: draining({}), workload: UNOBSERVED },
    {
      name: 'no row for the Node',
      given: cell(2, 'Ready', { prev: { phase: 'Draining', reason: 'ScaleDown', lastTransitionTime: ago(60) }, ownRow: null })
    }
  ]
  for (const w of waits) {
    t.test(`waits: ${w.name}`, async (t) => {
      const got = plan([cell(0, 'Ready'), cell(1, 'Ready'), w.given], 2, w.workload !== undefined ? { workload: w.workload } : {})
      t.same(summary(got.cells).at(-1), 'p-2:Draining:serve:cordon')
      t.match(got.cells[2]?.message, /^Draining: waiting until /)
    })
  }
  for (const reason of ['ScaleDown', 'RollingUpdate'] as const) {
    t.test(`a row still Draining (${reason}) whose guest is gone: the removal goes on, the guest is not built again`, async (t) => {
      const gone = cell(2, 'Pending', {
        readyOnce: true,
        prev: { phase: 'Draining', reason, lastTransitionTime: ago(60) },
        children: { guest: false },
        ownRow: null
      })
      const got = plan([cell(0, 'Ready'), cell(1, 'Ready'), gone], 2)
      t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Ready:serve', 'p-2:Deleting:remove:cordon'])
      t.equal(got.cells[2]?.reason, reason)
      t.equal(got.cells[2]?.message, 'Deleting the seed profile and bootstrap Secret.')
    })
  }
  t.test('the 30 s are a deadline for the next sync', async (t) => {
    const got = plan([cell(0, 'Ready'), draining({}, 20)], 1)
    t.same(got.cells[1]?.deadline, new Date(NOW.getTime() + 10_000))
  })
  t.test('a scale-up returns a draining cell to service before building a new one', async (t) => {
    const got = plan([cell(0, 'Ready'), cell(1, 'Ready'), draining({ allocations: { read: true, pods: 2 } })], 3)
    t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Ready:serve', 'p-2:Ready:serve'])
    t.equal(got.cells[2]?.cordon, false)
  })
  t.test('drainComplete reports what it waits for', async (t) => {
    t.same(drainComplete(idleRow('x', { unschedulable: true, allocations: { read: true, pods: 3 } }), OBSERVED, ago(60), NOW), {
      done: false,
      waiting: '3 Pod(s) still hold a GPU allocation'
    })
  })
})

t.test('Cluster API inputs: a Machine deleted by someone else, prerequisites, rows of cells without children', async (t) => {
  const capi: Partial<ScalingInput> = { drainDeletedGuest: true, prerequisites: { secret: false, seed: false } }
  t.test('a Ready cell whose Machine is being deleted drains first, keeping its index: no other cell is built', async (t) => {
    const got = plan([cell(0, 'Ready'), cell(1, 'Ready', { guestDeleting: true })], 2, capi)
    t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Draining:serve:cordon'])
    t.same([got.cells[1]?.reason, got.cells[1]?.lastTransitionTime], ['MachineDeleted', NOW_STAMP])
  })
  t.test('its drain keeps the time it started, and once complete the cell goes with reason MachineDeleted', async (t) => {
    const deleting = (since: number): Cell =>
      cell(1, 'Ready', {
        guestDeleting: true,
        prev: { phase: 'Draining', reason: 'MachineDeleted', lastTransitionTime: ago(since) },
        ownRow: idleRow('p-1', { unschedulable: true })
      })
    const waiting = plan([cell(0, 'Ready'), deleting(10)], 2, capi)
    t.same(summary(waiting.cells), ['p-0:Ready:serve', 'p-1:Draining:serve:cordon'])
    t.equal(waiting.cells[1]?.lastTransitionTime, ago(10))
    const done = plan([cell(0, 'Ready'), deleting(31)], 2, capi)
    t.same(summary(done.cells), ['p-0:Ready:serve', 'p-1:Deleting:remove:cordon'])
    t.equal(done.cells[1]?.reason, 'MachineDeleted')
  })
  t.test('while it is removed its index waits for it: no cell at another index', async (t) => {
    const removing = cell(1, 'Ready', { guestDeleting: true, prev: { phase: 'Deleting', reason: 'MachineDeleted' } })
    const got = plan([cell(0, 'Ready'), removing], 2, capi)
    t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Deleting:remove:cordon'])
  })
  t.test('a row still Draining (MachineDeleted) whose Machine is gone: removed as MachineDeleted, its index waits', async (t) => {
    const gone = cell(1, 'Pending', {
      readyOnce: true,
      prev: { phase: 'Draining', reason: 'MachineDeleted', lastTransitionTime: ago(60) },
      children: { guest: false, secret: true },
      ownRow: null
    })
    const got = plan([cell(0, 'Ready'), gone], 2, capi)
    t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Deleting:remove:cordon'])
    t.equal(got.cells[1]?.reason, 'MachineDeleted')
  })
  t.test('without drainDeletedGuest (SwiftGuest) a guest deleted by hand is removed at once', async (t) => {
    const got = plan([cell(0, 'Ready'), cell(1, 'Ready', { guestDeleting: true })], 2)
    t.same(summary(got.cells).at(1), 'p-1:Deleting:remove:cordon')
    t.equal(got.cells[1]?.reason, 'GuestDeleted')
  })
  t.test('a Machine that was never Ready is not drained: it goes uncordoned, as a SwiftGuest deleted by hand', async (t) => {
    const got = plan([cell(0, 'Joining', { guestDeleting: true })], 1, capi)
    t.same(summary(got.cells).at(0), 'p-0:Deleting:remove')
    t.equal(got.cells[0]?.reason, 'GuestDeleted')
  })
  t.test('with no prerequisites the Machine is answered without a Secret or seed, once the row shows no Node', async (t) => {
    const bare = cell(0, 'Pending', {
      children: { secret: false, seed: false, guest: false },
      row: { name: 'p-0', present: false },
      ownRow: null
    })
    t.equal(plan([bare], 1, capi).cells[0]?.createGuest, true)
    t.equal(plan([bare], 1).cells[0]?.createGuest, false, 'the SwiftGuest order still waits for both')
  })
  t.test("a new cell reads its row from the CellNodeSet's rows: its Machine is answered in the sync that builds it", async (t) => {
    const rows = new Map([['p-0', { name: 'p-0', present: false }]])
    t.same(summary(plan([], 1, { ...capi, rows }).cells), ['p-0:Pending:serve:build:guest'])
    t.same(summary(plan([], 1, capi).cells), ['p-0:Pending:serve:build'], 'without a row it waits for the agent')
  })
})

t.test('Failed cells: removed without a drain, rebuilt after a backoff, at most 5 times', async (t) => {
  t.test('backoff: 30 s, doubling, at most 30 min', async (t) => {
    t.same([1, 2, 3, 4, 5, 6, 7, 8, 20].map(backoffSeconds), [30, 60, 120, 240, 480, 960, 1800, 1800, 1800])
  })
  t.test('a cell failing now counts a failure and its children go, uncordoned', async (t) => {
    const got = plan([cell(0, 'Failed', { failedNow: true, prev: { phase: 'Joining', failureCount: 1 } })], 1)
    t.same(summary(got.cells), ['p-0:Failed:remove'])
    t.equal(got.cells[0]?.failureCount, 2)
  })
  const failedRow = (failures: number, since: number): Cell =>
    cell(0, 'Failed', {
      ltt: ago(since),
      children: { secret: false, seed: false, guest: false },
      prev: { phase: 'Failed', reason: 'ReadyTimeout', message: 'The cell stayed Joining too long.', failureCount: failures }
    })
  t.test('rebuilt at the same index once its backoff has passed, failureCount kept', async (t) => {
    const got = plan([cell(1, 'Ready'), failedRow(2, 60)], 2)
    t.same(summary(got.cells), ['p-0:Pending:serve:build', 'p-1:Ready:serve'])
    t.equal(got.cells[0]?.failureCount, 2)
    t.equal(got.cells[0]?.readyOnce, false)
  })
  t.test('waits for its backoff, which is the next deadline', async (t) => {
    const got = plan([cell(1, 'Ready'), failedRow(2, 59)], 2)
    t.same(summary(got.cells), ['p-0:Failed:none', 'p-1:Ready:serve'])
    t.same(got.cells[0]?.deadline, new Date(NOW.getTime() + 1000))
    t.match(got.cells[0]?.message, /^The cell stayed Joining too long\. Rebuilt after a backoff of 1m\.$/)
  })
  t.test('after 5 failures the row stays Failed, ReplacementExhausted', async (t) => {
    const got = plan([cell(1, 'Ready'), failedRow(5, 86400)], 2)
    t.same(summary(got.cells), ['p-0:Failed:none', 'p-1:Ready:serve'])
    t.equal(got.cells[0]?.reason, 'ReplacementExhausted')
    t.same([got.progressing.status, got.progressing.reason], ['False', 'ReplacementExhausted'])
  })
  t.test('failure counts reset when the spec changes', async (t) => {
    const got = plan([cell(1, 'Ready'), failedRow(5, 10)], 2, { specChanged: true })
    t.same(summary(got.cells), ['p-0:Pending:serve:build', 'p-1:Ready:serve'])
    t.equal(got.cells[0]?.failureCount, 0)
  })
  t.test('a pool none of whose cells was ever Ready stops after 3 failures in all', async (t) => {
    const cells = [failedRow(2, 86400), { ...failedRow(1, 86400), index: 1, name: 'p-1' }]
    const got = plan(cells, 3)
    t.notOk(
      got.cells.some((c) => c.building),
      'nothing is built'
    )
    t.same([got.progressing.status, got.progressing.reason], ['False', 'ReplacementExhausted'])
    const fixed = plan(cells, 3, { specChanged: true })
    t.ok(
      fixed.cells.some((c) => c.building),
      'a spec change lifts it'
    )
  })
  t.test('a Failed cell is kept while the workload cluster is unobserved', async (t) => {
    const got = plan([cell(0, 'Failed', { prev: { phase: 'Failed', failureCount: 1 } })], 1, { workload: UNOBSERVED })
    t.same(summary(got.cells), ['p-0:Failed:hold'])
  })
})

t.test('removal carries through: guest first, then the rest', async (t) => {
  const got = plan(
    [cell(0, 'Ready'), cell(1, 'Joining', { prev: { phase: 'Deleting', reason: 'ScaleDown' }, children: { guest: false } })],
    1
  )
  t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Deleting:remove'])
  const gone = plan(
    [
      cell(0, 'Ready'),
      cell(1, 'Pending', { prev: { phase: 'Deleting', reason: 'ScaleDown' }, children: { guest: false, secret: false, seed: false } })
    ],
    1
  )
  t.same(
    gone.cells.filter((c) => c.keepRow).map((c) => c.name),
    ['p-0'],
    'its row goes with its last child'
  )
  const handDeleted = plan([cell(0, 'Ready', { guestDeleting: true })], 1)
  t.equal(handDeleted.cells[0]?.phase, 'Deleting', 'a guest deleted by hand is carried through')
})

t.test('updates', async (t) => {
  const outdated = (i: number, o: CellOptions = {}) => cell(i, 'Ready', { hash: 'old', ...o })
  t.test('Manual: Updated False, TemplateChanged, naming the outdated cells; nothing replaced', async (t) => {
    const got = plan([outdated(0), cell(1, 'Ready'), outdated(2)], 3)
    t.same([got.updated.status, got.updated.reason], ['False', 'TemplateChanged'])
    t.match(got.updated.message, /p-0, p-2/)
    t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Ready:serve', 'p-2:Ready:serve'])
  })
  t.test('every cell current: Updated True', async (t) => {
    t.equal(plan([cell(0, 'Ready')], 1).updated.status, 'True')
  })
  t.test('RollingUpdate drains one outdated cell, an idle one first', async (t) => {
    const busy = idleRow('p-2', { allocations: { read: true, pods: 1 } })
    const got = plan([outdated(0), cell(1, 'Ready'), outdated(2, { ownRow: busy })], 3, { updatePolicy: 'RollingUpdate' })
    t.same(summary(got.cells), ['p-0:Draining:serve:cordon', 'p-1:Ready:serve', 'p-2:Ready:serve'])
    t.same([got.updated.status, got.updated.reason], ['False', 'RollingUpdate'])
  })
  t.test('RollingUpdate drains the highest index when none is idle', async (t) => {
    const busy = (i: number) => outdated(i, { ownRow: idleRow(`p-${i}`, { allocations: { read: true, pods: 1 } }) })
    const got = plan([busy(0), busy(1)], 2, { updatePolicy: 'RollingUpdate' })
    t.same(summary(got.cells), ['p-0:Ready:serve', 'p-1:Draining:serve:cordon'])
  })
  const blocked: Array<{ name: string; cells: Cell[]; desired: number; workload?: WorkloadState; why: RegExp }> = [
    { name: 'a cell being created', cells: [outdated(0), cell(1, 'Joining')], desired: 2, why: /being created/ },
    { name: 'not at the desired size', cells: [outdated(0)], desired: 1 + 1, workload: UNOBSERVED, why: /desired size/ },
    { name: 'the workload cluster unobserved', cells: [outdated(0)], desired: 1, workload: UNOBSERVED, why: /unobserved/ },
    {
      name: 'a cell draining',
      cells: [outdated(0), cell(1, 'Ready', { prev: { phase: 'Draining', reason: 'ScaleDown', lastTransitionTime: ago(5) } })],
      desired: 1,
      why: /drained or removed/
    }
  ]
  for (const b of blocked) {
    t.test(`RollingUpdate waits while ${b.name}: UpdateBlocked`, async (t) => {
      const got = plan(b.cells, b.desired, { updatePolicy: 'RollingUpdate', ...(b.workload !== undefined ? { workload: b.workload } : {}) })
      t.same([got.updated.status, got.updated.reason], ['False', 'UpdateBlocked'])
      t.match(got.updated.message, b.why)
      t.notOk(
        got.cells.some((c) => c.reason === 'RollingUpdate'),
        'nothing drained for the update'
      )
    })
  }
  t.test('a cell draining for the update holds its place: no extra cell is built meanwhile', async (t) => {
    const got = plan(
      [
        cell(0, 'Ready', { hash: 'old', prev: { phase: 'Draining', reason: 'RollingUpdate', lastTransitionTime: ago(5) } }),
        cell(1, 'Ready')
      ],
      2,
      { updatePolicy: 'RollingUpdate' }
    )
    t.same(summary(got.cells), ['p-0:Draining:serve:cordon', 'p-1:Ready:serve'])
    t.equal(got.updated.reason, 'RollingUpdate')
  })
  t.test('once the drained cell is gone, its index is rebuilt from the new template', async (t) => {
    const got = plan([cell(1, 'Ready')], 2, { updatePolicy: 'RollingUpdate' })
    t.same(summary(got.cells), ['p-0:Pending:serve:build', 'p-1:Ready:serve'])
    t.equal(got.cells[0]?.templateHash, HASH)
  })
})

t.test('a cell whose last child went this sync gives its index to its replacement', async (t) => {
  const gone = cell(0, 'Pending', {
    prev: { phase: 'Deleting', reason: 'RollingUpdate' },
    children: { secret: false, seed: false, guest: false }
  })
  const got = plan([gone, cell(1, 'Ready')], 2, { updatePolicy: 'RollingUpdate' })
  t.same(summary(got.cells), ['p-0:Pending:serve:build', 'p-1:Ready:serve'])
  t.same(
    got.cells.map((c) => c.index),
    [0, 1],
    'one plan per index'
  )
})

t.test("a rolling update's replacement waits for its index rather than taking another", async (t) => {
  const leaving = cell(0, 'Ready', { hash: 'old', prev: { phase: 'Deleting', reason: 'RollingUpdate' }, children: { guest: false } })
  const got = plan([leaving, cell(1, 'Ready')], 2, { updatePolicy: 'RollingUpdate' })
  t.same(summary(got.cells), ['p-0:Deleting:remove:cordon', 'p-1:Ready:serve'])
  const scaledDown = cell(0, 'Ready', { prev: { phase: 'Deleting', reason: 'ScaleDown' }, children: { guest: false } })
  t.same(
    summary(plan([scaledDown, cell(1, 'Ready')], 2).cells),
    ['p-0:Deleting:remove:cordon', 'p-1:Ready:serve', 'p-2:Pending:serve:build'],
    'a scale-up after a scale-down does not wait'
  )
})
