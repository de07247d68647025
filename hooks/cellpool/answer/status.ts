/**
 * The GPUCellPool's status (docs/api.md, docs/cellpool.md "Status"): a pure function of what was observed
 * and decided.
 *
 * Status must be deterministic (docs/metacontroller.md rule 2): the only clock-dependent fields are
 * transition times and the autoscaler's times, and each moves only when what it describes changes
 * (a condition's status, a cell's phase, a scale-up or scale-down, demand coming or going).
 *
 * Choices where the spec is silent:
 * - `replicas` counts the cells with at least one observed child (the cells the pool owns); a
 *   Failed index waiting for its rebuild has a row but no children and is not counted.
 * - `Progressing` is False with reason `Settled` when nothing is being created, drained or
 *   removed and nothing is blocked.
 * - What the reader could not read (a child or related object of an unexpected shape) is named in
 *   the `Progressing` message, after its own reason.
 */
import type { CellStatus, GPUCellPoolStatus } from '../../api/gpucellpool.ts'
import { withoutStop } from '../rules/wording.ts'
import { MAX_REASON_CHARS, clipText } from '../../k8s/clip.ts'
import { stampConditions, type ConditionInput } from '../../k8s/conditions.ts'
import { scalingActiveCondition } from '../plan/autoscale.ts'
import { hasChildren } from '../cells/cell.ts'
import { CREATING_PHASES } from '../cells/phases.ts'
import type { CellRow, DecidedStatus } from '../model/answer.ts'
import type { Cell, DecidedCell } from '../model/cell.ts'
import type { PoolView } from '../model/pool.ts'
import type { CellPlan } from '../model/plan.ts'
import type { WorkloadState } from '../model/workload.ts'

/** Everything the status is computed from: what an answer decided, and what the request says. */
export interface PoolStatusInput extends DecidedStatus {
  pool: string
  generation: number | undefined
  previousConditions: unknown
  now: Date
  workload: WorkloadState
  /** What could not be read, one sentence each. */
  readProblems: readonly string[]
}

/**
 * The status of an answer: what it decided, with the pool's name, generation, previous
 * conditions and read problems taken from the request as read, the same way for sync and finalize.
 */
export function viewStatus(view: PoolView, workload: WorkloadState, now: Date, decided: DecidedStatus): GPUCellPoolStatus {
  return poolStatus({
    pool: view.name,
    generation: view.generation,
    previousConditions: view.previous.conditions,
    now,
    workload,
    readProblems: view.problems,
    ...decided
  })
}

/**
 * The status row of a cell: what was decided for it (its plan, or what finalize decides), with what
 * was observed of it. A cell built by this answer shows nothing of an earlier machine.
 */
export function statusRow(plan: DecidedCell & Pick<CellPlan, 'building' | 'templateHash' | 'failure'>, cell: Cell | undefined): CellRow {
  const guest = cell?.observed?.guestView
  const row: CellRow = {
    name: plan.name,
    index: plan.index,
    phase: plan.phase,
    reason: plan.reason,
    message: plan.message,
    lastTransitionTime: plan.lastTransitionTime,
    readyOnce: plan.readyOnce,
    failureCount: plan.failureCount,
    owned: cell !== undefined && hasChildren(cell)
  }
  if (plan.templateHash !== undefined) row.templateHash = plan.templateHash
  if (plan.phase === 'Failed' && plan.failure !== undefined) row.failure = { ...plan.failure }
  if (plan.building) return row
  const guestUID = guest?.uid !== undefined && guest.uid !== '' ? guest.uid : cell?.stored?.guestUID
  if (guestUID !== undefined) row.guestUID = guestUID
  if (guest !== undefined) {
    if (guest.hostNode !== undefined) row.hostNode = guest.hostNode
    if (guest.devices.length > 0) row.devices = [...guest.devices]
  }
  if (cell?.seen.nodeIP !== undefined) row.nodeIP = cell.seen.nodeIP
  if (cell?.ownRow !== undefined) row.nodeName = cell.ownRow.name
  return row
}

/** The `status.selector` of a pool: its cells' label selector, for the scale subresource. */
export function poolSelector(pool: string): string {
  return `cells.kubeswift.io/pool=${pool}`
}

/**
 * The row as written to `status.cells[]`: fields in a fixed order, absent ones left out. Its
 * reason and messages carry text read from the machine, clipped here to their documented
 * lengths whatever sentence they were built into (k8s/clip.ts).
 */
