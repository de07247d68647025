/**
 * The conditions a scaling plan reports (docs/cellpool.md, "Status"): `Progressing`, what the pool is
 * doing or why it waits, and `Updated`, whether every cell is built from the current template.
 */
import type { ConditionInput } from '../../k8s/conditions.ts'
import { creating, MAX_BUILDING } from './creation.ts'
import { MAX_INDEX_FAILURES } from '../model/limits.ts'
import type { ScalingInput, Slot } from '../model/plan.ts'

function names(ws: readonly Slot[]): string {
  return ws.map((w) => w.plan.name).join(', ')
}

/**
 * Condition Updated: the cells built from an earlier template (`outdated`), what updatePolicy does
 * with them, and, for a rolling update, whether one is under way (`started`) or why it waits.
 */
export function updatedCondition(
  outdated: readonly Slot[],
  policy: ScalingInput['updatePolicy'],
  started: boolean,
  why: readonly string[]
): ConditionInput {
  if (outdated.length === 0) {
    return { type: 'Updated', status: 'True', reason: 'UpToDate', message: 'Every cell is built from the current template.' }
  }
  if (policy === 'Manual') {
    return {
      type: 'Updated',
      status: 'False',
      reason: 'TemplateChanged',
      message: `Cells built from an earlier template: ${names(outdated)}; updatePolicy Manual keeps them until they are replaced (new cells use the current template).`
    }
  }
  if (started) {
    return {
      type: 'Updated',
      status: 'False',
      reason: 'RollingUpdate',
      message: `Replacing cells built from an earlier template one at a time: ${names(outdated)}.`
    }
  }
  return {
    type: 'Updated',
    status: 'False',
    reason: 'UpdateBlocked',
    message: `Cells built from an earlier template: ${names(outdated)}; the rolling update waits because ${why.join(', ') || 'no cell can be drained'}.`
  }
}

/** Condition Progressing: what the pool is doing, or why it cannot. */
export function progressingCondition(
  work: readonly Slot[],
  input: ScalingInput,
  poolExhausted: boolean,
  missing: number,
  failures: number,
  heldBackForGPU = 0
): ConditionInput {
  const c = (status: 'True' | 'False', reason: string, message: string): ConditionInput => ({
    type: 'Progressing',
    status,
    reason,
    message
  })
  const building = creating(work)
  const draining = work.filter((w) => w.role === 'drainScaleDown' || w.role === 'drainUpdate')
  const removing = work.filter((w) => w.role === 'removing')
  const exhausted = work.filter((w) => w.role === 'failed' && w.plan.reason === 'ReplacementExhausted')
  const moving: string[] = []
  if (building.length > 0) moving.push(`creating ${names(building)}`)
  if (draining.length > 0) moving.push(`draining ${names(draining)}`)
  if (removing.length > 0) moving.push(`removing ${names(removing)}`)
  const also = moving.length > 0 ? ` (meanwhile ${moving.join('; ')})` : ''
  if (poolExhausted) {
    return c(
      'False',
      'ReplacementExhausted',
      `No cell of the pool was ever Ready and cells failed ${failures} times in all; no cell is created until the pool's spec changes${also}.`
    )
  }
  const waitingForCells = missing > 0 || work.some((w) => w.role === 'failed')
  if (!input.workload.observed && (waitingForCells || draining.length > 0)) {
    return c(
      'False',
      'WorkloadUnobserved',
      `The workload cluster is unobserved (${input.workload.reason}): no cell is created, removed or drained to completion until it is${also}.`
    )
  }
  if (exhausted.length > 0 && moving.length === 0) {
    return c(
      'False',
      'ReplacementExhausted',
      `Cells failed ${MAX_INDEX_FAILURES} times and are not rebuilt until the pool's spec changes: ${names(exhausted)}.`
    )
  }
  if (moving.length > 0)
    return c(
      'True',
      'CellsChanging',
      `${moving.join('; ')}.`.replace(/^./, (s) => s.toUpperCase())
    )
  if (heldBackForGPU > 0) {
    return c(
      'False',
      'InsufficientPhysicalGPU',
      `${heldBackForGPU} cell(s) wait to be created until a physical GPU is free in the infrastructure cluster (condition PhysicalGPUsAvailable).`
    )
  }
  const failed = work.filter((w) => w.role === 'failed')
  if (failed.length > 0) return c('True', 'Rebuilding', `Failed cells wait for their rebuild: ${names(failed)}.`)
  if (missing > 0) return c('True', 'CellsChanging', `${missing} more cell(s) wait until fewer than ${MAX_BUILDING} are being built.`)
  return c('False', 'Settled', `The pool holds its ${input.desired} desired cell(s); nothing is being created, drained or removed.`)
}
