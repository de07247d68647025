/**
 * The demand-driven autoscaler (docs/cellpool.md, "Autoscaling"): gpucellpool v0.1.1's rules, in
 * order, the first that applies wins. A pure function of the cells, the CellNodeSet's demand, the
 * autoscaler's memory kept in the pool's status, and `now`. It decides `status.desiredReplicas`;
 * it never writes `spec.replicas`.
 *
 * Its memory in the status (the last scale times, `desiredReplicas`, `demandFreeSince`) may be
 * older than the cells it counts: Metacontroller can hand a sync a pool whose status predates its
 * children (docs/metacontroller.md rule 9). So what a stale copy could double is read off the
 * cells instead (cells/witness.ts): a cell being created is a scale-up in flight, and no further cell is
 * added while one is, and a `lastScaleUpTime` a stale status lacks is restored from that cell's
 * creation (its bootstrap Secret's creationTimestamp, which the API server sets), so the window
 * still holds once the cell is Ready; a cell draining or being
 * deleted is a scale-down in flight, and no further cell drains while one does; and holding still
 * never keeps fewer cells than the base. A stale
 * copy of the times can then only lengthen or shorten a window by the cache's lag, never add or
 * drain a second cell for one need (docs/cellpool.md, "Witnesses").
 *
 * Choices where the spec is silent:
 * - `Stabilizing` keeps the previous `status.desiredReplicas` (clamped to [floor, ceiling]) when
 *   it is above the base: a scale-up whose cell could not be created yet (two cells already being
 *   created) is not forgotten by the next sync.
 * - One scale at a time: `Stabilizing` also while a cell is being created (Pods pending) or is
 *   leaving (none pending), whatever the windows say; gpucellpool v0.1.1 waits for the window
 *   alone.
 * - `demand.lastObserved` is the CellNodeSet's `observedTime` at which the current figures were
 *   first seen; it moves when the figures change, so an idle pool's status is not rewritten on
 *   every observation.
 * - `ScalingActive` is False for `Unknown` and `CellShapeUnknown` (the autoscaler cannot judge
 *   demand), True for every other reason.
 */
import type { DemandShape } from '../../api/cellnodeset.ts'
import type { ConditionInput } from '../../k8s/conditions.ts'
import { apiTime, formatSeconds, parseTime } from '../../k8s/time.ts'
import type { AutoscaleCell, AutoscaleConfig, AutoscaleInput, AutoscaleReason, AutoscaleResult, DeviceShape } from '../model/autoscale.ts'

const clamp = (n: number, lo: number, hi: number): number => Math.min(Math.max(n, lo), hi)

/** The shape of the first healthy device of the lowest-index Ready cell, else the remembered one. */
export function cellShape(cells: readonly AutoscaleCell[], remembered: DeviceShape | undefined): DeviceShape | undefined {
  for (const c of [...cells].sort((a, b) => a.index - b.index)) {
    if (c.phase !== 'Ready') continue
    const d = c.devices.find((x) => x.healthy)
    if (d !== undefined) return { memoryMiB: d.memoryMiB, cores: d.cores }
  }
  return remembered
}

/** True when one cell can run a Pod of this request: devices ≤ 1, memory and cores within the shape. */
export function satisfiable(request: DemandShape, shape: DeviceShape): boolean {
  return request.devices <= 1 && request.memoryMiB <= shape.memoryMiB && request.cores <= shape.cores
}

/** `cell a is` or `cells a, b are`, for a message. */
function names(cells: readonly AutoscaleCell[]): string {
  return `${cells.length === 1 ? 'cell' : 'cells'} ${cells.map((c) => c.name).join(', ')} ${cells.length === 1 ? 'is' : 'are'}`
}

/** The later of two API times (either may be absent or unreadable). */
function latest(a: string | undefined, b: string | undefined): string | undefined {
  const ta = parseTime(a)
  const tb = parseTime(b)
  if (tb === undefined) return ta === undefined ? undefined : a
  return ta === undefined || tb > ta ? b : a
}

function within(since: string | undefined, windowSeconds: number, now: Date): boolean {
  const at = parseTime(since)
  return at !== undefined && now.getTime() - at < windowSeconds * 1000
}

