/**
 * What happens to each cell of a pool (cellpool.md, "Cells and their children", "Phases" and
 * "Scaling, drain and updates"): which cells serve, which are built, drained, removed or rebuilt,
 * and in what order their children come and go. A pure function of the cells' phases, the desired
 * number and the workload cluster's state; sync.ts turns the plan into children.
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
import type { CellNodeStatus } from '../api/cellnodeset.ts'
import type { ConditionInput } from '../k8s/conditions.ts'
import { hasChildren, type Cell } from './cell.ts'
import { CREATING_PHASES, type DecidedCell } from './phases.ts'
import { formatSeconds, parseTime, stamp } from './time.ts'
import type { WorkloadState } from './workload.ts'

/** First backoff before a Failed index is rebuilt. */
export const BACKOFF_START_SECONDS = 30
/** Longest backoff. */
export const BACKOFF_MAX_SECONDS = 30 * 60
/** Failures of one index after which it is not rebuilt any more. */
export const MAX_INDEX_FAILURES = 5
/** Failures in all after which a pool none of whose cells was ever Ready stops creating. */
export const MAX_POOL_FAILURES_NEVER_READY = 3
/** Most cells being created at once. */
export const MAX_CREATING = 2
/** Shortest drain: HAMi's scheduler annotates a Pod before binding it. */
export const MIN_DRAIN_SECONDS = 30

/** Why a cell is being removed. */
export type RemovalReason = 'ScaleDown' | 'RollingUpdate' | 'Failed' | 'MachineDeleted'

/** Everything a scaling decision depends on. */
export interface ScalingInput {
  /** The pool's name: cell `i` is `<pool>-<i>`. */
  pool: string
  cells: readonly Cell[]
  desired: number
  workload: WorkloadState
  /** Hash of what a cell is built from now. */
  templateHash: string
  updatePolicy: 'Manual' | 'RollingUpdate'
  /** The autoscaler chose this idle cell for a scale-down. */
  cellToDrain?: string
  /** The pool's spec changed since the last status: failure counts start again. */
  specChanged: boolean
  now: Date
  /**
   * What the provisioner makes a cell from besides its machine (default both): the machine is
   * created only once they are observed.
   */
  prerequisites?: { secret: boolean; seed: boolean }
  /**
   * A machine someone deleted is drained before it goes (Cluster API: the pool's deletion hooks
   * hold it), and its index waits for it, as a rolling update's does.
   */
  drainDeletedGuest?: boolean
  /** The CellNodeSet's rows by Node name, for cells that have no children yet. */
  rows?: ReadonlyMap<string, CellNodeStatus>
}

/** What sync answers for a cell. */
export type CellAnswer =
  /** Secret and seed profile as built now, the guest kept (or built when `createGuest`). */
  | 'serve'
  /** Every observed child exactly as it is. */
  | 'hold'
  /** The guest left out; seed profile and Secret kept as they are until the guest is gone. */
  | 'remove'
  /** No child: a Failed index waiting for its rebuild, or a row about to disappear. */
  | 'none'

/** The plan for one cell. */
export interface CellPlan extends DecidedCell {
  answer: CellAnswer
  /** Answer a freshly built guest (creation order satisfied). */
  createGuest: boolean
  /** Its CellNodeSet entry asks for a cordon. */
  cordon: boolean
  /** The cell is a new build started by this sync (its children are created now). */
  building: boolean
  /** Keep a status row for it. */
  keepRow: boolean
  templateHash: string | undefined
  /** When this cell next needs a sync (a budget, a drain's 30 s, a backoff). */
  deadline?: Date
}

/** The whole plan. */
export interface ScalingPlan {
  cells: CellPlan[]
  progressing: ConditionInput
  updated: ConditionInput
}

/** Backoff before rebuilding an index that failed `failures` times: 30 s, doubling, at most 30 min. */
export function backoffSeconds(failures: number): number {
  if (failures <= 0) return 0
  return Math.min(BACKOFF_START_SECONDS * 2 ** Math.min(failures - 1, 20), BACKOFF_MAX_SECONDS)
}

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

interface Working {
  input: Cell
  plan: CellPlan
  /** The cell's role: serving (counts toward desired), held Failed index, removed, draining. */
  role: 'serve' | 'failed' | 'drainScaleDown' | 'drainUpdate' | 'removing' | 'gone'
}

