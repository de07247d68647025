/**
 * What happens to each cell of a pool (docs/cellpool.md, "Cells and their children", "Phases" and
 * "Scaling, drain and updates"): which cells serve, which are built, drained, removed or rebuilt,
 * and in what order their children come and go. A pure function of the cells' phases, the desired
 * number and the workload cluster's state; build/children.ts turns the plan into children.
 *
 * The plan is a partition of the cells into roles (transitions.ts) that named steps refine in
 * order: drains in progress complete or wait, a scale-down, a scale-up, the creation order of
 * machines, the rolling update; the conditions are read off the result (scaling-conditions.ts).
 *
 * Choices where the spec is silent:
 * - A cell keeps its index for life; a Failed index "holds" its place among the desired cells
 *   until it is rebuilt, exhausted or scaled away, so a failure never moves a cell to another
 *   index.
 * - Nothing is deleted while the workload cluster is unobserved: a cell that would be removed
 *   keeps every child as it is (the Failed row says it waits), and drains wait.
 * - A scale-down returns draining cells in order of index (lowest first) when the number rises.
 * - A drain whose row is missing (the Node is gone) waits like any other: the row must show the
 *   cordon carried out. Deleting the SwiftGuest by hand forces it (README).
 */
import type { ConditionInput } from '../../k8s/conditions.ts'
import { hasChildren } from '../cells/cell.ts'
import { drainComplete, isIdle } from '../cells/drain.ts'
import { creating, MAX_BUILDING, orderCreation } from './creation.ts'
import { progressingCondition, updatedCondition } from './scaling-conditions.ts'
import { holdGuestsForGPU, waitsForGPU } from './physical-gpus.ts'
import { apiTime, formatSeconds, parseTime } from '../../k8s/time.ts'
import { backToService, build, drain, drainedReason, heldFailed, newSlot, removal, startingSlot } from './transitions.ts'
import { BACKOFF_MAX_SECONDS, BACKOFF_START_SECONDS, MAX_INDEX_FAILURES, MAX_POOL_FAILURES_NEVER_READY } from '../model/limits.ts'
import type { ScalingInput, ScalingPlan, Slot, StepContext } from '../model/plan.ts'

/** Backoff before rebuilding an index that failed `failures` times: 30 s, doubling, at most 30 min. */
export function backoffSeconds(failures: number): number {
  if (failures <= 0) return 0
  return Math.min(BACKOFF_START_SECONDS * 2 ** Math.min(failures - 1, 20), BACKOFF_MAX_SECONDS)
}

/** Slots that count toward the desired number: serving, a Failed index holding its place, a drain for an update. */
export function held(slots: readonly Slot[]): Slot[] {
  return slots.filter((s) => s.role === 'serve' || s.role === 'failed' || s.role === 'drainUpdate')
}

/** A rolling update is under way: a cell drains or goes for one. */
export function updateInProgress(slots: readonly Slot[]): boolean {
  return slots.some((s) => s.role === 'drainUpdate' || (s.role === 'removing' && s.plan.reason === 'RollingUpdate'))
}

/** The plan for every cell (docs/cellpool.md, "Scaling, drain and updates"). */
export function planScaling(input: ScalingInput): ScalingPlan {
  const ctx: StepContext = { input, nowStamp: apiTime(input.now), observed: input.workload.observed, heldBackForGPU: 0 }
  const slots = [...input.cells].sort((a, b) => a.index - b.index).map((c) => startingSlot(c, input))
  const everReady = slots.some((s) => s.plan.readyOnce)
  const failures = slots.reduce((n, s) => n + s.plan.failureCount, 0)
  const poolExhausted = !everReady && failures >= MAX_POOL_FAILURES_NEVER_READY

  completeDrains(slots, ctx)
  scaleDown(slots, ctx)
  const after = scaleUp(slots, ctx, poolExhausted)
  orderCreation(after, ctx)
  ctx.heldBackForGPU += holdGuestsForGPU(after, input.freeGPUs)
  const updated = rollingUpdate(after, ctx)
  const missing = input.desired - held(after).length
  return {
    cells: after.sort((a, b) => a.plan.index - b.plan.index).map((s) => s.plan),
    progressing: progressingCondition(after, input, poolExhausted, missing, failures, ctx.heldBackForGPU),
    updated,
    heldBackForGPU: ctx.heldBackForGPU,
    waitingForGPU: after.filter(waitsForGPU).length
  }
}

