/**
 * The agent's Prometheus metrics (docs/workload.md, "The agent process"; docs/observability.md): per
 * CellNodeSet whether its workload cluster is reachable and why not, how long passes take, what
 * the agent wrote to Nodes, what went wrong, the Events it wrote; and per cell pool its cells by
 * phase, desired size, demand and capacity (pool-gauges.ts).
 *
 * The per-CellNodeSet and per-pool series are the leader's: a replica that stops leading drops
 * them all ({@link AgentMetrics.clearServed}), and a pool that is gone, or no longer served,
 * loses its own ({@link AgentMetrics.setPool} with undefined). The standby exports only its own
 * process figures and `gpuhooks_workload_leader` 0.
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { REACHABLE_REASONS } from '../../api/cellnodeset.ts'
import { CELL_PHASES } from '../../api/gpucellpool.ts'
import { metricRegistry } from '../../metric-registry.ts'
import type { PoolGauges } from '../nodeset/decide/pool-gauges.ts'

type PoolLabel = 'namespace' | 'pool'

/** The agent's metrics and their registry. */
export interface AgentMetrics {
  registry: Registry
  reachable: Gauge<'namespace' | 'name'>
  passSeconds: Histogram
  nodeWrites: Counter<'action'>
  errors: Counter<'reason'>
  leader: Gauge
  events: Counter<'reason' | 'result'>
  /** The activity controller of Instances (hooks/agent/activity). */
  activity: {
    querySeconds: Histogram
    queryFailures: Counter
    instances: Gauge<'state'>
    statusWrites: Counter
    stops: Counter<'reason'>
    stopsIgnored: Counter
  }
  /** Sets the workload cluster's reachability of one CellNodeSet (every reason written, the current one 1); undefined drops it. */
  setReachable(namespace: string, name: string, reason: string | undefined): void
  /** Sets every series of one pool to `gauges`, dropping what it no longer has; undefined drops them all. */
  setPool(namespace: string, pool: string, gauges: PoolGauges | undefined): void
  /** Drops every per-CellNodeSet and per-pool series (leadership lost). */
  clearServed(): void
}

