/**
 * The pool as the hooks read it out of one request (request/request.ts): the view every step
 * decides from. Read defensively: what could not be read is a problem named in `problems`, and
 * counts as absent.
 */
import type { CellNode, CellNodeSetStatus, CellNodeStatus } from '../../api/cellnodeset.ts'
import type { KubeObject } from '../../k8s/objects.ts'
import type { DemandView, DeviceShape } from './autoscale.ts'
import type { ObservedCell, StoredRow } from './cell.ts'

/** The pool's observed CellNodeSet. */
export interface CellNodeSetView {
  object: KubeObject
  generation: number | undefined
  /** It has a status object at all (the agent served it). */
  hasStatus: boolean
  reachable: { status: string; reason?: string; message?: string } | undefined
  observedTime: string | undefined
  observedGeneration: number | undefined
  /** Rows by Node name. */
  rows: ReadonlyMap<string, CellNodeStatus>
  /**
   * The spec's entries by Node name, as the hook's last applied answer wrote them (cells/witness.ts);
   * empty when the spec fails its schema (read all or nothing).
   */
  entries: ReadonlyMap<string, CellNode>
  demand: DemandView | undefined
  /** The agent's summary of the infrastructure cluster's physical GPUs (DRA pools). */
  physicalGPUs: CellNodeSetStatus['physicalGPUs']
}

/** Everything the cellpool hooks read out of one request. */
export interface PoolView {
  name: string
  namespace: string
  uid: string
  /** `metadata.generation` as sent. */
  generation: number | undefined
  deletionTimestamp: string | undefined
  spec: Record<string, unknown>
  /** Cells with at least one observed child, by index. */
  cells: Map<number, ObservedCell>
  /** Observed children that belong to no cell but carry a name the pool gives: kept as they are. */
  strays: KubeObject[]
  /** Observed children of a name or namespace the pool never gives: left out, so deleted. */
  foreign: KubeObject[]
  cellNodeSet: CellNodeSetView | undefined
  /**
   * The pool's observed CellInfrastructure, as it is: the per-pool child of a provisioner that has
   * one (Cluster API), which reads it itself (model/provisioner.ts `poolChild`).
   */
  cellInfrastructure: KubeObject | undefined
  /**
   * Machines and seeds of a kind the pool's provisioner does not make, named as the pool names
   * them: cells of the other provisioner (`spec.cell.provisioner` changed while the pool had
   * cells). The pool is blocked while there are any, and they are kept as they are (plan/blocking.ts).
   */
  otherProvisioner: KubeObject[]
  joinSecret: KubeObject | undefined
  previous: PreviousStatus
  /** What could not be read, one sentence each. */
  problems: string[]
}

/** What the pool's previous status remembers (request/previous-status.ts). */
export interface PreviousStatus {
  observedGeneration: number | undefined
  cells: Map<string, StoredRow>
  conditions: unknown
  desiredReplicas: number | undefined
  cellDeviceShape: DeviceShape | undefined
  lastScaleUpTime: string | undefined
  lastScaleDownTime: string | undefined
  demandFreeSince: string | undefined
  demand: { pendingPods: number; satisfiable: number; lastObserved?: string } | undefined
}
