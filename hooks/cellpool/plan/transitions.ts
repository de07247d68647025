/**
 * How the plan of one cell moves between roles while scaling decides (scaling.ts): each move is a
 * pure function from a slot to the next, so every step of the plan says which move it makes and
 * nothing else changes a cell's plan.
 *
 * A role says what a cell is to the pool this sync: `serve` (counts toward the desired number),
 * `failed` (a Failed index that holds its place until it is rebuilt), `drainScaleDown` and
 * `drainUpdate` (cordoned, waiting for its GPU allocations to end), `removing` (its machine, then
 * its other children, are left out of the answer) and `gone` (nothing left, no row).
 */
import { hasChildren } from '../cells/cell.ts'
import { cellName } from '../../api/cellnodeset.ts'
import { apiTime, parseTime } from '../../k8s/time.ts'
import { QUEUED_REASON } from '../cells/phases.ts'
import { drainRestarts, drainWitnessed, NO_WITNESS } from '../cells/witness.ts'
import type { Cell } from '../model/cell.ts'
import type { CellPlan, RemovalReason, Role, ScalingInput, Slot } from '../model/plan.ts'

/** The slot in `role` with `change` applied to its plan; a move clears the plan's deadline unless it keeps it. */
function moved(slot: Slot, role: Role, change: Partial<CellPlan>, keepDeadline = false): Slot {
  const plan: CellPlan = { ...slot.plan, ...change }
  if (!keepDeadline) delete plan.deadline
  return { cell: slot.cell, plan, role }
}

/** The plan a cell starts with: what observation and history give, served. */
export function basePlan(c: Cell): CellPlan {
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
  if (c.seen.failure !== undefined) plan.failure = c.seen.failure
  return plan
}

/**
 * A cell's starting slot: its previous row (phase, readyOnce, failures) and what is observed of
 * it now. The previous row is the pool's status as Metacontroller passed it, which may predate
 * the status the last sync answered (its cache may not have that write yet); where the children
 * tell more than such a row, they win: a drain whose guest is gone goes on as a removal, a machine
 * the CellNodeSet entry witnesses as once Ready stays so (cells/cell.ts), and a drain the entry's cordon
 * witnesses goes on (cells/witness.ts).
 */
export function startingSlot(c: Cell, input: ScalingInput): Slot {
  const plan = basePlan(c)
  const prev = c.previous
  if (input.specChanged) plan.failureCount = 0
  if (c.seen.failedNow) plan.failureCount += 1
  const observed = input.workload.observed
  const children = hasChildren(c)
  const slot: Slot = { cell: c, plan, role: 'serve' }
  // A Machine someone deleted waits at the pool's deletion hooks: a cell that served drains first,
  // keeping its index (drainUpdate counts as held), and is rebuilt there once it is gone.
  if (input.drainDeletedGuest === true && c.guestDeleting && prev?.phase !== 'Deleting' && plan.readyOnce && c.seen.phase !== 'Failed') {
    const since =
      prev?.phase === 'Draining' && prev.reason === 'MachineDeleted' ? (prev.lastTransitionTime ?? apiTime(input.now)) : apiTime(input.now)
    return moved(slot, 'drainUpdate', { phase: 'Draining', reason: 'MachineDeleted', lastTransitionTime: since, cordon: true })
  }
  // A guest someone deleted by hand: the removal is carried through.
  if (prev?.phase === 'Deleting' || (c.guestDeleting && prev?.phase !== 'Failed' && c.seen.phase !== 'Failed')) {
    if (!children) return moved(slot, 'gone', { keepRow: false, answer: 'none' }, true)
    return moved(slot, 'removing', {
      phase: 'Deleting',
      reason: prev?.phase === 'Deleting' ? prev.reason : 'GuestDeleted',
      message: removalMessage(c),
      lastTransitionTime: prev?.phase === 'Deleting' ? (prev.lastTransitionTime ?? apiTime(input.now)) : apiTime(input.now),
      answer: observed ? 'remove' : 'hold',
      cordon: plan.readyOnce
    })
  }
  if (c.seen.phase === 'Failed') {
    if (!children) return moved(slot, 'failed', { answer: 'none' })
    if (!observed) return heldFailed(moved(slot, 'failed', {}))
    return moved(slot, 'failed', { answer: 'remove', message: `${c.seen.message} Removing its children.` })
  }
  if (prev?.phase === 'Draining' && children) {
    const role = prev.reason === 'RollingUpdate' ? 'drainUpdate' : 'drainScaleDown'
    // The row says Draining but the guest is gone: the sync that completed the drain deleted
    // the guest and answered Deleting, and a sync that started from an older copy of the pool
    // answered Draining over it (Metacontroller replaces the whole status with each answer, and
    // its parent comes from a cache that may not have the last write yet). Nothing is left to
    // drain: the removal goes on, and the guest is never built again.
    if (!c.children.guest) return removal({ ...slot, role }, drainedReason(role, prev.reason), apiTime(input.now), 'drained')
    return moved(slot, role, {
      phase: 'Draining',
      reason: prev.reason,
      lastTransitionTime: drainRestarts(c) ? apiTime(input.now) : (prev.lastTransitionTime ?? apiTime(input.now)),
      cordon: true
    })
  }
  // The entry remembers a drain this status predates (cells/witness.ts): the drain goes on, its 30 s
  // counted again from now; a pool that still needs the cell returns it to service (scaleUp).
  if (drainWitnessed(c))
    return moved(slot, 'drainScaleDown', { phase: 'Draining', reason: 'ScaleDown', lastTransitionTime: apiTime(input.now), cordon: true })
  return slot
}

