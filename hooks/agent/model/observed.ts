/**
 * The records the CellNodeSet side of the agent shares (docs/workload.md, "What the agent does"):
 * what the snapshot layer observed of a workload cluster, the CellNodeSet as the core reads it,
 * and the decision the core returns. Types only: the floor every other room of the agent stands on.
 */
import type { CellNodeSetSpec, CellNodeSetStatus, ReachableReason, SweptNode } from '../../api/cellnodeset.ts'

/** A list the snapshot layer tried to read. */
export interface PodList {
  /** False when the list failed: nothing is known about these Pods. */
  read: boolean
  items: unknown[]
  /** The list stopped at a bound (AGENT_MAX_PENDING_PODS, the answer or pass bytes): more Pods may exist. */
  truncated?: boolean
}

/** One Node of the workload cluster as the snapshot saw it. */
export interface ObservedNode {
  /** The Node as JSON. */
  node: unknown
  /** What the liveness rule needs (agent clock). */
  beats: NodeHeartbeats
  /** Pods listed by `spec.nodeName=<node>`. */
  pods: PodList
  /** HAMi's DRA mode: the ResourceSlices of HAMi's driver listed by `spec.nodeName=<node>`. */
  slices?: PodList
}

/** What the snapshot layer read of DRA in the workload cluster, for a CellNodeSet with `spec.dra`. */
export interface DraSnapshot {
  /** The ResourceClaims of every namespace, in pages, to a bound. */
  claims: PodList
  /** Whether `spec.dra.deviceClassName` exists. */
  deviceClass: 'Found' | 'Missing' | 'Unread'
}

/** What the snapshot layer read from one workload cluster for one CellNodeSet. */
export interface WorkloadSnapshot {
  /** `Reachable`, or why the cluster could not be read (then nothing else is filled). */
  reachability: { reason: ReachableReason; message: string }
  /** Every Node named by `spec.nodes[]` or carrying the pool's uid label. */
  nodes: ObservedNode[]
  /** Pods with no Node, phase Pending (`spec.nodeName=,status.phase=Pending`). */
  unbound: PodList
  /** HAMi's DRA mode (`spec.dra`). */
  dra?: DraSnapshot
}

/** The CellNodeSet as the core reads it: metadata plus a spec that passed the schema. */
export interface CellNodeSetInput {
  metadata: {
    name: string
    namespace?: string
    generation?: number
    deletionTimestamp?: string
    finalizers?: string[]
  }
  spec: CellNodeSetSpec
  status?: CellNodeSetStatus
}

/** One thing to do in either cluster. */
export type Action =
  | { type: 'patchNode'; name: string; patch: NodePatch }
  | { type: 'deleteNode'; name: string; uid: string; resourceVersion: string; reason: SweptNode['reason']; instance: string }
  | { type: 'addFinalizer' }
  | { type: 'removeFinalizer'; nodesLeft: string[]; why: string }

/** The decision of one pass. */
export interface Decision {
  status: CellNodeSetStatus
  /** False when the stored status already says the same (and observedTime is recent). */
  writeStatus: boolean
  actions: Action[]
}

/** A merge patch for a Node: `null` removes a key. */
export interface NodePatch {
  metadata?: {
    resourceVersion?: string
    labels?: Record<string, string | null>
    annotations?: Record<string, string | null>
  }
  spec?: { taints?: unknown[]; unschedulable?: boolean | null }
}

/** A value the agent watches, and when (agent clock, ms) it first saw its current value. */
export interface Sighting {
  value: string
  changedAt: number
}

/** What the snapshot carries about one Node for the liveness rule. */
export interface NodeHeartbeats {
  /** When the agent first saw this Node (ms, agent clock). */
  watchedSince: number
  /** The Lease `kube-node-lease/<node>`'s renewTime, when the Lease was readable and has one. */
  lease?: Sighting
  /** The Ready condition's lastHeartbeatTime, when the Node has one. */
  heartbeat?: Sighting
}

/** The windows of the rule; the defaults are docs/workload.md's. */
export interface LivenessWindows {
  /** A Lease renewTime unchanged this long: not live (90 s). */
  leaseMs: number
  /** A Ready heartbeat unchanged this long, without a Lease: not live (6 min). */
  heartbeatMs: number
  /** A Node watched for less than this is live whatever it shows (90 s). */
  startupMs: number
}