/** Drains in progress: each completes (its removal starts) or says what it waits for. */
function completeDrains(slots: Slot[], ctx: StepContext): void {
  slots.forEach((s, i) => {
    if (s.role !== 'drainScaleDown' && s.role !== 'drainUpdate') return
    const check = drainComplete(s.cell.ownRow, ctx.input.workload, s.plan.lastTransitionTime, ctx.input.now)
    if (check.done) {
      slots[i] = removal(s, drainedReason(s.role, s.plan.reason), ctx.nowStamp, 'drained')
      return
    }
    const plan = { ...s.plan, message: `Draining: waiting until ${check.waiting}.` }
    if (check.deadline !== undefined) plan.deadline = check.deadline
    slots[i] = { ...s, plan }
  })
}

/**
 * Scale down to the desired number: Failed indices first, then never-Ready cells, then the
 * autoscaler's idle cell, else the highest index. A never-Ready cell goes at once, a Ready-once
 * one drains; nothing goes while the workload cluster is unobserved.
 */
function scaleDown(slots: Slot[], ctx: StepContext): void {
  const { input, observed, nowStamp } = ctx
  const current = held(slots)
  let excess = current.length - input.desired
  if (excess <= 0) return
  const order = [
    ...current.filter((s) => s.role === 'failed').reverse(),
    ...current.filter((s) => s.role === 'serve' && !s.plan.readyOnce).reverse(),
    ...current.filter((s) => s.role === 'serve' && s.plan.readyOnce && s.cell.name === input.cellToDrain),
    ...current.filter((s) => (s.role === 'serve' && s.plan.readyOnce) || s.role === 'drainUpdate').reverse()
  ]
  const done = new Set<Slot>()
  for (const s of order) {
    if (excess <= 0) break
    if (done.has(s)) continue
    done.add(s)
    excess -= 1
    const i = slots.indexOf(s)
    if (s.role === 'failed') {
      if (hasChildren(s.cell)) {
        const next = observed ? removal(s, 'Failed', s.plan.lastTransitionTime, 'no longer wanted') : heldFailed(s)
        slots[i] = { ...next, plan: { ...next.plan, keepRow: true } }
      } else {
        slots[i] = { ...s, role: 'gone', plan: { ...s.plan, keepRow: false, answer: 'none' } }
      }
    } else if (!s.plan.readyOnce) {
      if (observed) slots[i] = removal(s, 'ScaleDown', nowStamp, 'not needed')
    } else if (s.role === 'serve') {
      slots[i] = drain(s, 'ScaleDown', nowStamp, observed)
    } else {
      slots[i] = { ...s, role: 'drainScaleDown', plan: { ...s.plan, reason: 'ScaleDown' } }
    }
  }
}

/**
 * Scale up to the desired number: cells draining for a scale-down serve again first (lowest index
 * first), then Failed indices are rebuilt once their backoff has passed, then new cells take the
 * lowest free indices; at most {@link MAX_BUILDING} are built at once, and none while the workload
 * cluster is unobserved. Returns the partition with the new cells.
 */
