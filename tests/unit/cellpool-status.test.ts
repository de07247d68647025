/**
 * The pool's status (docs/cellpool.md, "Status"; docs/api.md): counts, selector, one row per cell, the five
 * conditions, and timestamps that move only when what they describe changes.
 */
import t from 'tap'
import { Value } from '@sinclair/typebox/value'
import { FormatRegistry } from '@sinclair/typebox'
import { GPUCellPoolStatusSchema } from '../../hooks/api/gpucellpool.ts'
import {
  cellStatusRow,
  poolSelector,
  poolStatus,
  readyCondition,
  reachableCondition,
  resyncAfter,
  type PoolStatusInput
} from '../../hooks/cellpool/answer/status.ts'
import type { CellRow } from '../../hooks/cellpool/model/answer.ts'
import type { AutoscaleResult } from '../../hooks/cellpool/model/autoscale.ts'

if (!FormatRegistry.Has('date-time'))
  FormatRegistry.Set('date-time', (v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v))

const NOW = new Date('2026-03-01T10:00:00.000Z')
const EARLIER = '2026-02-01T00:00:00Z'

function row(index: number, phase: CellRow['phase'], extra: Partial<CellRow> = {}): CellRow {
  return {
    name: `p-${index}`,
    index,
    phase,
    reason: phase,
    message: 'm',
    lastTransitionTime: EARLIER,
    readyOnce: phase === 'Ready',
    failureCount: 0,
    owned: true,
    ...extra
  }
}

function input(extra: Partial<PoolStatusInput> = {}): PoolStatusInput {
  return {
    pool: 'p',
    generation: 4,
    previousConditions: undefined,
    now: NOW,
    rows: [
      row(0, 'Ready'),
      row(1, 'Joining'),
      row(2, 'Draining', { readyOnce: true }),
      row(3, 'Failed', { owned: false, failureCount: 2 }),
      row(4, 'Ready', { readyOnce: true }),
      row(5, 'Joining', { readyOnce: true, reason: 'Regressed' })
    ],
    desired: 4,
    progressing: { type: 'Progressing', status: 'True', reason: 'CellsChanging', message: 'Creating p-1.' },
    updated: { type: 'Updated', status: 'True', reason: 'UpToDate', message: 'ok' },
    workload: { observed: true, generationMatched: true, reason: 'Reachable', message: 'ok' },
    autoscale: undefined,
    readProblems: [],
    ...extra
  }
}

t.test('counts over the cells', async (t) => {
  const s = poolStatus(input())
  t.same([s.replicas, s.readyCells, s.creatingCells, s.drainingCells, s.failedCells, s.desiredReplicas], [5, 2, 1, 1, 1, 4])
  t.equal(s.selector, 'cells.kubeswift.io/pool=p')
  t.equal(poolSelector('inference'), 'cells.kubeswift.io/pool=inference')
  t.equal(s.observedGeneration, 4)
})

t.test('one row per cell, in index order, absent fields left out', async (t) => {
  const s = poolStatus(input({ rows: [row(1, 'Joining'), row(0, 'Ready', { guestUID: 'u', nodeIP: '192.0.2.1', devices: [] })] }))
  t.same(s.cells, [
    {
      name: 'p-0',
      index: 0,
      phase: 'Ready',
      reason: 'Ready',
      message: 'm',
      guestUID: 'u',
      nodeIP: '192.0.2.1',
      failureCount: 0,
      readyOnce: true,
      lastTransitionTime: EARLIER
    },
    {
      name: 'p-1',
      index: 1,
      phase: 'Joining',
      reason: 'Joining',
      message: 'm',
      failureCount: 0,
      readyOnce: false,
      lastTransitionTime: EARLIER
    }
  ])
  t.same(Object.keys(cellStatusRow(row(0, 'Ready', { templateHash: 'h', hostNode: 'n', nodeName: 'p-0', devices: ['a'] }))), [
    'name',
    'index',
    'phase',
    'reason',
    'message',
    'hostNode',
    'devices',
    'nodeName',
    'templateHash',
    'failureCount',
    'readyOnce',
    'lastTransitionTime'
  ])
})

