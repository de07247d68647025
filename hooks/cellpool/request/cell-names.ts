/**
 * The names and labels of a pool's cells (docs/cellpool.md, "Cells and their children"): cell `i` of
 * pool `p` is `p-i`, which is also its machine's name, its hostname and its Node's name, and every
 * child of the cell carries the pool, pool-uid, cell and cell-index labels.
 *
 * A cell's name and index are spelled and read back by cellName, cellIndexOf and CELL_INDEX of
 * hooks/api/cellnodeset.ts (the contract the agent shares), so a cell is found by the same rule in
 * a child's labels, a status row's name and a CellNodeSet entry.
 */
import { CELL_INDEX_LABEL, CELL_LABEL, POOL_LABEL, POOL_UID_LABEL } from '../../api/cellnodeset.ts'

/** The name of a cell's bootstrap Secret. */
export function bootstrapSecretName(cell: string): string {
  return `${cell}-bootstrap`
}

/** The name of a cell's SwiftSeedProfile (the SwiftGuest provisioner's seed). */
export function seedProfileName(cell: string): string {
  return `${cell}-seed`
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
