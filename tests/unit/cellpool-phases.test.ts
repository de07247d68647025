/**
 * A cell's phase from its observed guest and CellNodeSet row, with budgets until the first Ready,
 * regressions, the guest's Failed as transient, and the observed/unobserved rule (docs/cellpool.md,
 * "Phases").
 */
import t from 'tap'
import type { CellNodeStatus } from '../../hooks/api/cellnodeset.ts'
import { nodeAddress, observedPhase } from '../../hooks/cellpool/cells/observed-phase.ts'
import { cellPhase } from '../../hooks/cellpool/cells/phases.ts'
import type { GuestView } from '../../hooks/cellpool/model/provisioner.ts'
import { workloadState } from '../../hooks/cellpool/request/workload.ts'
import { T0 as NOW, T0_STAMP as NOW_STAMP, ago, OBSERVED, UNOBSERVED } from './fixtures/cellpool.ts'
import type { PhaseConfig, PreviousCell } from '../../hooks/cellpool/model/cell.ts'

const CONFIG: PhaseConfig = {
  bootstrapReadyTimeoutSeconds: 900,
  capacityReadyTimeoutSeconds: 300,
  expectedDevices: 1,
  nodeIPFrom: 'routable'
}
const DEVICE = { id: 'GPU-0', type: 'A100', memoryMiB: 81920, cores: 100, healthy: true }

function guest(extra: Partial<GuestView> = {}): GuestView {
  return {
    name: 'p-0',
    uid: 'g1',
    phase: 'Running',
    devices: ['0000:3b:00.0'],
    hostNode: 'host-1',
    interfaces: [
      { name: 'primary', ip: '10.0.0.5' },
      { name: 'routable', ip: '192.0.2.10' }
    ],
    primaryIP: '10.0.0.5',
    conditions: [],
    deleting: false,
    templateHash: 'abc',
    ...extra
  }
}

function row(extra: Partial<CellNodeStatus> = {}): CellNodeStatus {
  return {
    name: 'p-0',
    present: true,
    instance: 'g1',
    live: true,
    ready: true,
    unschedulable: false,
    devices: [{ ...DEVICE }],
    registration: 'Parsed',
    allocations: { read: true, pods: 0 },
    ...extra
  }
}

function previous(extra: Partial<PreviousCell> = {}): PreviousCell {
  return {
    phase: 'Joining',
    reason: 'NodeNotRegistered',
    message: '',
    lastTransitionTime: ago(60),
    readyOnce: false,
    failureCount: 0,
    guestUID: 'g1',
    templateHash: 'abc',
    ...extra
  }
}