function scaleUp(slots: Slot[], ctx: StepContext, poolExhausted: boolean): Slot[] {
  const { input, observed, nowStamp } = ctx
  const now = input.now
  let missing = input.desired - held(slots).length
  // Free physical GPUs left for builds once the cells already waiting for one have theirs.
  let gpus = input.freeGPUs === undefined ? Infinity : input.freeGPUs - slots.filter(waitsForGPU).length
  slots.forEach((s, i) => {
    if (missing <= 0 || s.role !== 'drainScaleDown') return
    slots[i] = backToService(s, nowStamp)
    missing -= 1
  })
  slots.forEach((s, i) => {
    if (s.role !== 'failed' || hasChildren(s.cell)) return
    const f = s.plan.failureCount
    if (f >= MAX_INDEX_FAILURES) {
      slots[i] = {
        ...s,
        plan: {
          ...s.plan,
          reason: 'ReplacementExhausted',
          message: `Cell ${s.plan.name} failed ${f} times; it is not rebuilt until the pool's spec changes.`
        }
      }
      return
    }
    const due = (parseTime(s.plan.lastTransitionTime) ?? now.getTime()) + backoffSeconds(f) * 1000
    if (now.getTime() < due) {
      const message = `${s.cell.seen.message} Rebuilt after a backoff of ${formatSeconds(backoffSeconds(f))}.`
      slots[i] = { ...s, plan: { ...s.plan, message, deadline: new Date(due) } }
      return
    }
    if (poolExhausted || !observed || creating(slots).length >= MAX_BUILDING) return
    if (gpus <= 0) {
      ctx.heldBackForGPU += 1
      return
    }
    gpus -= 1
    slots[i] = build(s, nowStamp, input.templateHash)
  })
  if (missing <= 0 || poolExhausted) return slots
  // An index whose last child went this sync is free again: a replaced cell keeps its index.
  let out = slots
  const used = new Set(out.filter((s) => s.role !== 'gone').map((s) => s.cell.index))
  for (let i = 0; missing > 0; i++) {
    if (used.has(i)) {
      // A cell replaced by a rolling update, or whose Machine someone deleted, keeps its index:
      // its slot waits until the old cell's last child is gone rather than moving to another index.
      if (
        out.some(
          (s) => s.cell.index === i && s.role === 'removing' && (s.plan.reason === 'RollingUpdate' || s.plan.reason === 'MachineDeleted')
        )
      )
        missing -= 1
      continue
    }
    if (!observed || creating(out).length >= MAX_BUILDING) break
    if (gpus <= 0) {
      ctx.heldBackForGPU += missing
      break
    }
    gpus -= 1
    out = out.filter((s) => !(s.role === 'gone' && s.cell.index === i))
    // A cell with no children yet (a Cluster API cell with a bootstrap config template) is new
    // at every sync until its Machine exists: its row is the CellNodeSet's, as for any cell.
    out.push(newSlot(input, i, nowStamp))
    used.add(i)
    missing -= 1
  }
  return out
}

/**
 * Rolling update: one outdated cell at a time, an idle one first, else the highest index, once
 * the pool is settled at its size. Returns the `Updated` condition.
 */
function rollingUpdate(slots: Slot[], ctx: StepContext): ConditionInput {
  const { input, observed, nowStamp } = ctx
  const isOutdated = (s: Slot): boolean =>
    (s.role === 'serve' || s.role === 'drainUpdate' || (s.role === 'removing' && s.plan.reason === 'RollingUpdate')) &&
    s.plan.templateHash !== input.templateHash
  const outdated = slots.filter(isOutdated)
  if (outdated.length === 0 || input.updatePolicy === 'Manual') return updatedCondition(outdated, input.updatePolicy, false, [])
  const why: string[] = []
  if (held(slots).length !== input.desired) why.push(`the pool is not at its desired size (${held(slots).length} of ${input.desired})`)
  if (!observed) why.push(`the workload cluster is unobserved (${input.workload.reason})`)
  if (creating(slots).length > 0 || slots.some((s) => s.plan.building)) why.push('cells are being created')
  if (slots.some((s) => s.role === 'drainScaleDown' || s.role === 'removing')) why.push('cells are being drained or removed')
  if (!updateInProgress(slots) && why.length === 0) {
    const candidates = outdated.filter((s) => s.role === 'serve')
    const pick = candidates.filter((s) => isIdle(s.cell)).at(-1) ?? candidates.at(-1)
    if (pick !== undefined) {
      const i = slots.indexOf(pick)
      slots[i] = pick.plan.readyOnce
        ? drain(pick, 'RollingUpdate', nowStamp, observed)
        : removal(pick, 'RollingUpdate', nowStamp, 'outdated')
    }
  }
  return updatedCondition(slots.filter(isOutdated), input.updatePolicy, updateInProgress(slots), why)
}
