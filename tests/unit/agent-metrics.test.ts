/**
 * The agent's per-pool and per-CellNodeSet series as Prometheus reads them: every phase and
 * every reachability reason written, a figure the pool lacks absent, a cell that stops draining
 * or a pool that goes taking its series with it, and a replica that stands down exporting none.
 */
import t from 'tap'
import { createAgentMetrics } from '../../hooks/agent/runtime/metrics.ts'
import { poolGauges } from '../../hooks/agent/nodeset/decide/pool-gauges.ts'

/** The sample lines of the registry for `prefix`, without HELP and TYPE. */
async function samples(metrics: ReturnType<typeof createAgentMetrics>, prefix: string): Promise<string[]> {
  return (await metrics.registry.metrics())
    .split('\n')
    .filter((l) => l.startsWith(prefix))
    .sort()
}

const pool = (cells: { name: string; phase: string; lastTransitionTime?: string }[], desired?: number) => ({
  spec: { deletion: { drainTimeout: '5m' } },
  status: { cells, ...(desired === undefined ? {} : { desiredReplicas: desired }) }
})

t.test('one pool: every phase, its desired size, the drain timeout and its draining cell', async (t) => {
  const m = createAgentMetrics()
  m.setPool(
    'team-a',
    'a100',
    poolGauges(
      pool(
        [
          { name: 'a100-0', phase: 'Ready' },
          { name: 'a100-1', phase: 'Draining', lastTransitionTime: '2026-06-01T00:00:00Z' }
        ],
        2
      ),
      undefined
    )
  )
  t.same(
    await samples(m, 'gpuhooks_cellpool_'),
    [
      'gpuhooks_cellpool_capacity_gpu_devices{namespace="team-a",pool="a100"} 0',
      'gpuhooks_cellpool_capacity_gpu_memory_bytes{namespace="team-a",pool="a100"} 0',
      'gpuhooks_cellpool_cell_draining_since_timestamp_seconds{namespace="team-a",pool="a100",cell="a100-1"} 1780272000',
      'gpuhooks_cellpool_cells_desired{namespace="team-a",pool="a100"} 2',
      ...[
        'AllocatingGPU 0',
        'AwaitingGPUCapacity 0',
        'Booting 0',
        'Deleting 0',
        'Draining 1',
        'Failed 0',
        'GuestProvisioning 0',
        'Joining 0',
        'Pending 0',
        'Ready 1'
      ].map((p) => `gpuhooks_cellpool_cells{namespace="team-a",pool="a100",phase="${p.split(' ')[0]}"} ${p.split(' ')[1]}`),
      'gpuhooks_cellpool_drain_timeout_seconds{namespace="team-a",pool="a100"} 300',
      'gpuhooks_cellpool_replacement_exhausted{namespace="team-a",pool="a100"} 0'
    ].sort()
  )
})

t.test('a cell that stops draining and a figure the pool no longer has lose their series; other pools keep theirs', async (t) => {
  const m = createAgentMetrics()
  const draining = [{ name: 'a100-1', phase: 'Draining', lastTransitionTime: '2026-06-01T00:00:00Z' }]
  m.setPool('team-a', 'a100', poolGauges(pool(draining, 2), undefined))
  m.setPool('team-b', 'h100', poolGauges(pool(draining, 1), undefined))
  m.setPool('team-a', 'a100', poolGauges(pool([{ name: 'a100-1', phase: 'Deleting' }]), undefined))
  t.same(await samples(m, 'gpuhooks_cellpool_cell_draining_since_timestamp_seconds'), [
    'gpuhooks_cellpool_cell_draining_since_timestamp_seconds{namespace="team-b",pool="h100",cell="a100-1"} 1780272000'
  ])
  t.same(await samples(m, 'gpuhooks_cellpool_cells_desired'), ['gpuhooks_cellpool_cells_desired{namespace="team-b",pool="h100"} 1'])
})

t.test('a pool dropped loses every series; reachability of a CellNodeSet: every reason, then none once dropped', async (t) => {
  const m = createAgentMetrics()
  m.setPool(
    'team-a',
    'a100',
    poolGauges(pool([{ name: 'a100-0', phase: 'Draining', lastTransitionTime: '2026-06-01T00:00:00Z' }], 1), undefined)
  )
  m.setReachable('team-a', 'a100', 'CredentialInvalid')
  t.same(await samples(m, 'gpuhooks_workload_reachable'), [
    'gpuhooks_workload_reachable_reason{namespace="team-a",name="a100",reason="CredentialInvalid"} 1',
    'gpuhooks_workload_reachable_reason{namespace="team-a",name="a100",reason="Forbidden"} 0',
    'gpuhooks_workload_reachable_reason{namespace="team-a",name="a100",reason="Reachable"} 0',
    'gpuhooks_workload_reachable_reason{namespace="team-a",name="a100",reason="Unreachable"} 0',
    'gpuhooks_workload_reachable{namespace="team-a",name="a100"} 0'
  ])
  m.setPool('team-a', 'a100', undefined)
  m.setReachable('team-a', 'a100', undefined)
  t.same(await samples(m, 'gpuhooks_cellpool_'), [])
  t.same(await samples(m, 'gpuhooks_workload_reachable'), [])
})

t.test('standing down drops every served series and keeps the process figures', async (t) => {
  const m = createAgentMetrics()
  m.setPool('team-a', 'a100', poolGauges(pool([], 1), undefined))
  m.setReachable('team-a', 'a100', 'Reachable')
  m.leader.set(0)
  m.errors.inc({ reason: 'StatusWrite' })
  m.clearServed()
  t.same(await samples(m, 'gpuhooks_cellpool_'), [])
  t.same(await samples(m, 'gpuhooks_workload_reachable'), [])
  t.same(await samples(m, 'gpuhooks_workload_leader'), ['gpuhooks_workload_leader 0'])
  t.same(await samples(m, 'gpuhooks_workload_errors_total'), ['gpuhooks_workload_errors_total{reason="StatusWrite"} 1'])
  m.setPool(
    'team-a',
    'a100',
    poolGauges(pool([{ name: 'a100-0', phase: 'Draining', lastTransitionTime: '2026-06-01T00:00:00Z' }]), undefined)
  )
  t.equal((await samples(m, 'gpuhooks_cellpool_cell_draining_since')).length, 1, 'a new leader term exports again')
})
