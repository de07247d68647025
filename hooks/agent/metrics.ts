/**
 * The agent's Prometheus metrics (workload.md, "The agent process"): whether each CellNodeSet's
 * workload cluster is reachable, how long passes take, what the agent wrote to Nodes, and what
 * went wrong, by reason.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'

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
  const registry = new Registry()
  if (processMetrics) collectDefaultMetrics({ register: registry, prefix: 'gpuhooks_workload_' })
  return {
    registry,
    reachable: new Gauge({
      name: 'gpuhooks_workload_reachable',
      help: '1 when the last pass of a CellNodeSet read its workload cluster, 0 otherwise.',
      labelNames: ['namespace', 'name'],
      registers: [registry]
    }),
    passSeconds: new Histogram({
      name: 'gpuhooks_workload_pass_seconds',
      help: 'Duration of one pass for one CellNodeSet: snapshot, actions, status.',
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry]
    }),
    nodeWrites: new Counter({
      name: 'gpuhooks_workload_node_writes_total',
      help: 'Writes to workload cluster Nodes, by action (patch, delete).',
      labelNames: ['action'],
      registers: [registry]
    }),
    errors: new Counter({
      name: 'gpuhooks_workload_errors_total',
      help: 'Failures, by reason (CredentialInvalid, Forbidden, Unreachable, NodeWrite, NodeConflict, StatusWrite, FinalizerWrite, ...).',
      labelNames: ['reason'],
      registers: [registry]
    }),
    leader: new Gauge({
      name: 'gpuhooks_workload_leader',
      help: '1 while this replica holds the leader Lease and acts.',
      registers: [registry]
    })
  }
}