/** The plan for every cell (cellpool.md, "Scaling, drain and updates"). */
export function planScaling(input: ScalingInput): ScalingPlan {
  const { workload, now } = input
  const nowStamp = stamp(now)
  const observed = workload.observed
  const cells = [...input.cells].sort((a, b) => a.index - b.index)
  const work: Working[] = cells.map((c) => initial(c, input))

  const everReady = work.some((w) => w.plan.readyOnce)
  const failuresInAll = work.reduce((n, w) => n + w.plan.failureCount, 0)
  const poolExhausted = !everReady && failuresInAll >= MAX_POOL_FAILURES_NEVER_READY

  // Drains in progress: complete, or wait.
  for (const w of work) {
    if (w.role !== 'drainScaleDown' && w.role !== 'drainUpdate') continue
    const check = drainComplete(w.input.ownRow, workload, w.plan.lastTransitionTime, now)
    if (check.done) {
      startRemoval(
        w,
        w.plan.reason === 'MachineDeleted' ? 'MachineDeleted' : w.role === 'drainUpdate' ? 'RollingUpdate' : 'ScaleDown',
        nowStamp,
        'drained'
      )
    } else {
      w.plan.message = `Draining: waiting until ${check.waiting}.`
      if (check.deadline !== undefined) w.plan.deadline = check.deadline
    }
  }

  const held = (): Working[] => work.filter((w) => w.role === 'serve' || w.role === 'failed' || w.role === 'drainUpdate')
  const creating = (): number => work.filter((w) => w.role === 'serve' && CREATING_PHASES.has(w.plan.phase) && !w.plan.readyOnce).length

  // Scale down: Failed first, then never-Ready cells, then the autoscaler's idle cell, else the highest index.
  let excess = held().length - input.desired
  if (excess > 0) {
    const order = [
      ...held()
        .filter((w) => w.role === 'failed')
        .reverse(),
      ...held()
        .filter((w) => w.role === 'serve' && !w.plan.readyOnce)
        .reverse(),
      ...held().filter((w) => w.role === 'serve' && w.plan.readyOnce && w.input.name === input.cellToDrain),
      ...held()
        .filter((w) => (w.role === 'serve' && w.plan.readyOnce) || w.role === 'drainUpdate')
        .reverse()
    ]
    const seen = new Set<Working>()
    for (const w of order) {
      if (excess <= 0) break
      if (seen.has(w)) continue
      seen.add(w)
      excess -= 1
      if (w.role === 'failed') {
        if (hasChildren(w.input)) {
          if (observed) startRemoval(w, 'Failed', w.plan.lastTransitionTime, 'no longer wanted')
          else holdFailed(w)
          w.plan.keepRow = hasChildren(w.input)
        } else {
          w.role = 'gone'
          w.plan.keepRow = false
          w.plan.answer = 'none'
        }
      } else if (!w.plan.readyOnce) {
        if (observed) startRemoval(w, 'ScaleDown', nowStamp, 'not needed')
      } else if (w.role === 'serve') {
        startDrain(w, 'ScaleDown', nowStamp, observed)
      } else {
        w.role = 'drainScaleDown'
        w.plan.reason = 'ScaleDown'
      }
    }
  }

  // Scale up: return cells draining for a scale-down first, then rebuild or add at the lowest free indices.
  let missing = input.desired - held().length
  for (const w of work) {
    if (missing <= 0) break
    if (w.role !== 'drainScaleDown') continue
    backToService(w, nowStamp)
    missing -= 1
  }
  const due = work.filter((w) => w.role === 'failed' && !hasChildren(w.input))
  for (const w of due) {
    const f = w.plan.failureCount
    if (f >= MAX_INDEX_FAILURES) {
      w.plan.reason = 'ReplacementExhausted'
      w.plan.message = `Cell ${w.plan.name} failed ${f} times; it is not rebuilt until the pool's spec changes.`
      continue
    }
    const after = (parseTime(w.plan.lastTransitionTime) ?? now.getTime()) + backoffSeconds(f) * 1000
    if (now.getTime() < after) {
      w.plan.message = `${failureText(w.plan.message)} Rebuilt after a backoff of ${formatSeconds(backoffSeconds(f))}.`
      w.plan.deadline = new Date(after)
      continue
    }
    if (poolExhausted) continue
    if (!observed || creating() >= MAX_CREATING) continue
    startBuild(w, nowStamp, input.templateHash)
  }
  if (missing > 0 && !poolExhausted) {
    // An index whose last child went this sync is free again: a replaced cell keeps its index.
    const used = new Set(work.filter((w) => w.role !== 'gone').map((w) => w.input.index))
    for (let i = 0; missing > 0; i++) {
      if (used.has(i)) {
        // A cell replaced by a rolling update keeps its index: its slot waits until the old
        // cell's last child is gone rather than moving to another index.
        if (
          work.some(
            (w) => w.input.index === i && w.role === 'removing' && (w.plan.reason === 'RollingUpdate' || w.plan.reason === 'MachineDeleted')
          )
        )
          missing -= 1
        continue
      }
      if (!observed || creating() >= MAX_CREATING) break
      const goneAt = work.findIndex((w) => w.role === 'gone' && w.input.index === i)
      if (goneAt >= 0) work.splice(goneAt, 1)
      const name = `${input.pool}-${i}`
      const fresh: Cell = {
        index: i,
        name,
        seen: {
          phase: 'Pending',
          reason: 'GuestNotCreated',
          message: 'Creating the bootstrap Secret and seed profile.',
          readyOnce: false,
          lastTransitionTime: nowStamp,
          failedNow: false
        },
        previous: undefined,
        children: { secret: false, seed: false, guest: false },
        guestDeleting: false,
        templateHash: input.templateHash,
        // A cell with no children yet (a Cluster API cell with a bootstrap config template) is new
        // at every sync until its Machine exists: its row is the CellNodeSet's, as for any cell.
        row: input.rows?.get(name),
        ownRow: undefined
      }
      const w: Working = { input: fresh, plan: basePlan(fresh), role: 'serve' }
      startBuild(w, nowStamp, input.templateHash)
      work.push(w)
      used.add(i)
      missing -= 1
    }
  }

  // Creation order for cells without a guest: the guest only once Secret and seed profile are observed
  // and the row shows no Node of that name (status generation-matched).
  for (const w of work) {
    if (w.role !== 'serve' || w.input.children.guest || w.plan.answer !== 'serve') continue
    const row = w.input.row
    const needs = input.prerequisites ?? { secret: true, seed: true }
    const prepared = (w.input.children.secret || !needs.secret) && (w.input.children.seed || !needs.seed)
    const ready = prepared && observed && workload.generationMatched && row !== undefined && !row.present
    w.plan.createGuest = ready
    if (!ready && w.plan.phase === 'Pending' && w.plan.reason === 'GuestNotCreated') {
      w.plan.message = !prepared
        ? 'Waiting for the bootstrap Secret and seed profile to be created.'
        : row === undefined || !workload.generationMatched
          ? 'Waiting for the workload agent to confirm that no Node of this name is present.'
          : w.plan.message
    }
  }

  // Rolling update: one outdated cell at a time, an idle one first, else the highest index.
  const outdated = work.filter(
    (w) =>
      (w.role === 'serve' || w.role === 'drainUpdate' || (w.role === 'removing' && w.plan.reason === 'RollingUpdate')) &&
      w.plan.templateHash !== input.templateHash
  )
  let updated: ConditionInput
  if (outdated.length === 0) {
    updated = { type: 'Updated', status: 'True', reason: 'UpToDate', message: 'Every cell is built from the current template.' }
  } else if (input.updatePolicy === 'Manual') {
    updated = {
      type: 'Updated',
      status: 'False',
      reason: 'TemplateChanged',
      message: `Cells built from an earlier template: ${names(outdated)}; updatePolicy Manual keeps them until they are replaced (new cells use the current template).`
    }
  } else {
    const inProgress = work.some((w) => w.role === 'drainUpdate' || (w.role === 'removing' && w.plan.reason === 'RollingUpdate'))
    const why: string[] = []
    if (held().length !== input.desired) why.push(`the pool is not at its desired size (${held().length} of ${input.desired})`)
    if (!observed) why.push(`the workload cluster is unobserved (${workload.reason})`)
    if (creating() > 0 || work.some((w) => w.plan.building)) why.push('cells are being created')
    if (work.some((w) => w.role === 'drainScaleDown' || w.role === 'removing')) why.push('cells are being drained or removed')
    if (!inProgress && why.length === 0) {
      const candidates = outdated.filter((w) => w.role === 'serve')
      const pick = candidates.filter((w) => isIdle(w.input)).at(-1) ?? candidates.at(-1)
      if (pick !== undefined) {
        if (pick.plan.readyOnce) startDrain(pick, 'RollingUpdate', nowStamp, observed)
        else startRemoval(pick, 'RollingUpdate', nowStamp, 'outdated')
      }
    }
    const started = work.some((w) => w.role === 'drainUpdate' || (w.role === 'removing' && w.plan.reason === 'RollingUpdate'))
    updated = started
      ? {
          type: 'Updated',
          status: 'False',
          reason: 'RollingUpdate',
          message: `Replacing cells built from an earlier template one at a time: ${names(outdated)}.`
        }
      : {
          type: 'Updated',
          status: 'False',
          reason: 'UpdateBlocked',
          message: `Cells built from an earlier template: ${names(outdated)}; the rolling update waits because ${why.join(', ') || 'no cell can be drained'}.`
        }
  }

  const plans = work.sort((a, b) => a.plan.index - b.plan.index).map((w) => w.plan)
  return { cells: plans, progressing: progressing(work, input, poolExhausted, missingAfter(work, input), failuresInAll), updated }
}