/** Why a drained cell goes: a Machine deleted by someone else keeps its reason, so its index waits for it. */
export function drainedReason(role: Role, reason: string): RemovalReason {
  if (reason === 'MachineDeleted') return 'MachineDeleted'
  return role === 'drainUpdate' ? 'RollingUpdate' : 'ScaleDown'
}

/** A Failed cell whose children are kept while the workload cluster is unobserved. */
export function heldFailed(slot: Slot): Slot {
  return moved(
    slot,
    slot.role,
    { answer: 'hold', message: `${slot.cell.seen.message} Kept as it is while the workload cluster is unobserved.` },
    true
  )
}

function removalMessage(c: Cell): string {
  if (c.children.guest) return `Deleting guest ${c.name}; its seed profile and bootstrap Secret follow once it is gone.`
  return 'Deleting the seed profile and bootstrap Secret.'
}

/** The cell's children go, the machine first; a Failed cell keeps its phase and says why it goes. */
export function removal(slot: Slot, reason: RemovalReason, since: string, why: string): Slot {
  const failed = slot.role === 'failed'
  const common: Partial<CellPlan> = { answer: 'remove', cordon: slot.plan.readyOnce && !failed, createGuest: false }
  if (failed) return moved(slot, 'removing', { ...common, message: `${slot.cell.seen.message} Removing its children (${why}).` })
  return moved(slot, 'removing', {
    ...common,
    phase: 'Deleting',
    reason,
    message: removalMessage(slot.cell),
    lastTransitionTime: since
  })
}

/** The cell is cordoned and waits for its GPU allocations to end. */
export function drain(slot: Slot, reason: 'ScaleDown' | 'RollingUpdate', since: string, observed: boolean): Slot {
  return moved(slot, reason === 'RollingUpdate' ? 'drainUpdate' : 'drainScaleDown', {
    phase: 'Draining',
    reason,
    cordon: true,
    lastTransitionTime: since,
    message: observed
      ? 'Draining: cordoned, waiting for its HAMi allocations to end.'
      : 'Draining: waiting until the workload cluster is observed.'
  })
}

/** A cell draining for a scale-down serves again. */
export function backToService(slot: Slot, since: string): Slot {
  const seen = slot.cell.seen
  return moved(
    slot,
    'serve',
    { phase: seen.phase, reason: seen.reason, message: `Returned to service: ${seen.message}`, cordon: false, lastTransitionTime: since },
    true
  )
}

/** A new build at the cell's index: its Secret and seed now, its machine once they are observed. */
export function build(slot: Slot, since: string, templateHash: string): Slot {
  const next = moved(slot, 'serve', {
    phase: 'Pending',
    reason: 'GuestNotCreated',
    message: 'Creating the bootstrap Secret and seed profile.',
    readyOnce: false,
    lastTransitionTime: since,
    answer: 'serve',
    building: true,
    keepRow: true,
    templateHash
  })
  delete next.plan.failure
  return next
}

/**
 * A slot for a new index: nothing observed; of the index's previous status row, if any, only its
 * failure count (failures are counted per index) and, while that row says Pending, its clock. A
 * build whose machine the provisioner makes from nothing observed (a Cluster API cell with a
 * bootstrap config template) has no child until its Machine is made, so without this its failures
 * would be forgotten between the sync that decided the rebuild and the one that makes the Machine,
 * and the backoff would never grow nor the index be exhausted.
 */
export function newSlot(input: ScalingInput, index: number, since: string): Slot {
  const name = cellName(input.pool, index)
  const earlier = input.earlierRows?.get(name)
  const earlierSince = earlier?.phase === 'Pending' ? earlier.lastTransitionTime : undefined
  const start = earlierSince !== undefined && parseTime(earlierSince) !== undefined ? earlierSince : since
  const cell: Cell = {
    index,
    name,
    seen: {
      phase: 'Pending',
      // A queued build stays queued (creation.ts): its clock is the one it was queued at.
      reason: earlierSince !== undefined && earlier?.reason === QUEUED_REASON ? QUEUED_REASON : 'GuestNotCreated',
      message: 'Creating the bootstrap Secret and seed profile.',
      readyOnce: false,
      lastTransitionTime: start,
      failedNow: false
    },
    previous: undefined,
    children: { secret: false, seed: false, guest: false },
    guestDeleting: false,
    templateHash: input.templateHash,
    row: input.rows?.get(name),
    ownRow: undefined,
    witness: NO_WITNESS
  }
  const slot = build({ cell, plan: basePlan(cell), role: 'serve' }, start, input.templateHash)
  slot.plan.failureCount = input.specChanged ? 0 : (earlier?.failureCount ?? 0)
  return slot
}
