/**
 * The autoscaler, one row per rule of docs/cellpool.md "Autoscaling", in the order the rules apply.
 */
import t from 'tap'
import { autoscale, autoscaleDeadline, cellShape, satisfiable, scalingActiveCondition } from '../../hooks/cellpool/plan/autoscale.ts'
import type { CellPhase } from '../../hooks/api/gpucellpool.ts'
import { T0 as NOW, T0_STAMP as NOW_STAMP, ago } from './fixtures/cellpool.ts'
import type { AutoscaleCell, AutoscaleConfig, AutoscaleInput } from '../../hooks/cellpool/model/autoscale.ts'

const A100 = { id: 'GPU-0', type: 'A100', memoryMiB: 81920, cores: 100, healthy: true }

const CONFIG: AutoscaleConfig = {
  replicas: 1,
  minReplicas: 1,
  maxReplicas: 4,
  stabilizationWindowSeconds: 600,
  scaleDown: 'Auto',
  scaleDownStabilizationWindowSeconds: 1800
}

/** A cell of `phase`; `creating`: being built before its first Ready (a scale-up in flight). */
function cell(index: number, phase: CellPhase, idle = false, creating = false): AutoscaleCell {
  return { name: `p-${index}`, index, phase, idle, devices: phase === 'Ready' ? [{ ...A100 }] : [], creating }
}

/** Demand read from the workload cluster: `pods` pending, by default each asking for a slice of one device. */
const pending = (pods: number, shapes = pods > 0 ? [{ devices: 1, memoryMiB: 8192, cores: 30, pods }] : []) => ({
  read: true,
  pendingPods: pods,
  shapes
})

/** The autoscaler's decision at NOW for {@link input}. */
const decide = (extra: Partial<AutoscaleInput> = {}) => autoscale(input(extra), NOW)

function input(extra: Partial<AutoscaleInput> = {}): AutoscaleInput {
  return {
    config: CONFIG,
    cells: [cell(0, 'Ready'), cell(1, 'Ready')],
    demand: pending(0),
    observed: true,
    observedTime: ago(5),
    memory: {},
    ...extra
  }
}

t.test('floor, ceiling and base', async (t) => {
  t.test('base counts cells neither Failed, Draining nor Deleting', async (t) => {
    const cells = [cell(0, 'Ready'), cell(1, 'Draining'), cell(2, 'Deleting'), cell(3, 'Failed'), cell(4, 'Joining')]
    const got = decide({ cells, demand: undefined })
    t.equal(got.base, 2)
    t.equal(got.desiredReplicas, 2)
  })
  t.test('base is clamped to [floor, ceiling]', async (t) => {
    t.equal(decide({ cells: [], demand: undefined, config: { ...CONFIG, minReplicas: 2 } }).base, 2)
    t.equal(decide({ cells: [0, 1, 2, 3, 4, 5].map((i) => cell(i, 'Ready')), demand: undefined }).base, 4)
  })
  t.test('floor is spec.replicas when minReplicas is unset; the ceiling never below the floor', async (t) => {
    const got = decide({ cells: [], demand: undefined, config: { ...CONFIG, replicas: 3, minReplicas: undefined, maxReplicas: 2 } })
    t.same([got.floor, got.ceiling, got.base], [3, 3, 3])
  })
})

t.test('the cell shape is the device of a Ready cell, remembered', async (t) => {
  t.same(cellShape([cell(1, 'Joining'), cell(0, 'Ready')], undefined), { memoryMiB: 81920, cores: 100 })
  t.same(cellShape([], { memoryMiB: 40960, cores: 100 }), { memoryMiB: 40960, cores: 100 }, 'remembered when no cell is Ready')
  t.equal(cellShape([cell(0, 'Joining')], undefined), undefined)
  t.equal(satisfiable({ devices: 1, memoryMiB: 81920, cores: 100, pods: 1 }, { memoryMiB: 81920, cores: 100 }), true)
  t.equal(satisfiable({ devices: 2, memoryMiB: 1, cores: 1, pods: 1 }, { memoryMiB: 81920, cores: 100 }), false, 'more than one device')
  t.equal(satisfiable({ devices: 1, memoryMiB: 81921, cores: 1, pods: 1 }, { memoryMiB: 81920, cores: 100 }), false, 'more memory')
  t.equal(satisfiable({ devices: 1, memoryMiB: 1, cores: 101, pods: 1 }, { memoryMiB: 81920, cores: 100 }), false, 'more cores')
  const got = decide({ cells: [cell(0, 'Joining')], memory: { cellDeviceShape: { memoryMiB: 1024, cores: 10 } } })
  t.same(got.cellDeviceShape, { memoryMiB: 1024, cores: 10 }, 'kept in status')
})

