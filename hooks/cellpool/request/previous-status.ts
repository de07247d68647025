/**
 * What the pool's previous status remembers, read through the status schema the hook writes it by
 * (hooks/api/gpucellpool.ts `GPUCellPoolStatusSchema`, api/schema-reader.ts), as the CellNodeSet
 * is read through its own: the status is the pool's own record, but an old stored object can have
 * any shape, so a row or a field that fails its schema reads as absent, and is not reported (the
 * status is rewritten whole by this answer). docs/cellpool.md, "Witnesses", lists what each memory
 * does when the status handed to a sync is stale.
 *
 * Beyond the schema: a row without a phase is not read (it says nothing of a cell), a failure is
 * remembered only for a Failed row, and a negative `desiredReplicas` reads as absent.
 */
import { GPUCellPoolStatusSchema, type CellStatus, type GPUCellPoolStatus } from '../../api/gpucellpool.ts'
import { keepValid, UNREPORTED } from '../../api/schema-reader.ts'
import type { StoredRow } from '../model/cell.ts'
import type { PreviousStatus } from '../model/pool.ts'

function previousRow(row: CellStatus): StoredRow | undefined {
  if (row.phase === undefined) return undefined
  return {
    name: row.name,
    index: row.index,
    phase: row.phase,
    reason: row.reason ?? '',
    message: row.message ?? '',
    lastTransitionTime: row.lastTransitionTime,
    readyOnce: row.readyOnce === true,
    failureCount: row.failureCount ?? 0,
    guestUID: row.guestUID,
    templateHash: row.templateHash,
    ...(row.phase === 'Failed' && row.failure !== undefined ? { failure: row.failure } : {})
  }
}

/** The pool's previous status: what the hooks keep between syncs. */
export function readPrevious(status: unknown): PreviousStatus {
  const read = keepValid(GPUCellPoolStatusSchema, status, 'status', UNREPORTED) as GPUCellPoolStatus | undefined
  const s = read ?? {}
  const cells = new Map<string, StoredRow>()
  for (const r of s.cells ?? []) {
    const row = previousRow(r)
    if (row !== undefined && !cells.has(row.name)) cells.set(row.name, row)
  }
  const { desiredReplicas: desired, cellDeviceShape: shape, demand } = s
  return {
    observedGeneration: s.observedGeneration,
    cells,
    conditions: s.conditions,
    desiredReplicas: desired !== undefined && desired >= 0 ? desired : undefined,
    cellDeviceShape: shape === undefined ? undefined : { memoryMiB: shape.memoryMiB, cores: shape.cores },
    lastScaleUpTime: s.lastScaleUpTime,
    lastScaleDownTime: s.lastScaleDownTime,
    demandFreeSince: s.demandFreeSince,
    demand:
      demand === undefined
        ? undefined
        : {
            pendingPods: demand.pendingPods,
            satisfiable: demand.satisfiable,
            ...(demand.lastObserved !== undefined ? { lastObserved: demand.lastObserved } : {})
          }
  }
}
