/**
 * The per-pool gauges the agent exports, read from a GPUCellPool's status and its CellNodeSet's
 * status: every phase counted (0 when none), a figure the status lacks left absent, capacity only
 * from Nodes that take new Pods, and a pool of any stored shape read without a throw.
 */
import t from 'tap'
import fc from 'fast-check'
import type { CellNodeSetStatus, CellNodeStatus } from '../../hooks/api/cellnodeset.ts'
import { poolGauges } from '../../hooks/agent/nodeset/decide/pool-gauges.ts'

const GiB = 1024 * 1024 * 1024
const noCells = {
  Pending: 0,
  AllocatingGPU: 0,
  GuestProvisioning: 0,
  Booting: 0,
  Joining: 0,
  AwaitingGPUCapacity: 0,
  Ready: 0,
  Draining: 0,
  Deleting: 0,
  Failed: 0
}
const device = (id: string, memoryMiB: number, healthy = true) => ({ id, type: 'NVIDIA A100', memoryMiB, cores: 100, healthy })
const row = (name: string, more: Partial<CellNodeStatus> = {}): CellNodeStatus => ({
  name,
  present: true,
  ready: true,
  unschedulable: false,
  devices: [device(`${name}-gpu`, 81920)],
  allocations: { read: true, pods: 1 },
  ...more
})

t.test('cells by phase, desired, demand and the drain timeout, from the pool', async (t) => {
  const pool = {
    spec: { deletion: { drainTimeout: '1h30m' } },
    status: {
      desiredReplicas: 4,
      demand: { pendingPods: 3, satisfiable: 2, lastObserved: '2026-06-01T00:00:00Z' },
      cells: [
        { name: 'p-0', phase: 'Ready' },
        { name: 'p-1', phase: 'Ready' },
        { name: 'p-2', phase: 'Draining', lastTransitionTime: '2026-06-01T00:00:10Z' },
        { name: 'p-3', phase: 'Joining' }
      ]
    }
  }
  t.same(poolGauges(pool, undefined), {
    cells: { ...noCells, Ready: 2, Draining: 1, Joining: 1 },
    desired: 4,
    replacementExhausted: 0,
    draining: [{ cell: 'p-2', sinceSeconds: Date.parse('2026-06-01T00:00:10Z') / 1000 }],
    drainTimeoutSeconds: 5400,
    demand: { pendingPods: 3, satisfiable: 2 },
    capacity: { devices: 0, memoryBytes: 0 }
  })
})

t.test('a pool without a status: every phase 0, no desired size, no demand; the drain timeout its default', async (t) => {
  t.same(poolGauges({ metadata: { name: 'p' }, spec: {} }, undefined), {
    cells: noCells,
    replacementExhausted: 0,
    draining: [],
    drainTimeoutSeconds: 600,
    capacity: { devices: 0, memoryBytes: 0 }
  })
})

t.test('ReplacementExhausted on a Failed cell, or on the pool as its Progressing reason', async (t) => {
  const cell = poolGauges({ status: { cells: [{ name: 'p-0', phase: 'Failed', reason: 'ReplacementExhausted' }] } }, undefined)
  t.equal(cell.replacementExhausted, 1)
  t.equal(cell.cells.Failed, 1)
  const pool = poolGauges(
    { status: { conditions: [{ type: 'Progressing', status: 'False', reason: 'ReplacementExhausted', message: 'm' }] } },
    undefined
  )
  t.equal(pool.replacementExhausted, 1)
  const otherFailure = poolGauges({ status: { cells: [{ name: 'p-0', phase: 'Failed', reason: 'Timeout' }] } }, undefined)
  t.equal(otherFailure.replacementExhausted, 0, 'a Failed cell waiting for its rebuild is not exhausted')
  const otherCondition = poolGauges({ status: { conditions: [{ type: 'Ready', reason: 'ReplacementExhausted' }] } }, undefined)
  t.equal(otherCondition.replacementExhausted, 0, 'only the Progressing condition says it')
})