function missingAfter(work: Working[], input: ScalingInput): number {
  return input.desired - work.filter((w) => w.role === 'serve' || w.role === 'failed' || w.role === 'drainUpdate').length
}

function names(ws: readonly Working[]): string {
  return ws.map((w) => w.plan.name).join(', ')
}

function basePlan(c: Cell): CellPlan {
  const plan: CellPlan = {
    index: c.index,
    name: c.name,
    phase: c.seen.phase,
    reason: c.seen.reason,
    message: c.seen.message,
    lastTransitionTime: c.seen.lastTransitionTime,
    readyOnce: c.seen.readyOnce,
    failureCount: c.previous?.failureCount ?? 0,
    answer: 'serve',
    createGuest: false,
    cordon: false,
    building: false,
    keepRow: true,
    templateHash: c.templateHash
  }
  if (c.seen.deadline !== undefined) plan.deadline = c.seen.deadline
  return plan
}

/** The role a cell starts this sync with, from its observed phase and its previous row. */
/**
 * A cell's starting point: its previous row (phase, readyOnce, failures) and what is observed of
 * it now. The previous row is the pool's status as Metacontroller passed it, which may predate
 * the status the last sync answered (its cache may not have that write yet); where the children
 * tell more than such a row, they win (a drain whose guest is gone). readyOnce has no such
 * witness: a sync from an older pool can lose it for a Ready cell whose Node turned not Ready
 * meanwhile, and that cell is then treated as never Ready (a scale-down removes it undrained).
 */