interface Row {
  name: string
  given: Partial<AutoscaleInput>
  desired: number
  reason: string
  cellToDrain?: string
  fields?: Record<string, unknown>
}

/** Two idle Ready cells with no Pod pending, kept at 2 by the window that `memory` leaves open. */
function heldByWindow(name: string, memory: AutoscaleInput['memory']): Row {
  return {
    name,
    given: { cells: [cell(0, 'Ready', true), cell(1, 'Ready', true)], memory: { ...memory, desiredReplicas: 2 } },
    desired: 2,
    reason: 'Stabilizing'
  }
}

const rows: Row[] = [
  {
    name: 'demand not read: keep base, Unknown',
    given: { demand: { read: false, pendingPods: 0, shapes: [] } },
    desired: 2,
    reason: 'Unknown'
  },
  {
    name: 'workload cluster unobserved: keep base, Unknown',
    given: { observed: false, demand: pending(3) },
    desired: 2,
    reason: 'Unknown'
  },
  {
    name: 'pending Pods, none satisfiable, no shape yet: CellShapeUnknown',
    given: { cells: [cell(0, 'Joining')], demand: pending(2) },
    desired: 1,
    reason: 'CellShapeUnknown'
  },
  {
    name: 'pending Pods, none satisfiable: DemandUnsatisfiable',
    given: { demand: pending(2, [{ devices: 2, memoryMiB: 1, cores: 1, pods: 2 }]) },
    desired: 2,
    reason: 'DemandUnsatisfiable'
  },
  {
    name: 'satisfiable Pods pending at the ceiling: AtMaxReplicas',
    given: { cells: [0, 1, 2, 3].map((i) => cell(i, 'Ready')), demand: pending(1) },
    desired: 4,
    reason: 'AtMaxReplicas'
  },
  {
    name: 'satisfiable Pods pending within stabilizationWindow of a scale-up: Stabilizing',
    given: { demand: pending(1), memory: { lastScaleUpTime: ago(599), desiredReplicas: 3 } },
    desired: 3,
    reason: 'Stabilizing'
  },
  {
    name: 'satisfiable Pods pending: base + 1, ScaledUp',
    given: { demand: pending(1), memory: { lastScaleUpTime: ago(600), demandFreeSince: ago(10) } },
    desired: 3,
    reason: 'ScaledUp',
    fields: { lastScaleUpTime: NOW_STAMP, demandFreeSince: undefined }
  },
  {
    name: 'no Pod pending, scaleDown Manual: Idle',
    given: { config: { ...CONFIG, scaleDown: 'Manual' }, cells: [cell(0, 'Ready', true), cell(1, 'Ready', true)] },
    desired: 2,
    reason: 'Idle',
    fields: { demandFreeSince: NOW_STAMP }
  },
  { name: 'no Pod pending at the floor: AtMinReplicas', given: { cells: [cell(0, 'Ready', true)] }, desired: 1, reason: 'AtMinReplicas' },
  { name: 'no Pod pending, no idle cell: NoIdleCell', given: { memory: { demandFreeSince: ago(7200) } }, desired: 2, reason: 'NoIdleCell' },
  heldByWindow('demand-free for less than scaleDownStabilizationWindow: Stabilizing', { demandFreeSince: ago(1799) }),
  heldByWindow('a scale-up within scaleDownStabilizationWindow: Stabilizing', { demandFreeSince: ago(7200), lastScaleUpTime: ago(1000) }),
  heldByWindow('a scale-down within scaleDownStabilizationWindow: Stabilizing', {
    demandFreeSince: ago(7200),
    lastScaleDownTime: ago(1000)
  }),
  {
    name: 'otherwise base - 1, ScaledDown, the idle cell with the highest index drains',
    given: { cells: [cell(0, 'Ready', true), cell(1, 'Ready', false), cell(2, 'Ready', true)], memory: { demandFreeSince: ago(1800) } },
    desired: 2,
    reason: 'ScaledDown',
    cellToDrain: 'p-2',
    fields: { lastScaleDownTime: NOW_STAMP, demandFreeSince: ago(1800) }
  }
]

