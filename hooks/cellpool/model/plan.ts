/**
 * The plan of a pool's cells (plan/scaling.ts): what scaling reads, the partition of the cells
 * into roles it refines step by step (plan/transitions.ts), and what it decides for each cell.
 */
import type { CellNodeStatus } from '../../api/cellnodeset.ts'
import type { CellFailure } from '../../api/gpucellpool.ts'
import type { ConditionInput } from '../../k8s/conditions.ts'
import type { Cell, DecidedCell, PreviousCell } from './cell.ts'
import type { WorkloadState } from './workload.ts'

/** Why a cell is being removed. */
export type RemovalReason = 'ScaleDown' | 'RollingUpdate' | 'Failed' | 'MachineDeleted'

/** Everything a scaling decision depends on. */
export interface ScalingInput {
  /** The pool's name: cell `i` is `<pool>-<i>`. */
  pool: string
  cells: readonly Cell[]
  desired: number
  workload: WorkloadState
  /** Hash of what a cell is built from now. */
  templateHash: string
  updatePolicy: 'Manual' | 'RollingUpdate'
  /** The autoscaler chose this idle cell for a scale-down. */
  cellToDrain?: string
  /** The pool's spec changed since the last status: failure counts start again. */
  specChanged: boolean
  now: Date
  /**
   * What the provisioner makes a cell from besides its machine (default both): the machine is
   * created only once they are observed.
   */
  prerequisites?: { secret: boolean; seed: boolean }
  /**
   * A machine someone deleted is drained before it goes (Cluster API: the pool's deletion hooks
   * hold it), and its index waits for it, as a rolling update's does.
   */
  drainDeletedGuest?: boolean
  /** The CellNodeSet's rows by Node name, for cells that have no children yet. */
  rows?: ReadonlyMap<string, CellNodeStatus>
  /** Physical GPUs free for the pool's cells (plan/physical-gpus.ts); undefined: unknown, no check. */
  freeGPUs?: number
  /** The previous status rows by cell name: what a new build at an index keeps of it (plan/transitions.ts, `newSlot`). */
  earlierRows?: ReadonlyMap<string, Pick<PreviousCell, 'phase' | 'reason' | 'failureCount' | 'lastTransitionTime'>>
}

/** What an answer carries for a cell (build/children.ts `cellChildren`). */
export type CellAnswer =
  /** Secret and seed profile as built now, the guest kept (or built when `createGuest`). */
  | 'serve'
  /** Every observed child exactly as it is. */
  | 'hold'
  /** The guest left out; seed profile and Secret kept as they are until the guest is gone. */
  | 'remove'
  /** The guest left out; seed profile and Secret kept as they are (teardown, while the pool's guests go first). */
  | 'withoutGuest'
  /** No child: a Failed index waiting for its rebuild, or a row about to disappear. */
  | 'none'

/** The plan for one cell. */
export interface CellPlan extends DecidedCell {
  answer: CellAnswer
  /** Answer a freshly built guest (creation order satisfied). */
  createGuest: boolean
  /** Its CellNodeSet entry asks for a cordon. */
  cordon: boolean
  /** The cell is a new build started by this sync (its children are created now). */
  building: boolean
  /** Keep a status row for it. */
  keepRow: boolean
  templateHash: string | undefined
  /** When this cell next needs a sync (a budget, a drain's 30 s, a backoff). */
  deadline?: Date
  /** Why a Failed cell failed (cells/phases.ts); its status row keeps it. */
  failure?: CellFailure
}

/** The whole plan. */
export interface ScalingPlan {
  cells: CellPlan[]
  progressing: ConditionInput
  updated: ConditionInput
  /** Cells not built this sync for want of a free physical GPU. */
  heldBackForGPU: number
  /** Serving cells that wait for a GPU (plan/physical-gpus.ts). */
  waitingForGPU: number
}

/** What every step reads: the input, its time as a stamp, whether the workload cluster is observed. */
export interface StepContext {
  input: ScalingInput
  nowStamp: string
  observed: boolean
  /** Cells held back for want of a free physical GPU (scaleUp). */
  heldBackForGPU: number
}

/** What a cell is to the pool this sync (see the header). */
export type Role = 'serve' | 'failed' | 'drainScaleDown' | 'drainUpdate' | 'removing' | 'gone'

/** One cell of the partition: what was read of it, its plan so far, its role. */
export interface Slot {
  cell: Cell
  plan: CellPlan
  role: Role
}
