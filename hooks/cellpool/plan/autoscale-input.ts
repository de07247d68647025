/**
 * The autoscaler's input (autoscale.ts) from the pool as read: the cells with the phases scaling
 * sees, the demand the CellNodeSet reports, and the autoscaler's memory from the previous status.
 */
import { isRecord } from '../../k8s/objects.ts'
import { autoscale } from './autoscale.ts'
import { hasChildren } from '../cells/cell.ts'
import { isIdle } from '../cells/drain.ts'
import { CREATING_PHASES } from '../cells/phases.ts'
import { leavingOrSeen } from '../cells/witness.ts'
import type { AutoscaleCell, AutoscaleConfig, AutoscaleResult } from '../model/autoscale.ts'
import type { Blocking } from '../model/problems.ts'
import type { Cell } from '../model/cell.ts'
import type { PoolView } from '../model/pool.ts'
import type { ResolvedPool } from '../model/resolved-pool.ts'
import type { WorkloadState } from '../model/workload.ts'
import { withoutStop } from '../rules/wording.ts'
import { parseTime } from '../../k8s/time.ts'

/**
 * The autoscaler's view of the cells: removal phases carried from the previous status, or from the
 * entry's cordon when that status predates the drain (cells/witness.ts); a cell being built is a
 * scale-up in flight.
 */
function autoscaleCells(cells: readonly Cell[], workload: WorkloadState): AutoscaleCell[] {
  return cells.map((c) => {
    const prev = c.previous
    const phase = hasChildren(c) && (prev?.phase === 'Draining' || prev?.phase === 'Deleting') ? prev.phase : leavingOrSeen(c)
    return {
      name: c.name,
      index: c.index,
      phase,
      idle: workload.observed && phase === 'Ready' && isIdle(c),
      devices: c.ownRow?.devices ?? [],
      creating: hasChildren(c) && CREATING_PHASES.has(phase) && !c.seen.readyOnce,
      ...createdAt(c)
    }
  })
}

/** `spec.autoscaling` as the autoscaler takes it. */
export function autoscaleConfig(pool: ResolvedPool): AutoscaleConfig {
  return {
    replicas: pool.replicas,
    minReplicas: pool.autoscaling.minReplicas,
    maxReplicas: pool.autoscaling.maxReplicas,
    stabilizationWindowSeconds: pool.autoscaling.stabilizationWindowSeconds,
    scaleDown: pool.autoscaling.scaleDown,
    scaleDownStabilizationWindowSeconds: pool.autoscaling.scaleDownStabilizationWindowSeconds
  }
}

/** The autoscaler's decision, when autoscaling is enabled. */
export function autoscaleFor(
  view: PoolView,
  pool: ResolvedPool,
  cells: readonly Cell[],
  workload: WorkloadState,
  now: Date
): AutoscaleResult | undefined {
  if (!pool.autoscaling.enabled) return undefined
  const p = view.previous
  return autoscale(
    {
      config: autoscaleConfig(pool),
      cells: autoscaleCells(cells, workload),
      demand: view.cellNodeSet?.demand,
      observed: workload.observed,
      observedTime: view.cellNodeSet?.observedTime,
      memory: {
        ...(p.desiredReplicas !== undefined ? { desiredReplicas: p.desiredReplicas } : {}),
        ...(p.cellDeviceShape !== undefined ? { cellDeviceShape: p.cellDeviceShape } : {}),
        ...(p.lastScaleUpTime !== undefined ? { lastScaleUpTime: p.lastScaleUpTime } : {}),
        ...(p.lastScaleDownTime !== undefined ? { lastScaleDownTime: p.lastScaleDownTime } : {}),
        ...(p.demandFreeSince !== undefined ? { demandFreeSince: p.demandFreeSince } : {}),
        ...(p.demand !== undefined ? { demand: p.demand } : {})
      }
    },
    now
  )
}

/** The autoscaler's fields carried over unchanged while the pool is blocked. */
export function heldAutoscale(view: PoolView, pool: ResolvedPool, desired: number, blocking: Blocking): AutoscaleResult | undefined {
  if (!isRecord(view.spec.autoscaling) || view.spec.autoscaling.enabled !== true) return undefined
  const p = view.previous
  const result: AutoscaleResult = {
    desiredReplicas: desired,
    reason: 'Unknown',
    message: `The autoscaler waits: ${withoutStop(blocking.message)}.`,
    base: desired,
    floor: pool.autoscaling.minReplicas,
    ceiling: pool.autoscaling.maxReplicas
  }
  if (p.demand !== undefined) result.demand = p.demand
  if (p.cellDeviceShape !== undefined) result.cellDeviceShape = p.cellDeviceShape
  if (p.lastScaleUpTime !== undefined) result.lastScaleUpTime = p.lastScaleUpTime
  if (p.lastScaleDownTime !== undefined) result.lastScaleDownTime = p.lastScaleDownTime
  if (p.demandFreeSince !== undefined) result.demandFreeSince = p.demandFreeSince
  return result
}

/**
 * When a cell was created: its bootstrap Secret's `creationTimestamp` (the first child a build
 * creates). The API server sets it, so no one can make it older; a Secret deleted and created
 * again makes it newer, which only lengthens a window.
 */
function createdAt(c: Cell): { createdAt?: string } {
  const stamp = c.observed?.secret?.metadata.creationTimestamp
  return typeof stamp === 'string' && parseTime(stamp) !== undefined ? { createdAt: stamp } : {}
}
