/**
 * The scale-up check for free physical GPUs (docs/cellpool.md, "Free physical GPUs"): how many
 * cells the infrastructure cluster has a GPU for, and the pool's `PhysicalGPUsAvailable`
 * condition, named as gpucellpool names them.
 *
 * A new or rebuilt cell is built only while a free device is left for it after the pool's cells
 * that wait for one already (serving, in `Pending` or `AllocatingGPU`); a cell that holds its
 * device is in the held count and asks for nothing. Devices the pool's own shared claim holds
 * are free for the pool. Cells that exist are never touched by the check: it only holds back a
 * build, which waits (the desired number stays) until a device is free.
 *
 * The counts are the workload agent's summary in the CellNodeSet status (request/inventory.ts); a
 * missing or stale one holds every new machine back (a free device of 0) until a fresh one comes.
 *
 * Choices where the spec is silent:
 * - A cell whose claim is allocated but whose guest does not report the device yet counts both
 *   as held and as waiting until KubeSwift reports it: the check errs toward waiting a sync,
 *   never toward a cell without a GPU.
 * - Native pools (SwiftGPUProfile) are not checked in this version: their inventory is
 *   KubeSwift's cluster-scoped SwiftGPUNodes, and relating a type the cluster does not serve
 *   fails every sync of the pool in Metacontroller, where gpucellpool reads a missing CRD as
 *   unknown.
 */
import type { CellNodeSetStatus } from '../../api/cellnodeset.ts'
import type { ConditionInput } from '../../k8s/conditions.ts'
import type { TypedObjects } from '../../metacontroller/schemas.ts'
import { draInventory, GPU_DRIVER, type Inventory } from '../request/inventory.ts'
import type { ResolvedPool } from '../model/resolved-pool.ts'
import type { Slot } from '../model/plan.ts'

export const PHYSICAL_GPUS_CONDITION = 'PhysicalGPUsAvailable'
export const INSUFFICIENT_PHYSICAL_GPU = 'InsufficientPhysicalGPU'

/** The inventory of a pool's GPU backend; `summary`: the agent's (CellNodeSet `status.physicalGPUs`). */
export function poolInventory(
  related: TypedObjects | null | undefined,
  namespace: string,
  pool: ResolvedPool,
  summary: CellNodeSetStatus['physicalGPUs'],
  now: Date
): Inventory {
  if (pool.gpu.backend === 'DRA' && pool.gpu.dra !== undefined) return draInventory(related, namespace, pool.gpu.dra, summary, now)
  return {
    known: false,
    reason: 'NativeBackend',
    message: 'Free physical GPUs are not checked for the Native backend in this version; cells are created without the check.'
  }
}

/**
 * Devices free for the pool's cells: free ones and those its own shared claim holds; 0 while a
 * missing or stale summary makes builds wait; undefined when unknown (nothing held back).
 */
export function freeForPool(inventory: Inventory): number | undefined {
  if (inventory.known) return inventory.free + inventory.own
  return inventory.wait === true ? 0 : undefined
}

/** A serving cell that has no GPU yet and will take a free one. */
export function waitsForGPU(slot: Slot): boolean {
  return slot.role === 'serve' && (slot.plan.phase === 'Pending' || slot.plan.phase === 'AllocatingGPU')
}

/**
 * Machines answered for the first time (`createGuest`) take a free device each, after the
 * machines that wait for one already (`AllocatingGPU`); the others are not created yet and their
 * cell stays `Pending`, saying why. The build was checked when its first children were made, but
 * its machine comes a sync or more later, once they are observed: another tenant may have taken
 * the device meanwhile. Returns how many were held back; `slots` is changed in place.
 */
export function holdGuestsForGPU(slots: Slot[], freeGPUs: number | undefined): number {
  if (freeGPUs === undefined) return 0
  let left = freeGPUs - slots.filter((s) => s.role === 'serve' && s.plan.phase === 'AllocatingGPU').length
  let held = 0
  slots.forEach((s, i) => {
    if (s.role !== 'serve' || !s.plan.createGuest) return
    if (left > 0) {
      left -= 1
      return
    }
    held += 1
    const message =
      'Waiting for a free physical GPU in the infrastructure cluster before the machine is created (condition PhysicalGPUsAvailable).'
    slots[i] = { ...s, plan: { ...s.plan, createGuest: false, message } }
  })
  return held
}

/** The counts a message gives. */
function counts(i: Inventory & { known: true }): string {
  const own = i.own > 0 ? `, ${i.own} held by this pool's claim` : ''
  return `${i.free} free of ${i.ready} ready (${i.published} published, ${i.held} held${own}) device(s) of driver ${GPU_DRIVER}`
}

/**
 * Condition PhysicalGPUsAvailable: False while a build waits for a free device (`heldBack` cells;
 * `waiting`: the pool's cells that wait for one already), Unknown when the inventory says nothing.
 * A cell that exists and waits does not make it False by itself: its claim may already be
 * allocated while KubeSwift has not reported the device yet.
 */
export function physicalGPUsCondition(inventory: Inventory, heldBack: number, waiting: number): ConditionInput {
  const c = (status: ConditionInput['status'], reason: string, message: string): ConditionInput => ({
    type: PHYSICAL_GPUS_CONDITION,
    status,
    reason,
    message
  })
  if (!inventory.known) {
    if (inventory.wait === true) {
      const held = heldBack > 0 ? ` ${heldBack} cell(s) wait to be created until it does.` : ' New machines wait until it does.'
      return c('Unknown', inventory.reason, `${inventory.message}${held}`)
    }
    return c('Unknown', inventory.reason, `${inventory.message} Scale-ups are not held back.`)
  }
  const already = waiting > 0 ? `${waiting} cell(s) of this pool wait for one` : ''
  if (heldBack > 0) {
    return c(
      'False',
      INSUFFICIENT_PHYSICAL_GPU,
      `${heldBack} more cell(s) wait to be created until a physical GPU is free: ${counts(inventory)}${already && `; ${already}`}.`
    )
  }
  return c('True', 'FreeDevices', `${counts(inventory)}.`)
}
