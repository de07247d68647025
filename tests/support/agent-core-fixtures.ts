/**
 * The small world the agent core's table tests share (tests/unit/agent-core.test.ts,
 * agent-record.test.ts): pool `pool-a` of uid `uid-pool-a`, its cell `pool-a-0` whose guest is
 * `uid-guest-0`, a clock, heartbeats, and builders of Nodes, entries, records and snapshots. Each
 * builder writes its object out; none runs code under test.
 */
import type { Action, CellNodeSetInput, NodeHeartbeats, ObservedNode, WorkloadSnapshot } from '../../hooks/agent/model/observed.ts'
import type { Applied, CellNode } from '../../hooks/api/cellnodeset.ts'

export const NOW = new Date('2026-11-30T12:00:00Z')
export const NOW_S = '2026-11-30T12:00:00Z'
export const MS = NOW.getTime()
export const POOL_UID = 'uid-pool-a'
export const GUEST = 'uid-guest-0'
export const MANAGED = 'cells.kubeswift.io/managed'

/** Heartbeats of a kubelet that renewed its Lease 10 s ago, watched for an hour. */
export const LIVE: NodeHeartbeats = { watchedSince: MS - 3_600_000, lease: { value: 'r', changedAt: MS - 10_000 } }
/** Heartbeats of a kubelet whose Lease has not changed for 5 minutes. */
export const DEAD: NodeHeartbeats = { watchedSince: MS - 3_600_000, lease: { value: 'r', changedAt: MS - 300_000 } }

/** The cell labels of a cell's Node once the agent has written them. */
export const cellLabels = (instance: string, name = 'pool-a-0', index = '0'): Record<string, string> => ({
  'cells.kubeswift.io/cell': name,
  'cells.kubeswift.io/cell-index': index,
  'cells.kubeswift.io/instance': instance,
  'cells.kubeswift.io/pool': 'pool-a',
  'cells.kubeswift.io/pool-uid': POOL_UID
})
export const CELL_KEYS = Object.keys(cellLabels('x')).sort()

/** The agent's record of pool-a-0 as an earlier pass stored it: by default, the cell labels. */
export const record = (m: Partial<Applied> = {}): Applied => ({
  uid: 'uid-pool-a-0',
  instance: GUEST,
  labels: CELL_KEYS,
  annotations: [],
  taints: [],
  cordoned: false,
  ...m
})

export interface NodeSpec {
  name?: string
  uid?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
  taints?: unknown[]
  unschedulable?: boolean
  providerID?: string
  ready?: boolean
  beats?: NodeHeartbeats
  pods?: unknown[]
  podsRead?: boolean
}

/** A Node as the snapshot lists it; by default pool-a-0, live and Ready, with the cell labels. */
export function node(n: NodeSpec = {}): ObservedNode {
  const spec: Record<string, unknown> = {}
  if (n.taints !== undefined) spec.taints = n.taints
  if (n.unschedulable !== undefined) spec.unschedulable = n.unschedulable
  if (n.providerID !== undefined) spec.providerID = n.providerID
  const name = n.name ?? 'pool-a-0'
  return {
    node: {
      metadata: {
        name,
        uid: n.uid ?? `uid-${name}`,
        resourceVersion: '7',
        labels: n.labels ?? cellLabels(GUEST),
        annotations: n.annotations ?? {}
      },
      spec,
      status: { conditions: [{ type: 'Ready', status: n.ready === false ? 'False' : 'True' }] }
    },
    beats: n.beats ?? LIVE,
    pods: { read: n.podsRead ?? true, items: n.pods ?? [] }
  }
}

/** The spec entry of pool-a-0. */
export const entry = (e: Partial<CellNode> = {}): CellNode => ({
  name: 'pool-a-0',
  instance: GUEST,
  labels: {},
  annotations: {},
  taints: [],
  cordon: false,
  ...e
})

/** The CellNodeSet of pool-a with `nodes` in its spec. */
export function cns(nodes: CellNode[], more: Partial<CellNodeSetInput> = {}): CellNodeSetInput {
  return {
    metadata: { name: 'pool-a', namespace: 'ns', generation: 3, finalizers: ['cells.kubeswift.io/workload-nodes'] },
    spec: { kubeconfigSecretRef: { name: 'wl', key: 'value' }, poolUID: POOL_UID, nodes },
    ...more
  }
}

/** A CellNodeSet whose stored status holds `applied` as the record of pool-a-0. */
export const recorded = (nodes: CellNode[], applied: Applied): CellNodeSetInput =>
  cns(nodes, { status: { nodes: [{ name: 'pool-a-0', present: true, instance: GUEST, applied }] } })

/** A snapshot of a reachable workload cluster. */
export const snap = (nodes: ObservedNode[], unbound: unknown[] = [], unboundRead = true): WorkloadSnapshot => ({
  reachability: { reason: 'Reachable', message: '' },
  nodes,
  unbound: { read: unboundRead, items: unbound }
})

/** The actions that write in the workload cluster (the finalizer's left out). */
export const nodeActions = (actions: Action[]): Action[] => actions.filter((a) => a.type !== 'addFinalizer')