t.test('the rules, first that applies wins', async (t) => {
  for (const r of rows) {
    t.test(r.name, async (t) => {
      const got = decide(r.given)
      t.equal(got.desiredReplicas, r.desired)
      t.equal(got.reason, r.reason)
      t.equal(got.cellToDrain, r.cellToDrain)
      for (const [k, v] of Object.entries(r.fields ?? {})) t.same((got as unknown as Record<string, unknown>)[k], v, k)
    })
  }
})

t.test('DemandUnsatisfiable names the largest request', async (t) => {
  const got = decide({
    demand: pending(3, [
      { devices: 2, memoryMiB: 163840, cores: 200, pods: 2 },
      { devices: 1, memoryMiB: 100000, cores: 50, pods: 1 }
    ])
  })
  t.equal(got.reason, 'DemandUnsatisfiable')
  t.match(got.message, /the largest asks for 2 device\(s\), 163840 MiB and 200% cores/)
})

t.test('demand status: pendingPods, satisfiable, and lastObserved moving only when the figures change', async (t) => {
  const first = decide({
    demand: pending(3, [
      { devices: 1, memoryMiB: 8192, cores: 30, pods: 2 },
      { devices: 2, memoryMiB: 1, cores: 1, pods: 1 }
    ])
  })
  t.same(first.demand, { pendingPods: 3, satisfiable: 2, lastObserved: ago(5) })
  const same = decide({
    observedTime: ago(1),
    demand: pending(0),
    memory: { demand: { pendingPods: 0, satisfiable: 0, lastObserved: ago(300) } }
  })
  t.same(same.demand, { pendingPods: 0, satisfiable: 0, lastObserved: ago(300) })
})

t.test('demandFreeSince is set when no satisfiable Pod is pending and cleared when demand returns', async (t) => {
  const idle = decide({ cells: [cell(0, 'Ready', true)] })
  t.equal(idle.demandFreeSince, NOW_STAMP)
  const kept = decide({ cells: [cell(0, 'Ready', true)], memory: { demandFreeSince: ago(60) } })
  t.equal(kept.demandFreeSince, ago(60))
  const back = decide({ demand: pending(1), memory: { demandFreeSince: ago(60), lastScaleUpTime: ago(10) } })
  t.equal(back.demandFreeSince, undefined)
})

t.test('draining and deleting cells never count toward the base', async (t) => {
  const got = decide({
    cells: [cell(0, 'Ready'), cell(1, 'Ready'), cell(2, 'Draining')],
    demand: pending(1),
    config: { ...CONFIG, minReplicas: 0 }
  })
  t.equal(got.base, 2)
  t.equal(got.desiredReplicas, 3, 'the scale-up brings the number back up, so the draining cell returns to service')
})

t.test('ScalingActive: False while demand cannot be judged, True otherwise, with the reason', async (t) => {
  t.same(scalingActiveCondition(decide({ observed: false })), {
    type: 'ScalingActive',
    status: 'False',
    reason: 'Unknown',
    message: 'Demand is unknown (the workload cluster is unobserved); keeping 2 cell(s).'
  })
  t.equal(scalingActiveCondition(decide({ cells: [], demand: pending(1) })).status, 'False')
  t.equal(scalingActiveCondition(decide({ demand: pending(1) })).status, 'True')
})

t.test('a stabilization window ending is the next deadline', async (t) => {
  const got = decide({ demand: pending(1), memory: { lastScaleUpTime: ago(500), desiredReplicas: 3 } })
  t.same(autoscaleDeadline(got, CONFIG, NOW), new Date(NOW.getTime() + 100_000))
  t.equal(autoscaleDeadline(decide(), CONFIG, NOW), undefined)
})