function initial(c: Cell, input: ScalingInput): Working {
  const plan = basePlan(c)
  const prev = c.previous
  if (input.specChanged) plan.failureCount = 0
  if (c.seen.failedNow) plan.failureCount += 1
  const observed = input.workload.observed
  const children = hasChildren(c)
  // A Machine someone deleted waits at the pool's deletion hooks: a cell that served drains first,
  // keeping its index (drainUpdate counts as held), and is rebuilt there once it is gone.
  if (input.drainDeletedGuest === true && c.guestDeleting && prev?.phase !== 'Deleting' && plan.readyOnce && c.seen.phase !== 'Failed') {
    plan.phase = 'Draining'
    plan.reason = 'MachineDeleted'
    plan.lastTransitionTime =
      prev?.phase === 'Draining' && prev.reason === 'MachineDeleted' ? (prev.lastTransitionTime ?? stamp(input.now)) : stamp(input.now)
    plan.cordon = true
    delete plan.deadline
    return { input: c, plan, role: 'drainUpdate' }
  }
  // A guest someone deleted by hand: the removal is carried through.
  if (prev?.phase === 'Deleting' || (c.guestDeleting && prev?.phase !== 'Failed' && c.seen.phase !== 'Failed')) {
    const why = prev?.phase === 'Deleting' ? prev.reason : 'GuestDeleted'
    const w: Working = { input: c, plan, role: 'removing' }
    if (!children) {
      plan.keepRow = false
      plan.answer = 'none'
      w.role = 'gone'
      return w
    }
    plan.phase = 'Deleting'
    plan.reason = why
    plan.message = removalMessage(c)
    plan.lastTransitionTime = prev?.phase === 'Deleting' ? (prev.lastTransitionTime ?? stamp(input.now)) : stamp(input.now)
    plan.answer = observed || !children ? 'remove' : 'hold'
    plan.cordon = plan.readyOnce
    delete plan.deadline
    return w
  }
  if (c.seen.phase === 'Failed') {
    const w: Working = { input: c, plan, role: 'failed' }
    delete plan.deadline
    if (!children) {
      plan.answer = 'none'
      return w
    }
    if (observed) {
      plan.answer = 'remove'
      plan.message = `${failureText(c.seen.message)} Removing its children.`
    } else holdFailed(w)
    return w
  }
  if (prev?.phase === 'Draining' && children) {
    const role = prev.reason === 'RollingUpdate' ? 'drainUpdate' : 'drainScaleDown'
    if (!c.children.guest) {
      // The row says Draining but the guest is gone: the sync that completed the drain deleted
      // the guest and answered Deleting, and a sync that started from an older copy of the pool
      // answered Draining over it (Metacontroller replaces the whole status with each answer, and
      // its parent comes from a cache that may not have the last write yet). Nothing is left to
      // drain: the removal goes on, and the guest is never built again.
      const w: Working = { input: c, plan, role }
      startRemoval(w, role === 'drainUpdate' ? 'RollingUpdate' : 'ScaleDown', stamp(input.now), 'drained')
      return w
    }
    plan.phase = 'Draining'
    plan.reason = prev.reason
    plan.lastTransitionTime = prev.lastTransitionTime ?? stamp(input.now)
    plan.cordon = true
    delete plan.deadline
    return { input: c, plan, role }
  }
  return { input: c, plan, role: 'serve' }
}

