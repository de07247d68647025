/**
 * What an answer decided, as data (answer/status.ts renders it): the status row of each cell and
 * the pool's figures and conditions.
 */
import type { CellFailure } from '../../api/gpucellpool.ts'
import type { ConditionInput } from '../../k8s/conditions.ts'
import type { AutoscaleResult } from './autoscale.ts'
import type { DecidedCell } from './cell.ts'

/** One status row as decided, with what was observed of the cell. */
export interface CellRow extends DecidedCell {
  templateHash?: string
  guestUID?: string
  hostNode?: string
  devices?: readonly string[]
  nodeIP?: string
  /** The cell's Node in the workload cluster, once its row shows it present for this guest. */
  nodeName?: string
  /** At least one child of the cell is observed. */
  owned: boolean
  /** Why a Failed cell failed. */
  failure?: CellFailure
}

/** What an answer decided for the status; the rest of the status comes from the request. */
export interface DecidedStatus {
  rows: readonly CellRow[]
  desired: number
  progressing: ConditionInput
  updated: ConditionInput
  autoscale: AutoscaleResult | undefined
  /** Condition PhysicalGPUsAvailable (plan/physical-gpus.ts), when the sync decided it. */
  physicalGPUs?: ConditionInput
}