t.test('condition Ready: readyCells against the desired number; ScaledToZero at 0', async (t) => {
  t.same(readyCondition(2, 2), { type: 'Ready', status: 'True', reason: 'CellsReady', message: '2 of 2 desired cell(s) are Ready.' })
  t.same(readyCondition(1, 2), { type: 'Ready', status: 'False', reason: 'CellsNotReady', message: '1 of 2 desired cell(s) are Ready.' })
  t.same(readyCondition(0, 0), { type: 'Ready', status: 'True', reason: 'ScaledToZero', message: 'The pool is scaled to zero cells.' })
})

t.test('condition WorkloadClusterReachable carries the reason of the observed/unobserved rule', async (t) => {
  t.same(reachableCondition({ observed: false, generationMatched: false, reason: 'Stale', message: 'old' }), {
    type: 'WorkloadClusterReachable',
    status: 'False',
    reason: 'Stale',
    message: 'old'
  })
})

t.test('conditions: four, plus ScalingActive with autoscaling', async (t) => {
  t.same(
    poolStatus(input()).conditions?.map((c) => c.type),
    ['Ready', 'Progressing', 'Updated', 'WorkloadClusterReachable']
  )
  const autoscale: AutoscaleResult = {
    desiredReplicas: 3,
    reason: 'ScaledUp',
    message: 'up',
    base: 2,
    floor: 1,
    ceiling: 4,
    lastScaleUpTime: EARLIER,
    demand: { pendingPods: 1, satisfiable: 1 },
    cellDeviceShape: { memoryMiB: 1, cores: 2 }
  }
  const s = poolStatus(input({ autoscale }))
  t.same(
    s.conditions?.map((c) => c.type),
    ['Ready', 'Progressing', 'Updated', 'WorkloadClusterReachable', 'ScalingActive']
  )
  t.same([s.lastScaleUpTime, s.demand, s.cellDeviceShape], [EARLIER, { pendingPods: 1, satisfiable: 1 }, { memoryMiB: 1, cores: 2 }])
})

t.test('a condition keeps its transition time while its status stays', async (t) => {
  const previous = [
    { type: 'Ready', status: 'False', reason: 'CellsNotReady', message: 'x', lastTransitionTime: EARLIER },
    { type: 'Progressing', status: 'False', reason: 'Settled', message: 'y', lastTransitionTime: EARLIER }
  ]
  const s = poolStatus(input({ previousConditions: previous }))
  t.equal(s.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime, EARLIER)
  t.equal(s.conditions?.find((c) => c.type === 'Progressing')?.lastTransitionTime, '2026-03-01T10:00:00Z')
})

t.test('what could not be read is named in the Progressing message', async (t) => {
  const s = poolStatus(input({ readProblems: ['SwiftGuest p-0: status is a string, not an object'] }))
  t.equal(
    s.conditions?.find((c) => c.type === 'Progressing')?.message,
    'Creating p-1. Unreadable: SwiftGuest p-0: status is a string, not an object.'
  )
})

t.test('the status fits the CRD status schema', async (t) => {
  const s = poolStatus(
    input({ autoscale: { desiredReplicas: 3, reason: 'ScaledUp', message: 'up', base: 2, floor: 1, ceiling: 4, lastScaleUpTime: EARLIER } })
  )
  t.same(
    [...Value.Errors(GPUCellPoolStatusSchema, s)].map((e) => `${e.path} ${e.message}`),
    []
  )
})

t.test('resyncAfterSeconds: the nearest deadline, rounded up', async (t) => {
  t.equal(resyncAfter([new Date(NOW.getTime() + 90_500), undefined, new Date(NOW.getTime() + 30_000)], NOW), 30)
  t.equal(resyncAfter([new Date(NOW.getTime() + 1500)], NOW), 2)
  t.equal(resyncAfter([new Date(NOW.getTime() - 5000)], NOW), 1, 'a passed deadline asks for a sync at once')
  t.equal(resyncAfter([undefined], NOW), undefined)
})
