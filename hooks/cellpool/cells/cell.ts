/**
 * The cell record: everything the hooks know of one cell of a pool in one request, built once
 * (`readCells`) from the request as read (request.ts), for the sync hook and the finalize hook
 * alike.
 *
 * A cell is an index with observed children, or a Failed row of the previous status without
 * children (an index waiting for its rebuild). What it is made of:
 * - its observed children by role (provisioner.ts: `secret`, `seed`, `guest`), and the machine
 *   read as a {@link GuestView};
 * - what the previous status remembers of it (`status.cells[]`), for this build only: a row that
 *   describes another machine (another uid) keeps only its failure count;
 * - its CellNodeSet row, and whether that row describes this machine's Node (`ownRow`);
 * - what its CellNodeSet entry witnesses of this machine (witness.ts), which adds to what the
 *   previous status remembers: a pool older than its children cannot forget that the machine was
 *   Ready once;
 * - its phase (phases.ts), from all of the above.
 *
 * Scaling (scaling.ts) decides from cells; the status row of a cell (status.ts) is the decision
 * together with what was observed of it.
 */
import type { CellNodeStatus } from '../../api/cellnodeset.ts'
import type { CellStatus } from '../../api/gpucellpool.ts'
import type { KubeObject } from '../../k8s/objects.ts'
import { cellIndexOf, cellName } from '../../api/cellnodeset.ts'
import { rowOfGuest, type PhaseConfig } from './observed-phase.ts'
import { cellPhase, type CellPhaseResult, type PreviousCell } from './phases.ts'
import type { GuestView } from '../model/provisioner.ts'
import type { PoolView } from '../request/request.ts'
import type { WorkloadState } from '../request/workload.ts'
import { witnessOf, type CellWitness } from './witness.ts'

/** The observed children of one cell, by role (provisioner.ts). */
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
  /** The phase observation and history give (phases.ts); Failed when the cell failed. */
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
  /** What the cell's CellNodeSet entry witnesses of this machine (witness.ts). */
  witness: CellWitness
  /** The observed children; absent for a cell only planned (a new index). */
  observed?: ObservedCell
  /** The previous status row as stored, whatever build it describes. */
  stored?: StoredRow
}

/** A row of the previous `status.cells`, as read (request.ts). */
export type StoredRow = PreviousCell & Pick<CellStatus, 'name' | 'index'>

/** At least one child of the cell is observed. */
export function hasChildren(cell: Pick<Cell, 'children'>): boolean {
  return cell.children.secret || cell.children.seed || cell.children.guest
}

/** What the previous status remembers of a cell whose machine was replaced: only its failures. */
function freshBuild(failureCount: number): PreviousCell {
  return {
    phase: 'Pending',
    reason: '',
    message: '',
    lastTransitionTime: undefined,
    readyOnce: false,
    failureCount,
    guestUID: undefined,
    templateHash: undefined
  }
}

/** Index of a previous row: its `index` when its name agrees, else the number its name ends in after `<pool>-`. */
function storedIndex(pool: string, row: StoredRow): number | undefined {
  if (row.index !== undefined) return cellName(pool, row.index) === row.name ? row.index : undefined
  return cellIndexOf(pool, row.name)
}

/** One cell from what was observed of it and what the previous status says. */
function readCell(
  index: number,
  view: PoolView,
  stored: StoredRow | undefined,
  workload: WorkloadState,
  config: PhaseConfig,
  currentHash: string,
  now: Date
): Cell {
  const name = cellName(view.name, index)
  const observed = view.cells.get(index)
  const guest = observed?.guestView
  const sameBuild = stored !== undefined && (stored.guestUID === undefined || guest === undefined || stored.guestUID === guest.uid)
  const remembered = stored === undefined ? undefined : sameBuild ? stored : freshBuild(stored.failureCount)
  const witness = witnessOf(view.cellNodeSet?.entries.get(name), guest)
  // The entry witnesses a Ready this status may not have seen yet (it predates the entry).
  const previous = witness.readyOnce && remembered?.readyOnce !== true ? { ...(remembered ?? freshBuild(0)), readyOnce: true } : remembered
  const row = view.cellNodeSet?.rows.get(name)
  const children = { secret: observed?.secret !== undefined, seed: observed?.seed !== undefined, guest: observed?.guest !== undefined }
  const cell: Cell = {
    index,
    name,
    seen: cellPhase({ guest, row, workload, config, previous, now }),
    previous,
    children,
    guestDeleting: guest?.deleting ?? false,
    templateHash:
      guest !== undefined ? guest.templateHash : hasChildren({ children }) ? currentHash : (stored?.templateHash ?? currentHash),
    row,
    ownRow: rowOfGuest(row, guest),
    witness
  }
  if (observed !== undefined) cell.observed = observed
  if (stored !== undefined) cell.stored = stored
  return cell
}

/**
 * Every cell the pool has, in index order: each index with an observed child, and each Failed row
 * without one (an index waiting for its rebuild). Other rows without children are gone.
 */
export function readCells(view: PoolView, workload: WorkloadState, config: PhaseConfig, currentHash: string, now: Date): Cell[] {
  const indices = new Set<number>(view.cells.keys())
  const storedByIndex = new Map<number, StoredRow>()
  for (const row of view.previous.cells.values()) {
    const index = storedIndex(view.name, row)
    if (index === undefined || storedByIndex.has(index)) continue
    storedByIndex.set(index, row)
    if (row.phase === 'Failed') indices.add(index)
  }
  return [...indices]
    .sort((a, b) => a - b)
    .map((index) => readCell(index, view, storedByIndex.get(index), workload, config, currentHash, now))
}
