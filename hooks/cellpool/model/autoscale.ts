/**
 * The autoscaler's records (plan/autoscale.ts): its configuration, the cells and the demand it
 * reads, its memory in the pool's status, and its decision.
 */
import type { CellDevice, DemandShape } from '../../api/cellnodeset.ts'
import type { CellPhase } from '../../api/gpucellpool.ts'

/** `spec.autoscaling` resolved, windows in seconds. */
export interface AutoscaleConfig {
  /** `spec.replicas`: the floor when `minReplicas` is unset. */
  replicas: number
  minReplicas: number | undefined
  maxReplicas: number
  stabilizationWindowSeconds: number
  scaleDown: 'Manual' | 'Auto'
  scaleDownStabilizationWindowSeconds: number
}

/** One cell as the autoscaler sees it. */
export interface AutoscaleCell {
  name: string
  index: number
  phase: CellPhase
  /** Ready, allocations read, no Pods, nothing in flight. */
  idle: boolean
  /** The devices of its Node (own row), for the cell shape. */
  devices: readonly CellDevice[]
  /** Being built, before its first Ready: a scale-up in flight. */
  creating: boolean
  /** When it was created: its bootstrap Secret's `creationTimestamp`. */
  createdAt?: string
}

/** The shape of one cell's device. */
export interface DeviceShape {
  memoryMiB: number
  cores: number
}

/** The autoscaler's memory, from the pool's previous status. */
export interface AutoscaleMemory {
  desiredReplicas?: number
  cellDeviceShape?: DeviceShape
  lastScaleUpTime?: string
  lastScaleDownTime?: string
  demandFreeSince?: string
  demand?: { pendingPods: number; satisfiable: number; lastObserved?: string }
}

/** The CellNodeSet's `status.demand` as read. */
export interface DemandView {
  read: boolean
  pendingPods: number
  shapes: readonly DemandShape[]
}

export interface AutoscaleInput {
  config: AutoscaleConfig
  cells: readonly AutoscaleCell[]
  demand: DemandView | undefined
  /** The workload cluster is observed (cells/phases.ts). */
  observed: boolean
  /** The CellNodeSet's `status.observedTime`. */
  observedTime: string | undefined
  memory: AutoscaleMemory
}

export const AUTOSCALE_REASONS = [
  'Unknown',
  'CellShapeUnknown',
  'DemandUnsatisfiable',
  'AtMaxReplicas',
  'Stabilizing',
  'ScaledUp',
  'Idle',
  'AtMinReplicas',
  'NoIdleCell',
  'ScaledDown'
] as const
export type AutoscaleReason = (typeof AUTOSCALE_REASONS)[number]

/** The autoscaler's decision and the status fields it writes. */
export interface AutoscaleResult {
  desiredReplicas: number
  reason: AutoscaleReason
  message: string
  /** The idle cell with the highest index, on `ScaledDown`. */
  cellToDrain?: string
  base: number
  floor: number
  ceiling: number
  demand?: { pendingPods: number; satisfiable: number; lastObserved?: string }
  cellDeviceShape?: DeviceShape
  lastScaleUpTime?: string
  lastScaleDownTime?: string
  demandFreeSince?: string
}
