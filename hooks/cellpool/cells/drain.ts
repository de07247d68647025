/**
 * When a cell's drain may complete, and when a cell is idle (docs/cellpool.md, "Scaling, drain
 * and updates"): read off its CellNodeSet row, for a scale-down, a rolling update, a Machine
 * deleted by someone else (plan/scaling.ts), the pool's deletion (plan/teardown.ts) and the autoscaler's
 * choice of a cell to drain (plan/autoscale-input.ts).
 */
import type { CellNodeStatus } from '../../api/cellnodeset.ts'
import type { Cell } from '../model/cell.ts'
import type { WorkloadState } from '../model/workload.ts'
import { parseTime } from '../../k8s/time.ts'

/** Shortest drain: HAMi's scheduler annotates a Pod before binding it. */
export const MIN_DRAIN_SECONDS = 30

/** True when a drain may complete: the cordon carried out, allocations read 0, nothing in flight, 30 s past. */
export function drainComplete(
  row: CellNodeStatus | undefined,
  workload: WorkloadState,
  drainingSince: string | undefined,
  now: Date
): { done: boolean; waiting: string; deadline?: Date } {
  if (!workload.observed) return { done: false, waiting: `the workload cluster is unobserved (${workload.reason})` }
  if (!workload.generationMatched) return { done: false, waiting: 'the workload agent has not carried out the cordon yet' }
  if (row === undefined) return { done: false, waiting: "the CellNodeSet has no row of this cell's Node" }
  if (row.unschedulable !== true) return { done: false, waiting: 'the Node is not cordoned yet' }
  const a = row.allocations
  if (a?.read !== true) return { done: false, waiting: "the Node's HAMi allocations could not be read" }
  if (a.pods > 0) return { done: false, waiting: `${a.pods} Pod(s) still hold a GPU allocation` }
  if (a.inFlight === true) return { done: false, waiting: 'a GPU allocation is in flight' }
  const since = parseTime(drainingSince) ?? now.getTime()
  const end = since + MIN_DRAIN_SECONDS * 1000
  if (now.getTime() < end) return { done: false, waiting: `draining for at least ${MIN_DRAIN_SECONDS}s`, deadline: new Date(end) }
  return { done: true, waiting: '' }
}

/** A cell Ready whose row shows allocations read, no Pods and nothing in flight. */
export function isIdle(cell: Pick<Cell, 'seen' | 'ownRow'>): boolean {
  const a = cell.ownRow?.allocations
  return cell.seen.phase === 'Ready' && a?.read === true && a.pods === 0 && a.inFlight !== true
}