t.test('the phase observation gives, one row per rule of the phase table', async (t) => {
  // Each row gives what differs from a Running guest whose Node is Ready with one healthy device,
  // the workload cluster observed, and the cell Joining before.
  const rows: Array<{
    name: string
    given: Partial<Parameters<typeof observedPhase>[0]>
    expected: { phase: string; reason: string; paused?: boolean; nodeIP?: string }
  }> = [
    {
      name: 'no guest observed: Pending',
      given: { guest: undefined, row: undefined, previousPhase: undefined },
      expected: { phase: 'Pending', reason: 'GuestNotCreated' }
    },
    {
      name: 'no guest, a live Node of another VM under the name: Pending, NodeNameConflict',
      given: { guest: undefined, row: row({ instance: 'old', conflict: true }), previousPhase: undefined },
      expected: { phase: 'Pending', reason: 'NodeNameConflict' }
    },
    {
      name: 'no guest, a Node of an earlier VM that is not live: Pending, StaleNode',
      given: { guest: undefined, row: row({ instance: 'old', live: false }), previousPhase: undefined },
      expected: { phase: 'Pending', reason: 'StaleNode' }
    },
    {
      name: 'no guest while the workload cluster is unobserved: Pending with its clock stopped',
      given: { guest: undefined, row: undefined, workload: UNOBSERVED, previousPhase: undefined },
      expected: { phase: 'Pending', reason: 'WorkloadUnobserved', paused: true }
    },
    {
      name: 'no status.gpu.devices yet: AllocatingGPU',
      given: { guest: guest({ devices: [], phase: 'Scheduling' }), row: undefined, previousPhase: 'Pending' },
      expected: { phase: 'AllocatingGPU', reason: 'NoDevices' }
    },
    {
      name: 'devices bound, guest not Running: GuestProvisioning',
      given: { guest: guest({ phase: 'Scheduling' }), row: undefined, previousPhase: 'AllocatingGPU' },
      expected: { phase: 'GuestProvisioning', reason: 'GuestNotRunning' }
    },
    {
      name: 'Running without a node address: Booting',
      given: {
        guest: guest({ interfaces: [{ name: 'primary' }, { name: 'routable' }], primaryIP: undefined }),
        row: undefined,
        previousPhase: 'GuestProvisioning'
      },
      expected: { phase: 'Booting', reason: 'NoNodeAddress' }
    },
    {
      name: 'the nodeIPFrom interface without an IP falls back to primaryIP',
      given: { guest: guest({ interfaces: [{ name: 'routable' }] }), row: undefined, previousPhase: 'Booting' },
      expected: { phase: 'Joining', reason: 'NodeNotRegistered', nodeIP: '10.0.0.5' }
    },
    {
      name: 'no Node of this guest: Joining',
      given: { row: row({ present: false, instance: undefined }), previousPhase: 'Booting' },
      expected: { phase: 'Joining', reason: 'NodeNotRegistered', nodeIP: '192.0.2.10' }
    },
    {
      name: 'a row of another instance does not count; live: Joining, NodeNameConflict',
      given: { row: row({ instance: 'old' }) },
      expected: { phase: 'Joining', reason: 'NodeNameConflict', nodeIP: '192.0.2.10' }
    },
    {
      name: 'its fresh registration, no instance label yet, which the agent adopts: Joining, NodeAdopting',
      given: { row: row({ instance: '' }) },
      expected: { phase: 'Joining', reason: 'NodeAdopting', nodeIP: '192.0.2.10' }
    },
    {
      name: 'a live Node without an instance label that the agent refuses: Joining, NodeNameConflict',
      given: { row: row({ instance: '', conflict: true }) },
      expected: { phase: 'Joining', reason: 'NodeNameConflict', nodeIP: '192.0.2.10' }
    },
    {
      name: 'a row of another instance that is not live: Joining, StaleNode',
      given: { row: row({ instance: 'old', live: false }) },
      expected: { phase: 'Joining', reason: 'StaleNode', nodeIP: '192.0.2.10' }
    },
    {
      name: 'its Node is not Ready: Joining',
      given: { row: row({ ready: false }) },
      expected: { phase: 'Joining', reason: 'NodeNotReady', nodeIP: '192.0.2.10' }
    },
    {
      name: 'Node Ready, HAMi registered nothing: AwaitingGPUCapacity',
      given: { row: row({ devices: [], registration: 'Missing' }) },
      expected: { phase: 'AwaitingGPUCapacity', reason: 'TooFewDevices', nodeIP: '192.0.2.10' }
    },
    {
      name: 'Node Ready, the only device unhealthy: AwaitingGPUCapacity',
      given: { row: row({ devices: [{ ...DEVICE, healthy: false }] }) },
      expected: { phase: 'AwaitingGPUCapacity', reason: 'TooFewDevices', nodeIP: '192.0.2.10' }
    },
    {
      name: 'HAMi annotation in neither format: AwaitingGPUCapacity, RegistrationUnparseable',
      given: { row: row({ devices: [], registration: 'Unparseable' }) },
      expected: { phase: 'AwaitingGPUCapacity', reason: 'RegistrationUnparseable', nodeIP: '192.0.2.10' }
    },
    {
      name: 'fewer healthy devices than expectedDevicesPerCell: AwaitingGPUCapacity',
      given: { config: { ...CONFIG, expectedDevices: 2 } },
      expected: { phase: 'AwaitingGPUCapacity', reason: 'TooFewDevices', nodeIP: '192.0.2.10' }
    },
    {
      name: 'Running with an address, its Node Ready with enough healthy devices: Ready',
      given: { previousPhase: 'AwaitingGPUCapacity' },
      expected: { phase: 'Ready', reason: 'Ready', nodeIP: '192.0.2.10' }
    },
    {
      name: 'a guest reporting Failed keeps the earlier guest phase and shows its first non-True condition',
      given: {
        guest: guest({
          phase: 'Failed',
          conditions: [
            { type: 'Scheduled', status: 'True' },
            { type: 'ImageReady', status: 'False', reason: 'ImageNotReady', message: 'SwiftImage gpu-noble is importing' }
          ]
        }),
        row: undefined,
        previousPhase: 'GuestProvisioning'
      },
      expected: { phase: 'GuestProvisioning', reason: 'ImageNotReady' }
    },
    {
      name: 'a guest reporting Failed before devices are bound stays AllocatingGPU',
      given: {
        guest: guest({ phase: 'Failed', devices: [], conditions: [{ type: 'SeedReady', status: 'False', reason: 'SeedProfileMissing' }] }),
        row: undefined,
        previousPhase: 'Pending'
      },
      expected: { phase: 'AllocatingGPU', reason: 'SeedProfileMissing' }
    },
    {
      name: 'unobserved: a Ready cell keeps Ready with its clock stopped',
      given: { row: row({ ready: false }), workload: UNOBSERVED, previousPhase: 'Ready' },
      expected: { phase: 'Ready', reason: 'WorkloadUnobserved', paused: true, nodeIP: '192.0.2.10' }
    },
    {
      name: 'unobserved: AwaitingGPUCapacity keeps its phase',
      given: { row: undefined, workload: UNOBSERVED, previousPhase: 'AwaitingGPUCapacity' },
      expected: { phase: 'AwaitingGPUCapacity', reason: 'WorkloadUnobserved', paused: true, nodeIP: '192.0.2.10' }
    }
  ]
  for (const r of rows) {
    t.test(r.name, async (t) => {
      const got = observedPhase({ guest: guest(), row: row(), workload: OBSERVED, config: CONFIG, previousPhase: 'Joining', ...r.given })
      t.equal(got.phase, r.expected.phase)
      t.equal(got.reason, r.expected.reason)
      t.equal(got.paused, r.expected.paused ?? false, 'clock stopped or running')
      t.equal(got.nodeIP, r.expected.nodeIP)
      t.type(got.message, 'string')
      t.not(got.message, '')
    })
  }
})

