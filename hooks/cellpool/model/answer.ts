/**
 * An answer as data (docs/style.md rule 19). Each path that answers returns an {@link AnswerPlan}:
 * sync for a pool that may create cells (plan/sync-plan.ts), sync for a blocked pool
 * (plan/blocking.ts) and finalize (plan/teardown.ts). One function, answer/render.ts, turns a plan
 * into the children, the CellNodeSet entries, the status rows and the resync; answer/status.ts
 * renders the status from what the plan decided.
 */
import type { CellFailure } from '../../api/gpucellpool.ts'
import type { ConditionInput } from '../../k8s/conditions.ts'
import type { KubeObject } from '../../k8s/objects.ts'
import type { AutoscaleResult } from './autoscale.ts'
import type { Cell, DecidedCell } from './cell.ts'
import type { CellAnswer, CellPlan } from './plan.ts'

/** What one answer does with one cell. */
export interface CellOutcome {
  index: number
  /** What was read of the cell; absent for a cell only planned (a new index). */
  cell: Cell | undefined
  /** Which of its children the answer carries, and how. */
  answer: CellAnswer
  /** With `serve`: the machine is built (its creation order is satisfied). */
  createGuest: boolean
  /** Its CellNodeSet entry: whether the Node is cordoned, and whether it witnesses a machine once Ready. Absent: no entry. */
  entry?: { cordon: boolean; readyOnce: boolean }
  /** Its status row as decided. Absent: no row. */
  row?: DecidedRow
}

/** A cell's status row as decided (answer/status.ts `statusRow` adds what was observed of it). */
export type DecidedRow = DecidedCell & Pick<CellPlan, 'building' | 'templateHash' | 'failure'>

/** One answer as data (see the header). */
export interface AnswerPlan {
  /** The cells, in index order. */
  cells: CellOutcome[]
  /**
   * The pool's CellNodeSet: built from the cells' entries (with the demand the agent reads when
   * autoscaling), kept exactly as observed, or left out.
   */
  nodeSet: { demand: boolean } | 'keep' | 'none'
  /** The provisioner's own child of the pool (model/provisioner.ts `poolChild`): answered, kept as observed, or left out. */
  poolChild: 'answer' | 'keep' | 'none'
  /** Observed children answered exactly as they are, after the pool's own: strays, the other provisioner's machines. */
  kept: KubeObject[]
  /** What the answer decided for the status; the rows come from the cells. */
  status: Omit<DecidedStatus, 'rows'>
  /** When the pool next needs a sync. */
  deadlines: ReadonlyArray<Date | undefined>
  /** Finalize only: no child is left, the pool may go. */
  finalized?: boolean
}

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
