/**
 * How many cells are built at once, and in what order their machines are created
 * (docs/cellpool.md, "Phases" and "Order"): at most {@link MAX_CREATING} machines at once, and
 * {@link MAX_QUEUED} more cells prepared meanwhile, so that the agent has checked their Node
 * names by the time a machine turns Ready and the next one is created in the same sync.
 */
import { CREATING_PHASES, QUEUED_REASON } from '../cells/phases.ts'
import type { StepContext, Slot } from '../model/plan.ts'

/** Most machines being created at once (a machine exists or is answered, its cell not yet Ready once). */
export const MAX_CREATING = 2
/**
 * Most cells prepared besides those (Secret, seed and CellNodeSet entry made, no machine yet), so
 * that the agent has checked their Node names by the time a machine turns Ready: the next machine
 * is then created in the same sync, and a pool comes up in about N/2 rounds rather than N.
 */
export const MAX_QUEUED = 2
/** Most cells being built at once: creating their machines, or queued for one. */
export const MAX_BUILDING = MAX_CREATING + MAX_QUEUED

/** Serving cells still being built (before their first Ready). */
export function creating(slots: readonly Slot[]): Slot[] {
  return slots.filter((s) => s.role === 'serve' && CREATING_PHASES.has(s.plan.phase) && !s.plan.readyOnce)
}

/**
 * Creation order for a serving cell without a machine: the machine only once what the
 * provisioner makes it from (its Secret and seed) is observed and the CellNodeSet row shows no
 * Node of its name (the status generation-matched), and while fewer than {@link MAX_CREATING}
 * machines are being created, lowest index first. A cell ready for its machine beyond that is
 * queued (`MachineQueued`, no budget); its transition time is stamped when its machine comes.
 */
export function orderCreation(slots: Slot[], ctx: StepContext): void {
  const { workload } = ctx.input
  const needs = ctx.input.prerequisites ?? { secret: true, seed: true }
  let machines = creating(slots).filter((s) => s.cell.children.guest).length
  const candidates = slots
    .map((s, i) => ({ s, i }))
    .filter(({ s }) => s.role === 'serve' && !s.cell.children.guest && s.plan.answer === 'serve')
    .sort((a, b) => a.s.cell.index - b.s.cell.index)
  for (const { s, i } of candidates) {
    const c = s.cell
    const row = c.row
    const prepared = (c.children.secret || !needs.secret) && (c.children.seed || !needs.seed)
    const confirmed = prepared && ctx.observed && workload.generationMatched && row !== undefined && !row.present
    const createGuest = confirmed && machines < MAX_CREATING
    if (createGuest) machines += 1
    const plan = { ...s.plan, createGuest }
    if (plan.phase === 'Pending' && (plan.reason === 'GuestNotCreated' || plan.reason === QUEUED_REASON)) {
      if (createGuest) {
        plan.reason = 'GuestNotCreated'
      } else if (confirmed) {
        plan.reason = QUEUED_REASON
        plan.message = `Prepared, no Node of this name present: its machine is created once fewer than ${MAX_CREATING} are being created.`
      } else {
        plan.reason = 'GuestNotCreated'
        plan.message = !prepared
          ? 'Waiting for the bootstrap Secret and seed profile to be created.'
          : row === undefined || !workload.generationMatched
            ? 'Waiting for the workload agent to confirm that no Node of this name is present.'
            : plan.message
      }
      // The budget waits while queued (cells/phases.ts): the time is stamped on entering and on leaving.
      // (A new slot carries its earlier row's queue in `seen`: transitions.ts `newSlot`.)
      const wasQueued = c.previous?.reason === QUEUED_REASON || c.seen.reason === QUEUED_REASON
      if (wasQueued !== (plan.reason === QUEUED_REASON)) plan.lastTransitionTime = ctx.nowStamp
    }
    slots[i] = { ...s, plan }
  }
}