t.test('the guest Failed message names the condition the guest gives', async (t) => {
  const got = observedPhase({
    guest: guest({
      phase: 'Failed',
      conditions: [{ type: 'ImageReady', status: 'False', reason: 'ImageNotReady', message: 'SwiftImage gpu-noble is importing' }]
    }),
    row: undefined,
    workload: OBSERVED,
    config: CONFIG,
    previousPhase: 'Booting'
  })
  t.equal(got.message, 'The guest reports Failed: SwiftImage gpu-noble is importing.')
})

t.test('node address: the nodeIPFrom interface first, else primaryIP', async (t) => {
  t.equal(nodeAddress(guest(), 'routable'), '192.0.2.10')
  t.equal(nodeAddress(guest(), 'missing'), '10.0.0.5')
  t.equal(nodeAddress(guest(), undefined), '10.0.0.5')
  t.equal(nodeAddress(guest({ primaryIP: undefined, interfaces: [] }), 'routable'), undefined)
})

const phaseOf = (given: Partial<Parameters<typeof cellPhase>[0]>) =>
  cellPhase({ guest: guest(), row: row(), workload: OBSERVED, config: CONFIG, previous: undefined, now: NOW, ...given })

t.test('budgets until the first Ready', async (t) => {
  t.test('bootstrap.readyTimeout: Joining fails when it outlives 15m', async (t) => {
    const within = phaseOf({ row: undefined, previous: previous({ lastTransitionTime: ago(899) }) })
    t.equal(within.phase, 'Joining')
    t.same(within.deadline, new Date(NOW.getTime() + 1000), 'the deadline is 15m after the transition')
    const over = phaseOf({ row: undefined, previous: previous({ lastTransitionTime: ago(900) }) })
    t.equal(over.phase, 'Failed')
    t.equal(over.reason, 'ReadyTimeout')
    t.equal(over.failedNow, true)
    t.equal(over.lastTransitionTime, NOW_STAMP)
  })
  t.test('bootstrap.readyTimeout applies to AllocatingGPU too', async (t) => {
    const over = phaseOf({ guest: guest({ devices: [] }), previous: previous({ phase: 'AllocatingGPU', lastTransitionTime: ago(901) }) })
    t.equal(over.phase, 'Failed')
    t.equal(over.reason, 'ReadyTimeout')
  })
  t.test('capacity.readyTimeout: AwaitingGPUCapacity fails after 5m', async (t) => {
    const over = phaseOf({ row: row({ devices: [] }), previous: previous({ phase: 'AwaitingGPUCapacity', lastTransitionTime: ago(300) }) })
    t.equal(over.phase, 'Failed')
    t.equal(over.reason, 'CapacityTimeout')
    const within = phaseOf({
      row: row({ devices: [] }),
      previous: previous({ phase: 'AwaitingGPUCapacity', lastTransitionTime: ago(299) })
    })
    t.equal(within.phase, 'AwaitingGPUCapacity')
  })
  t.test('a new phase starts its own budget', async (t) => {
    const moved = phaseOf({ row: row({ devices: [] }), previous: previous({ phase: 'Joining', lastTransitionTime: ago(3600) }) })
    t.equal(moved.phase, 'AwaitingGPUCapacity')
    t.equal(moved.lastTransitionTime, NOW_STAMP)
    t.same(moved.deadline, new Date(NOW.getTime() + 300_000))
  })
  t.test('the transition time stays while the phase stays', async (t) => {
    const same = phaseOf({ row: undefined, previous: previous({ lastTransitionTime: ago(60) }) })
    t.equal(same.lastTransitionTime, ago(60))
  })
  t.test('a guest reporting Failed does not fail the cell; its budget does', async (t) => {
    const failedGuest = guest({ phase: 'Failed', conditions: [{ type: 'ImageReady', status: 'False', reason: 'ImageNotReady' }] })
    const within = phaseOf({ guest: failedGuest, previous: previous({ phase: 'GuestProvisioning', lastTransitionTime: ago(600) }) })
    t.equal(within.phase, 'GuestProvisioning')
    t.equal(within.lastTransitionTime, ago(600), 'the clock keeps running from the same start')
    const over = phaseOf({ guest: failedGuest, previous: previous({ phase: 'GuestProvisioning', lastTransitionTime: ago(900) }) })
    t.equal(over.phase, 'Failed')
  })
  t.test('a cell queued for a machine has no budget; once not queued, Pending has its own', async (t) => {
    const queued = phaseOf({
      guest: undefined,
      row: undefined,
      previous: previous({ phase: 'Pending', reason: 'MachineQueued', lastTransitionTime: ago(3600) })
    })
    t.same([queued.phase, queued.lastTransitionTime, queued.deadline], ['Pending', ago(3600), undefined], 'queued an hour: not failed')
    const waited = phaseOf({
      guest: undefined,
      row: undefined,
      previous: previous({ phase: 'Pending', reason: 'GuestNotCreated', lastTransitionTime: ago(900) })
    })
    t.same([waited.phase, waited.reason], ['Failed', 'ReadyTimeout'], 'Pending without a machine outside the queue keeps its budget')
  })
  t.test('a Failed cell stays Failed', async (t) => {
    const got = phaseOf({ previous: previous({ phase: 'Failed', reason: 'ReadyTimeout', message: 'x', lastTransitionTime: ago(10) }) })
    t.equal(got.phase, 'Failed')
    t.equal(got.reason, 'ReadyTimeout')
    t.equal(got.failedNow, false)
    t.equal(got.lastTransitionTime, ago(10))
  })
})

