/**
 * The cell record and what it is made of (docs/cellpool.md, "Cells and their children"): one
 * `Cell` per index, built once per request (cells/cell.ts `readCells`) for the sync hook and the
 * finalize hook alike.
 *
 * A cell is an index with observed children, or a Failed row of the previous status without
 * children (an index waiting for its rebuild). What it is made of:
 * - its observed children by role (model/provisioner.ts: `secret`, `seed`, `guest`), and the
 *   machine read as a {@link GuestView};
 * - what the previous status remembers of it (`status.cells[]`), for this build only: a row that
 *   describes another machine (another uid) keeps only its failure count;
 * - its CellNodeSet row, and whether that row describes this machine's Node (`ownRow`);
 * - what its CellNodeSet entry witnesses of this machine (cells/witness.ts), which adds to what
 *   the previous status remembers: a pool older than its children cannot forget that the machine
 *   was Ready once;
 * - its phase (cells/phases.ts), from all of the above.
 *
 * Scaling (plan/scaling.ts) decides from cells; the status row of a cell (answer/status.ts) is
 * the decision together with what was observed of it.
 */
import type { CellNodeStatus } from '../../api/cellnodeset.ts'
import type { CellFailure, CellPhase, CellStatus } from '../../api/gpucellpool.ts'
import type { KubeObject } from '../../k8s/objects.ts'
import type { GuestView } from './provisioner.ts'

/** The observed children of one cell, by role (model/provisioner.ts). */
export interface ObservedCell {
  index: number
  name: string
  secret?: KubeObject
  seed?: KubeObject
  guest?: KubeObject
  /** The machine read defensively. */
  guestView?: GuestView
}

/** Which of a cell's children are observed. */
export interface CellChildren {
  secret: boolean
  seed: boolean
  guest: boolean
}

/** One cell (see the header). */
export interface Cell {
  index: number
  name: string
  /** The phase observation and history give (cells/phases.ts); Failed when the cell failed. */
  seen: CellPhaseResult
  /** What the previous status remembers of this build. */
  previous: PreviousCell | undefined
  /** Which children are observed. */
  children: CellChildren
  /** The observed machine carries a deletion timestamp. */
  guestDeleting: boolean
  /** What the current build was made from: the machine's template hash, else the previous row's. */
  templateHash: string | undefined
  /** The cell's CellNodeSet row, whatever instance it names. */
  row: CellNodeStatus | undefined
  /** The row counts for this machine (its instance equals the machine's uid). */
  ownRow: CellNodeStatus | undefined
  /** What the cell's CellNodeSet entry witnesses of this machine (cells/witness.ts). */
  witness: CellWitness
  /** The observed children; absent for a cell only planned (a new index). */
  observed?: ObservedCell
  /** The previous status row as stored, whatever build it describes. */
  stored?: StoredRow
}

/** A row of the previous `status.cells`, as read (request/previous-status.ts). */
export type StoredRow = PreviousCell & Pick<CellStatus, 'name' | 'index'>

/** What the cell's CellNodeSet entry witnesses of its current machine (cells/witness.ts). */
export interface CellWitness {
  /** The entry names this machine: it is the last answer's entry for it. */
  named: boolean
  /** The machine was Ready once. */
  readyOnce: boolean
  /** The last answer asked for the machine's Node to be cordoned. */
  cordon: boolean
}

/** A cell as decided for this answer: what its scaling plan and its status row both carry. */
export type DecidedCell = Required<
  Pick<CellStatus, 'name' | 'index' | 'phase' | 'reason' | 'message' | 'lastTransitionTime' | 'readyOnce' | 'failureCount'>
>

/**
 * What the pool's previous status remembers of a cell (`status.cells[]`, read by
 * request/previous-status.ts): the decided fields, with the transition time, the machine's uid
 * and the template hash only when they were stored.
 */
export type PreviousCell = Omit<DecidedCell, 'name' | 'index' | 'lastTransitionTime'> & {
  lastTransitionTime: string | undefined
  guestUID: string | undefined
  templateHash: string | undefined
  /** Why the cell failed, when it is Failed and the status says. */
  failure?: CellFailure
}

/** The phase of a cell with its history applied (cells/phases.ts). */
export interface CellPhaseResult {
  phase: CellPhase
  reason: string
  message: string
  nodeIP?: string
  readyOnce: boolean
  /** Kept from the previous status unless the phase changed (or its clock paused or resumed). */
  lastTransitionTime: string
  /** When the phase's budget runs out (only while it runs). */
  deadline?: Date
  /** This call turned the cell Failed. */
  failedNow: boolean
  /** Why a Failed cell failed; its `message` is the failure's. */
  failure?: CellFailure
}

/** The budgets and expectations phases need, from the resolved spec (cells/phases.ts `phaseConfig`). */
export interface PhaseConfig {
  /** `bootstrap.readyTimeout`, seconds. */
  bootstrapReadyTimeoutSeconds: number
  /** `capacity.readyTimeout`, seconds. */
  capacityReadyTimeoutSeconds: number
  /** `capacity.hami.expectedDevicesPerCell`, default `gpu.count`. */
  expectedDevices: number
  /** `cell.nodeIPFrom`. */
  nodeIPFrom: string | undefined
}