/** A fresh registry; `processMetrics` adds Node's default process metrics. */
export function createAgentMetrics(processMetrics = false): AgentMetrics {
  const metrics = metricRegistry(processMetrics ? 'gpuhooks_workload_' : undefined)
  const reachable = metrics.gauge<'namespace' | 'name'>(
    'gpuhooks_workload_reachable',
    '1 when the last pass of a CellNodeSet read its workload cluster, 0 otherwise.',
    ['namespace', 'name']
  )
  const reachableReason = metrics.gauge<'namespace' | 'name' | 'reason'>(
    'gpuhooks_workload_reachable_reason',
    "The reason of a CellNodeSet's Reachable condition after the last pass: 1 for it, 0 for the others (Reachable, CredentialInvalid, Forbidden, Unreachable).",
    ['namespace', 'name', 'reason']
  )
  const perPool = (name: string, help: string): Gauge<PoolLabel> => metrics.gauge<PoolLabel>(name, help, ['namespace', 'pool'])
  const pool = {
    cells: metrics.gauge<PoolLabel | 'phase'>('gpuhooks_cellpool_cells', 'Cells of a GPUCellPool by phase (every phase, 0 when none).', [
      'namespace',
      'pool',
      'phase'
    ]),
    desired: perPool(
      'gpuhooks_cellpool_cells_desired',
      "The size a GPUCellPool is heading for (status.desiredReplicas: spec.replicas, or the autoscaler's decision)."
    ),
    exhausted: perPool(
      'gpuhooks_cellpool_replacement_exhausted',
      '1 when a GPUCellPool has stopped rebuilding failed cells (ReplacementExhausted) until its spec changes, else 0.'
    ),
    drainingSince: metrics.gauge<PoolLabel | 'cell'>(
      'gpuhooks_cellpool_cell_draining_since_timestamp_seconds',
      'When a cell in phase Draining entered it, Unix seconds (a series per draining cell).',
      ['namespace', 'pool', 'cell']
    ),
    drainTimeout: perPool('gpuhooks_cellpool_drain_timeout_seconds', "A GPUCellPool's spec.deletion.drainTimeout, seconds."),
    pendingPods: perPool(
      'gpuhooks_cellpool_demand_pending_pods',
      'Pending GPU Pods in the workload cluster that could run on a Node of the pool (status.demand.pendingPods).'
    ),
    satisfiablePods: perPool(
      'gpuhooks_cellpool_demand_satisfiable_pods',
      'Of the pending GPU Pods, those one cell could run (status.demand.satisfiable).'
    ),
    gpuPods: perPool('gpuhooks_cellpool_gpu_pods', "Pods holding a HAMi allocation on the pool's Nodes."),
    devices: perPool(
      'gpuhooks_cellpool_capacity_gpu_devices',
      "Healthy HAMi devices on the pool's Nodes that take new Pods (present, Ready, not cordoned)."
    ),
    memory: perPool(
      'gpuhooks_cellpool_capacity_gpu_memory_bytes',
      "Device memory of the healthy HAMi devices on the pool's Nodes that take new Pods, bytes."
    )
  }
  /** The draining cells each pool's series were last set for, so those that stopped draining are dropped. */
  const draining = new Map<string, Set<string>>()

  const optional = (gauge: Gauge<PoolLabel>, labels: Record<PoolLabel, string>, value: number | undefined): void => {
    if (value === undefined) gauge.remove(labels)
    else gauge.set(labels, value)
  }

  const activity = {
    querySeconds: metrics.histogram(
      'gpuhooks_activity_query_seconds',
      "Duration of the activity controller's one Prometheus query of a round.",
      [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
    ),
    queryFailures: metrics.counter(
      'gpuhooks_activity_query_failures_total',
      'Rounds whose Prometheus query failed (unreachable, an error, an answer too large or not a vector).'
    ),
    instances: metrics.gauge<'state'>(
      'gpuhooks_activity_instances',
      'InstanceActivities by what the last round saw: active, idle, noSeries, unreachable, podChanged.',
      ['state']
    ),
    statusWrites: metrics.counter('gpuhooks_activity_status_writes_total', 'InstanceActivity status writes.'),
    stops: metrics.counter<'reason'>(
      'gpuhooks_activity_stops_total',
      'Instances the agent stopped, by Event reason (IdleStopped, MaxRunDurationReached).',
      ['reason']
    ),
    stopsIgnored: metrics.counter(
      'gpuhooks_activity_stops_ignored_total',
      'Stop requests left alone: the Instance or its Pod is not the one the request was made for.'
    )
  }

  return {
    registry: metrics.registry,
    reachable,
    passSeconds: metrics.histogram(
      'gpuhooks_workload_pass_seconds',
      'Duration of one pass for one CellNodeSet: snapshot, actions, status.',
      [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]
    ),
    nodeWrites: metrics.counter('gpuhooks_workload_node_writes_total', 'Writes to workload cluster Nodes, by action (patch, delete).', [
      'action'
    ]),
    errors: metrics.counter(
      'gpuhooks_workload_errors_total',
      'Failures, by reason (CredentialInvalid, Forbidden, Unreachable, NodeWrite, NodeConflict, StatusWrite, FinalizerWrite, EventWrite, ...).',
      ['reason']
    ),
    leader: metrics.gauge('gpuhooks_workload_leader', '1 while this replica holds the leader Lease and acts.'),
    events: metrics.counter(
      'gpuhooks_workload_events_total',
      'Events about cell pools, by reason and result: created, counted (on the same Event written shortly before), limited (left out), failed.',
      ['reason', 'result']
    ),
    activity,

    setReachable(namespace, name, reason) {
      if (reason === undefined) reachable.remove({ namespace, name })
      else reachable.set({ namespace, name }, reason === 'Reachable' ? 1 : 0)
      for (const r of REACHABLE_REASONS) {
        if (reason === undefined) reachableReason.remove({ namespace, name, reason: r })
        else reachableReason.set({ namespace, name, reason: r }, r === reason ? 1 : 0)
      }
    },

    setPool(namespace, name, gauges) {
      const labels = { namespace, pool: name }
      const key = JSON.stringify([namespace, name])
      for (const phase of CELL_PHASES) {
        if (gauges === undefined) pool.cells.remove({ ...labels, phase })
        else pool.cells.set({ ...labels, phase }, gauges.cells[phase])
      }
      optional(pool.desired, labels, gauges?.desired)
      optional(pool.exhausted, labels, gauges?.replacementExhausted)
      optional(pool.drainTimeout, labels, gauges?.drainTimeoutSeconds)
      optional(pool.pendingPods, labels, gauges?.demand?.pendingPods)
      optional(pool.satisfiablePods, labels, gauges?.demand?.satisfiable)
      optional(pool.gpuPods, labels, gauges?.gpuPods)
      optional(pool.devices, labels, gauges?.capacity.devices)
      optional(pool.memory, labels, gauges?.capacity.memoryBytes)
      const now = new Set(gauges?.draining.map((d) => d.cell) ?? [])
      for (const cell of draining.get(key) ?? []) if (!now.has(cell)) pool.drainingSince.remove({ ...labels, cell })
      for (const d of gauges?.draining ?? []) pool.drainingSince.set({ ...labels, cell: d.cell }, d.sinceSeconds)
      if (now.size === 0) draining.delete(key)
      else draining.set(key, now)
    },

    clearServed() {
      activity.instances.reset()
      reachable.reset()
      reachableReason.reset()
      for (const gauge of Object.values(pool)) gauge.reset()
      draining.clear()
    }
  }
}