t.test('regressions: a cell that was Ready shows the earlier phase, Regressed, and never fails', async (t) => {
  const got = phaseOf({
    row: row({ ready: false }),
    previous: previous({ phase: 'Ready', readyOnce: true, lastTransitionTime: ago(86400) })
  })
  t.equal(got.phase, 'Joining')
  t.equal(got.reason, 'Regressed')
  t.equal(got.readyOnce, true)
  t.equal(got.deadline, undefined, 'no budget')
  const later = phaseOf({
    row: row({ ready: false }),
    previous: previous({ phase: 'Joining', reason: 'Regressed', readyOnce: true, lastTransitionTime: ago(86400) })
  })
  t.equal(later.phase, 'Joining', 'a day later still not failed')
  const capacity = phaseOf({ row: row({ devices: [] }), previous: previous({ phase: 'Ready', readyOnce: true }) })
  t.equal(capacity.phase, 'AwaitingGPUCapacity')
  t.equal(capacity.reason, 'Regressed')
  const restarting = phaseOf({ guest: guest({ phase: 'Pending' }), previous: previous({ phase: 'Ready', readyOnce: true }) })
  t.equal(restarting.phase, 'GuestProvisioning')
  t.equal(restarting.reason, 'Regressed')
})

t.test('the first Ready sets readyOnce', async (t) => {
  const got = phaseOf({ previous: previous({ phase: 'AwaitingGPUCapacity' }) })
  t.equal(got.phase, 'Ready')
  t.equal(got.readyOnce, true)
  t.equal(got.lastTransitionTime, NOW_STAMP)
})

