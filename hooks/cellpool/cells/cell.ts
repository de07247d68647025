/**
 * The cell record (model/cell.ts) built once per request from the request as read
 * (request/request.ts), for the sync hook and the finalize hook alike: each index with an
 * observed child, and each Failed row of the previous status without one.
 */
import { cellIndexOf, cellName } from '../../api/cellnodeset.ts'
import type { Cell, PhaseConfig, PreviousCell, StoredRow } from '../model/cell.ts'
import type { PoolView } from '../model/pool.ts'
import type { WorkloadState } from '../model/workload.ts'
import { rowOfGuest } from './observed-phase.ts'
import { cellPhase } from './phases.ts'
import { witnessOf } from './witness.ts'

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