export function cellStatusRow(row: CellRow): CellStatus {
  const out: CellStatus = {
    name: row.name,
    index: row.index,
    phase: row.phase,
    reason: clipText(row.reason, MAX_REASON_CHARS),
    message: clipText(row.message)
  }
  if (row.guestUID !== undefined) out.guestUID = row.guestUID
  if (row.hostNode !== undefined) out.hostNode = row.hostNode
  if (row.devices !== undefined && row.devices.length > 0) out.devices = [...row.devices]
  if (row.nodeIP !== undefined) out.nodeIP = row.nodeIP
  if (row.nodeName !== undefined) out.nodeName = row.nodeName
  if (row.templateHash !== undefined) out.templateHash = row.templateHash
  out.failureCount = row.failureCount
  if (row.failure !== undefined)
    out.failure = { ...row.failure, reason: clipText(row.failure.reason, MAX_REASON_CHARS), message: clipText(row.failure.message) }
  out.readyOnce = row.readyOnce
  out.lastTransitionTime = row.lastTransitionTime
  return out
}

/** Condition Ready: True when at least the desired number of cells is Ready. */
export function readyCondition(ready: number, desired: number): ConditionInput {
  if (desired === 0) return { type: 'Ready', status: 'True', reason: 'ScaledToZero', message: 'The pool is scaled to zero cells.' }
  if (ready >= desired)
    return { type: 'Ready', status: 'True', reason: 'CellsReady', message: `${ready} of ${desired} desired cell(s) are Ready.` }
  return { type: 'Ready', status: 'False', reason: 'CellsNotReady', message: `${ready} of ${desired} desired cell(s) are Ready.` }
}

/** Condition WorkloadClusterReachable, from the observed/unobserved rule. */
export function reachableCondition(workload: WorkloadState): ConditionInput {
  if (workload.observed) return { type: 'WorkloadClusterReachable', status: 'True', reason: 'Reachable', message: workload.message }
  return { type: 'WorkloadClusterReachable', status: 'False', reason: workload.reason, message: workload.message }
}

/** The whole status. */
export function poolStatus(input: PoolStatusInput): GPUCellPoolStatus {
  const rows = [...input.rows].sort((a, b) => a.index - b.index)
  const count = (f: (r: CellRow) => boolean): number => rows.filter(f).length
  const readyCells = count((r) => r.phase === 'Ready')
  const progressing =
    input.readProblems.length > 0
      ? {
          ...input.progressing,
          message: `${withoutStop(input.progressing.message)}. Unreadable: ${input.readProblems.map(withoutStop).join('; ')}.`
        }
      : input.progressing
  const conditions: ConditionInput[] = [
    readyCondition(readyCells, input.desired),
    progressing,
    input.updated,
    reachableCondition(input.workload)
  ]
  if (input.autoscale !== undefined) conditions.push(scalingActiveCondition(input.autoscale))
  if (input.physicalGPUs !== undefined) conditions.push(input.physicalGPUs)
  const status: GPUCellPoolStatus = {
    replicas: count((r) => r.owned),
    readyCells,
    creatingCells: count((r) => CREATING_PHASES.has(r.phase) && !r.readyOnce),
    drainingCells: count((r) => r.phase === 'Draining'),
    failedCells: count((r) => r.phase === 'Failed'),
    desiredReplicas: input.desired,
    selector: poolSelector(input.pool)
  }
  const a = input.autoscale
  if (a !== undefined) {
    if (a.demand !== undefined) status.demand = { ...a.demand }
    if (a.cellDeviceShape !== undefined) status.cellDeviceShape = { ...a.cellDeviceShape }
    if (a.lastScaleUpTime !== undefined) status.lastScaleUpTime = a.lastScaleUpTime
    if (a.lastScaleDownTime !== undefined) status.lastScaleDownTime = a.lastScaleDownTime
    if (a.demandFreeSince !== undefined) status.demandFreeSince = a.demandFreeSince
  }
  status.cells = rows.map(cellStatusRow)
  status.conditions = stampConditions(conditions, input.previousConditions, input.now, input.generation)
  if (input.generation !== undefined) status.observedGeneration = input.generation
  return status
}

/** Seconds until the nearest deadline, rounded up, at least 1; undefined without one. */
export function resyncAfter(deadlines: ReadonlyArray<Date | undefined>, now: Date): number | undefined {
  const ahead = deadlines.filter((d): d is Date => d !== undefined).map((d) => d.getTime() - now.getTime())
  if (ahead.length === 0) return undefined
  return Math.max(1, Math.ceil(Math.min(...ahead) / 1000))
}