t.test('capacity: healthy devices on present, Ready, uncordoned Nodes without conflict; GPU Pods where listed', async (t) => {
  const status: CellNodeSetStatus = {
    nodes: [
      row('p-0', { devices: [device('a', 81920), device('b', 81920, false)] }),
      row('p-1', { unschedulable: true, allocations: { read: true, pods: 2 } }),
      row('p-2', { ready: false }),
      row('p-3', { present: false, allocations: { read: true, pods: 5 } }),
      row('p-4', { conflict: true, allocations: { read: true, pods: 5 } }),
      row('p-5', { allocations: { read: false, pods: 0 } })
    ]
  }
  const gauges = poolGauges({}, status)
  t.same(gauges.capacity, { devices: 2, memoryBytes: 2 * 80 * GiB }, 'p-0 (its healthy device) and p-5')
  t.equal(gauges.gpuPods, 1 + 2 + 1, 'p-0, p-1 and p-2: the Pods on Nodes whose Pods were listed')
})

t.test('no Node whose Pods were listed: no GPU Pod count (absent, not 0)', async (t) => {
  t.equal(poolGauges({}, { nodes: [row('p-0', { allocations: { read: false, pods: 0 } })] }).gpuPods, undefined)
  t.equal(poolGauges({}, { nodes: [] }).gpuPods, undefined)
  t.equal(poolGauges({}, { nodes: [row('p-0', { allocations: { read: true, pods: 0 } })] }).gpuPods, 0)
})

t.test('fields of the wrong kind are left out, never guessed', async (t) => {
  const gauges = poolGauges(
    {
      spec: { deletion: { drainTimeout: 'soon' } },
      status: {
        desiredReplicas: -1,
        demand: { pendingPods: '3', satisfiable: 1 },
        cells: [
          { name: 'p-0', phase: 'Sleeping' },
          'p-1',
          { name: 'p-2', phase: 'Draining', lastTransitionTime: 'yesterday' },
          { phase: 'Draining', lastTransitionTime: '2026-06-01T00:00:00Z' }
        ],
        conditions: 'Progressing'
      }
    },
    undefined
  )
  t.same(gauges, {
    cells: { ...noCells, Draining: 2 },
    replacementExhausted: 0,
    draining: [],
    capacity: { devices: 0, memoryBytes: 0 }
  })
})

t.test('draining cells are listed by name, whatever the order of the status', async (t) => {
  const at = (s: number) => new Date(Date.parse('2026-06-01T00:00:00Z') + s * 1000).toISOString()
  const gauges = poolGauges(
    {
      status: {
        cells: [
          { name: 'p-9', phase: 'Draining', lastTransitionTime: at(9) },
          { name: 'p-10', phase: 'Draining', lastTransitionTime: at(10) },
          { name: 'p-1', phase: 'Draining', lastTransitionTime: at(1) }
        ]
      }
    },
    undefined
  )
  t.same(
    gauges.draining.map((d) => d.cell),
    ['p-1', 'p-10', 'p-9']
  )
})

t.test('any stored shape of a pool is read without a throw, every count a whole number at least 0', async () => {
  // The CellNodeSet status is the core's own (schema-read) decision; the pool is whatever is stored.
  const status: CellNodeSetStatus = { nodes: [row('p-0')] }
  fc.assert(
    fc.property(fc.anything(), (pool) => {
      const gauges = poolGauges(pool, status)
      return Object.values(gauges.cells).every((n) => Number.isSafeInteger(n) && n >= 0) && gauges.capacity.devices === 1
    }),
    { numRuns: 300 }
  )
  fc.assert(
    fc.property(
      fc.record({ status: fc.record({ cells: fc.array(fc.anything()), conditions: fc.anything(), demand: fc.anything() }) }),
      (pool) => {
        const gauges = poolGauges(pool, undefined)
        return Object.values(gauges.cells).reduce((a, b) => a + b, 0) <= pool.status.cells.length
      }
    ),
    { numRuns: 300 }
  )
})