/** The autoscaler (docs/cellpool.md, "Autoscaling"), rule by rule. */
export function autoscale(input: AutoscaleInput, now: Date): AutoscaleResult {
  const { config, memory } = input
  const nowStamp = apiTime(now)
  const floor = config.minReplicas ?? config.replicas
  const ceiling = Math.max(config.maxReplicas, floor)
  const counted = input.cells.filter((c) => c.phase !== 'Failed' && c.phase !== 'Draining' && c.phase !== 'Deleting').length
  const base = clamp(counted, floor, ceiling)
  const shape = cellShape(input.cells, memory.cellDeviceShape)
  const kept: Omit<AutoscaleResult, 'desiredReplicas' | 'reason' | 'message'> = {
    base,
    floor,
    ceiling,
    ...(shape !== undefined ? { cellDeviceShape: shape } : {}),
    ...(memory.lastScaleUpTime !== undefined ? { lastScaleUpTime: memory.lastScaleUpTime } : {}),
    ...(memory.lastScaleDownTime !== undefined ? { lastScaleDownTime: memory.lastScaleDownTime } : {}),
    ...(memory.demandFreeSince !== undefined ? { demandFreeSince: memory.demandFreeSince } : {}),
    ...(memory.demand !== undefined ? { demand: memory.demand } : {})
  }
  const result = (
    desiredReplicas: number,
    reason: AutoscaleReason,
    message: string,
    extra: Partial<AutoscaleResult> = {}
  ): AutoscaleResult => ({
    ...kept,
    desiredReplicas,
    reason,
    message,
    ...extra
  })
  // Holding still never means fewer cells than the pool serves: a lower remembered number comes
  // from a status older than the cells it counts.
  const stabilized = (): number => Math.max(clamp(memory.desiredReplicas ?? base, floor, ceiling), base)

  const demand = input.demand
  if (!input.observed || demand === undefined || !demand.read) {
    const why = !input.observed ? 'the workload cluster is unobserved' : 'the workload agent has not read the pending Pods'
    return result(base, 'Unknown', `Demand is unknown (${why}); keeping ${base} cell(s).`)
  }
  const satisfiableCount = shape === undefined ? 0 : demand.shapes.filter((s) => satisfiable(s, shape)).reduce((n, s) => n + s.pods, 0)
  const figures = { pendingPods: demand.pendingPods, satisfiable: satisfiableCount }
  const before = memory.demand
  const same = before !== undefined && before.pendingPods === figures.pendingPods && before.satisfiable === figures.satisfiable
  const lastObserved = same ? before.lastObserved : input.observedTime
  kept.demand = lastObserved !== undefined ? { ...figures, lastObserved } : figures

  if (demand.pendingPods > 0 && satisfiableCount === 0) {
    if (shape === undefined) {
      return result(
        base,
        'CellShapeUnknown',
        `${demand.pendingPods} Pod(s) pending, but no cell was Ready yet to tell what one cell offers; keeping ${base} cell(s).`
      )
    }
    const largest = demand.shapes[0]
    const what =
      largest !== undefined
        ? `the largest asks for ${largest.devices} device(s), ${largest.memoryMiB} MiB and ${largest.cores}% cores`
        : 'their requests are unknown'
    return result(
      base,
      'DemandUnsatisfiable',
      `${demand.pendingPods} Pod(s) pending, none fits one cell (${shape.memoryMiB} MiB, ${shape.cores}% cores): ${what}; keeping ${base} cell(s).`
    )
  }
  if (satisfiableCount > 0) {
    delete kept.demandFreeSince
    if (base >= ceiling)
      return result(base, 'AtMaxReplicas', `${satisfiableCount} Pod(s) pending; the pool is at maxReplicas (${ceiling}).`)
    const building = input.cells.filter((c) => c.creating)
    if (building.length > 0) {
      const keep = stabilized()
      // The scale-up in flight is no older than its newest cell: a status that lost its time (or
      // whose time has left the window) takes that cell's creation, so the window still holds once
      // the cell is Ready.
      const since = within(memory.lastScaleUpTime, config.stabilizationWindowSeconds, now)
        ? memory.lastScaleUpTime
        : building.map((c) => c.createdAt).reduce(latest, undefined)
      return result(
        keep,
        'Stabilizing',
        `${satisfiableCount} Pod(s) pending; ${names(building)} being created for them, a scale-up in flight; keeping ${keep} cell(s).`,
        since !== undefined ? { lastScaleUpTime: since } : {}
      )
    }
    if (within(memory.lastScaleUpTime, config.stabilizationWindowSeconds, now)) {
      const keep = stabilized()
      return result(
        keep,
        'Stabilizing',
        `${satisfiableCount} Pod(s) pending; the last scale-up (${memory.lastScaleUpTime ?? ''}) is within stabilizationWindow (${formatSeconds(config.stabilizationWindowSeconds)}); keeping ${keep} cell(s).`
      )
    }
    return result(base + 1, 'ScaledUp', `${satisfiableCount} Pod(s) pending that one cell can run; scaling up to ${base + 1}.`, {
      lastScaleUpTime: nowStamp
    })
  }
  const demandFreeSince = memory.demandFreeSince ?? nowStamp
  kept.demandFreeSince = demandFreeSince
  if (config.scaleDown === 'Manual') return result(base, 'Idle', `No Pod pending; scaleDown is Manual, keeping ${base} cell(s).`)
  if (base <= floor) return result(base, 'AtMinReplicas', `No Pod pending; the pool is at its floor (${floor}).`)
  const leaving = input.cells.filter((c) => c.phase === 'Draining' || c.phase === 'Deleting')
  if (leaving.length > 0)
    return result(
      base,
      'Stabilizing',
      `No Pod pending; ${names(leaving)} leaving the pool, a scale-down in flight; keeping ${base} cell(s).`
    )
  const idle = input.cells
    .filter((c) => c.idle && c.phase === 'Ready')
    .sort((a, b) => a.index - b.index)
    .at(-1)
  if (idle === undefined)
    return result(base, 'NoIdleCell', `No Pod pending, but every cell has GPU allocations or is not Ready; keeping ${base} cell(s).`)
  const window = config.scaleDownStabilizationWindowSeconds
  const recent = [
    within(demandFreeSince, window, now) ? `demand-free since ${demandFreeSince}` : undefined,
    within(memory.lastScaleUpTime, window, now) ? `scaled up at ${memory.lastScaleUpTime ?? ''}` : undefined,
    within(memory.lastScaleDownTime, window, now) ? `scaled down at ${memory.lastScaleDownTime ?? ''}` : undefined
  ].filter((s): s is string => s !== undefined)
  if (recent.length > 0) {
    const keep = stabilized()
    return result(
      keep,
      'Stabilizing',
      `No Pod pending; ${recent.join(', ')}, within scaleDownStabilizationWindow (${formatSeconds(window)}); keeping ${keep} cell(s).`
    )
  }
  return result(base - 1, 'ScaledDown', `No Pod pending; idle cell ${idle.name} drains, scaling down to ${base - 1}.`, {
    cellToDrain: idle.name,
    lastScaleDownTime: nowStamp
  })
}