t.test('an agent outage does not fail cells: Joining and AwaitingGPUCapacity clocks stop', async (t) => {
  const paused = phaseOf({ workload: UNOBSERVED, row: undefined, previous: previous({ phase: 'Joining', lastTransitionTime: ago(3600) }) })
  t.equal(paused.phase, 'Joining')
  t.equal(paused.reason, 'WorkloadUnobserved')
  t.equal(paused.lastTransitionTime, NOW_STAMP, 'the pause is a transition')
  t.equal(paused.deadline, undefined)
  const stillPaused = phaseOf({
    workload: UNOBSERVED,
    row: undefined,
    previous: previous({ phase: 'Joining', reason: 'WorkloadUnobserved', lastTransitionTime: ago(7200) })
  })
  t.equal(stillPaused.phase, 'Joining', 'two hours unobserved and not failed')
  t.equal(stillPaused.lastTransitionTime, ago(7200))
  const resumed = phaseOf({
    row: undefined,
    previous: previous({ phase: 'Joining', reason: 'WorkloadUnobserved', lastTransitionTime: ago(7200) })
  })
  t.equal(resumed.phase, 'Joining')
  t.equal(resumed.lastTransitionTime, NOW_STAMP, 'the budget runs again from the end of the outage')
  const capacity = phaseOf({
    workload: UNOBSERVED,
    previous: previous({ phase: 'AwaitingGPUCapacity', reason: 'WorkloadUnobserved', lastTransitionTime: ago(7200) })
  })
  t.equal(capacity.phase, 'AwaitingGPUCapacity')
})

t.test('the observed/unobserved rule', async (t) => {
  const reachable = { status: 'True', reason: 'Reachable', message: 'ok' }
  const base = { hasStatus: true, reachable, observedTime: ago(30), observedGeneration: 3, generation: 3, now: NOW }
  t.same(workloadState(base), { observed: true, generationMatched: true, reason: 'Reachable', message: 'ok' })
  t.equal(workloadState({ ...base, observedTime: ago(119) }).observed, true, 'observedTime less than 2 minutes old')
  const stale = workloadState({ ...base, observedTime: ago(120) })
  t.equal(stale.observed, false)
  t.equal(stale.reason, 'Stale')
  const none = workloadState({ ...base, hasStatus: false, reachable: undefined, observedTime: undefined })
  t.equal(none.observed, false)
  t.equal(none.reason, 'NotObserved')
  const unreachable = workloadState({ ...base, reachable: { status: 'False', reason: 'Forbidden', message: '403' } })
  t.same(
    [unreachable.observed, unreachable.reason, unreachable.message],
    [false, 'Forbidden', '403'],
    'the CellNodeSet reason is passed on'
  )
  t.equal(workloadState({ ...base, observedGeneration: 2 }).generationMatched, false)
  t.equal(workloadState({ ...base, observedGeneration: 2 }).observed, true, 'observed even when the latest spec is not carried out yet')
  t.equal(workloadState({ ...base, observedTime: 'yesterday' }).reason, 'Stale', 'an unreadable time is stale')
})
