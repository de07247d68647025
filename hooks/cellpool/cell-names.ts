/**
 * The names and labels of a pool's cells (cellpool.md, "Cells and their children"): cell `i` of
 * pool `p` is `p-i`, which is also its machine's name, its hostname and its Node's name, and every
 * child of the cell carries the pool, pool-uid, cell and cell-index labels.
 *
 * This is the one place that spells an index and reads one back, so a cell is found by the same
 * rule in a child's labels, a status row's name and a CellNodeSet entry.
 */
import { CELL_INDEX_LABEL, CELL_LABEL, POOL_LABEL, POOL_UID_LABEL } from '../api/cellnodeset.ts'

/**
 * A cell index as written in names and the index label: decimal without leading zeros, at most
 * five digits (far above any pool's size), so that each index has exactly one spelling.
 */
export const CELL_INDEX = /^(0|[1-9][0-9]{0,4})$/

/** The name of cell `index`: `<pool>-<index>`, also its machine, hostname and Node name. */
export function cellName(pool: string, index: number): string {
  return `${pool}-${index}`
}

/** The index a cell name of `pool` spells (`<pool>-<index>`, one spelling per index), else undefined. */
export function cellIndexOf(pool: string, name: string): number | undefined {
  const prefix = `${pool}-`
  if (!name.startsWith(prefix)) return undefined
  const rest = name.slice(prefix.length)
  return CELL_INDEX.test(rest) ? Number(rest) : undefined
}

/** The name of a cell's bootstrap Secret. */
export function bootstrapSecretName(cell: string): string {
  return `${cell}-bootstrap`
}

/** The four labels of a cell's children and Node, keys sorted. */
export function cellLabels(poolName: string, poolUID: string, cell: string, index: number): Record<string, string> {
  return {
    [CELL_LABEL]: cell,
    [CELL_INDEX_LABEL]: String(index),
    [POOL_LABEL]: poolName,
    [POOL_UID_LABEL]: poolUID
  }
}

/** Which cell of which pool a builder makes a child for. */
export interface CellIdentity {
  poolName: string
  namespace: string
  poolUID: string
  index: number
}