/** Condition ScalingActive (autoscaling only). */
export function scalingActiveCondition(result: AutoscaleResult): ConditionInput {
  const inactive = result.reason === 'Unknown' || result.reason === 'CellShapeUnknown'
  return { type: 'ScalingActive', status: inactive ? 'False' : 'True', reason: result.reason, message: result.message }
}

/**
 * The next time the autoscaler's answer can change by the clock alone (a stabilization window
 * ending), for `resyncAfterSeconds`.
 */
export function autoscaleDeadline(result: AutoscaleResult, config: AutoscaleConfig, now: Date): Date | undefined {
  const ends: number[] = []
  const add = (t: string | undefined, seconds: number): void => {
    const at = parseTime(t)
    if (at !== undefined && at + seconds * 1000 > now.getTime()) ends.push(at + seconds * 1000)
  }
  if (result.reason === 'Stabilizing') {
    add(result.lastScaleUpTime, config.stabilizationWindowSeconds)
    add(result.lastScaleUpTime, config.scaleDownStabilizationWindowSeconds)
    add(result.lastScaleDownTime, config.scaleDownStabilizationWindowSeconds)
    add(result.demandFreeSince, config.scaleDownStabilizationWindowSeconds)
  }
  return ends.length > 0 ? new Date(Math.min(...ends)) : undefined
}
