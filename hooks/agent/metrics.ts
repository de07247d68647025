/**
 * The agent's Prometheus metrics (docs/workload.md, "The agent process"): whether each CellNodeSet's
 * workload cluster is reachable, how long passes take, what the agent wrote to Nodes, and what
 * went wrong, by reason.
 */
import type { Counter, Gauge, Histogram, Registry } from 'prom-client'
import { metricRegistry } from '../server/metrics.ts'

/** The agent's metrics and their registry. */
export interface AgentMetrics {
  registry: Registry
  reachable: Gauge<'namespace' | 'name'>
  passSeconds: Histogram
  nodeWrites: Counter<'action'>
  errors: Counter<'reason'>
  leader: Gauge
}

/** A fresh registry; `processMetrics` adds Node's default process metrics. */
export function createAgentMetrics(processMetrics = false): AgentMetrics {
  const metrics = metricRegistry(processMetrics ? 'gpuhooks_workload_' : undefined)
  return {
    registry: metrics.registry,
    reachable: metrics.gauge(
      'gpuhooks_workload_reachable',
      '1 when the last pass of a CellNodeSet read its workload cluster, 0 otherwise.',
      ['namespace', 'name']
    ),
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
      'Failures, by reason (CredentialInvalid, Forbidden, Unreachable, NodeWrite, NodeConflict, StatusWrite, FinalizerWrite, ...).',
      ['reason']
    ),
    leader: metrics.gauge('gpuhooks_workload_leader', '1 while this replica holds the leader Lease and acts.')
  }
}