/** A Failed row's message without what this module appended to it on an earlier sync. */
export function failureText(message: string): string {
  return message.replace(/ (Removing its children|Kept as it is while|Rebuilt after a backoff).*$/, '')
}

function holdFailed(w: Working): void {
  w.plan.answer = 'hold'
  w.plan.message = `${failureText(w.input.seen.message)} Kept as it is while the workload cluster is unobserved.`
}

function removalMessage(c: Cell): string {
  if (c.children.guest) return `Deleting guest ${c.name}; its seed profile and bootstrap Secret follow once it is gone.`
  return 'Deleting the seed profile and bootstrap Secret.'
}

function startRemoval(w: Working, reason: RemovalReason, since: string, why: string): void {
  const failed = w.role === 'failed'
  w.role = 'removing'
  w.plan.answer = 'remove'
  w.plan.cordon = w.plan.readyOnce && !failed
  w.plan.createGuest = false
  delete w.plan.deadline
  if (failed) {
    w.plan.message = `${failureText(w.input.seen.message)} Removing its children (${why}).`
    return
  }
  w.plan.phase = 'Deleting'
  w.plan.reason = reason
  w.plan.message = removalMessage(w.input)
  w.plan.lastTransitionTime = since
}

function startDrain(w: Working, reason: 'ScaleDown' | 'RollingUpdate', since: string, observed: boolean): void {
  w.role = reason === 'RollingUpdate' ? 'drainUpdate' : 'drainScaleDown'
  w.plan.phase = 'Draining'
  w.plan.reason = reason
  w.plan.cordon = true
  w.plan.lastTransitionTime = since
  w.plan.message = observed
    ? 'Draining: cordoned, waiting for its HAMi allocations to end.'
    : 'Draining: waiting until the workload cluster is observed.'
  delete w.plan.deadline
}

function backToService(w: Working, since: string): void {
  w.role = 'serve'
  w.plan.phase = w.input.seen.phase
  w.plan.reason = w.input.seen.reason
  w.plan.message = `Returned to service: ${w.input.seen.message}`
  w.plan.cordon = false
  w.plan.lastTransitionTime = since
}

function startBuild(w: Working, since: string, templateHash: string): void {
  w.role = 'serve'
  w.plan.phase = 'Pending'
  w.plan.reason = 'GuestNotCreated'
  w.plan.message = 'Creating the bootstrap Secret and seed profile.'
  w.plan.readyOnce = false
  w.plan.lastTransitionTime = since
  w.plan.answer = 'serve'
  w.plan.building = true
  w.plan.keepRow = true
  w.plan.templateHash = templateHash
  delete w.plan.deadline
}

function progressing(work: Working[], input: ScalingInput, poolExhausted: boolean, missing: number, failures: number): ConditionInput {
  const c = (status: 'True' | 'False', reason: string, message: string): ConditionInput => ({
    type: 'Progressing',
    status,
    reason,
    message
  })
  const building = work.filter((w) => w.role === 'serve' && CREATING_PHASES.has(w.plan.phase) && !w.plan.readyOnce)
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
  const failed = work.filter((w) => w.role === 'failed')
  if (failed.length > 0) return c('True', 'Rebuilding', `Failed cells wait for their rebuild: ${names(failed)}.`)
  if (missing > 0) return c('True', 'CellsChanging', `${missing} more cell(s) wait until fewer than ${MAX_CREATING} are being created.`)
  return c('False', 'Settled', `The pool holds its ${input.desired} desired cell(s); nothing is being created, drained or removed.`)
}
