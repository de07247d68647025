/**
 * The sync answer of a pool that may create cells (docs/cellpool.md, "Cells and their children"):
 * the autoscaler says how many cells are wanted, the free physical GPUs how many may be built, and
 * scaling plans every cell (plan/scaling.ts); each cell is answered as its plan says, and the pool
 * gets its CellNodeSet (with the demand the agent reads when autoscaling) and the provisioner's own
 * child. A pool that may not create cells is answered by plan/blocking.ts instead.
 */
import type { TypedObjects } from '../../metacontroller/schemas.ts'
import { hasChildren } from '../cells/cell.ts'
import type { AnswerPlan, CellOutcome } from '../model/answer.ts'
import type { Cell } from '../model/cell.ts'
import type { PoolView } from '../model/pool.ts'
import type { CellProvisioner } from '../model/provisioner.ts'
import type { ResolvedPool } from '../model/resolved-pool.ts'
import type { WorkloadState } from '../model/workload.ts'
import { autoscaleDeadline } from './autoscale.ts'
import { autoscaleConfig, autoscaleFor } from './autoscale-input.ts'
import { freeForPool, physicalGPUsCondition, poolInventory } from './physical-gpus.ts'
import { planScaling } from './scaling.ts'

/** What sync decides from: the pool as read, its cells, and the request's related objects. */
export interface SyncInput {
  view: PoolView
  pool: ResolvedPool
  provisioner: CellProvisioner
  cells: readonly Cell[]
  workload: WorkloadState
  /** What a cell is built from now (the provisioner's template hash). */
  templateHash: string
  /** The request's related objects: the pool's claim template or shared claim (plan/physical-gpus.ts). */
  related: TypedObjects | null | undefined
  now: Date
}

/** The sync answer (see the header). */
export function syncPlan(input: SyncInput): AnswerPlan {
  const { view, pool, provisioner, cells, workload, now } = input
  const scaled = autoscaleFor(view, pool, cells, workload, now)
  const inventory = poolInventory(input.related, view.namespace, pool, view.cellNodeSet?.physicalGPUs, now)
  const freeGPUs = freeForPool(inventory)
  const desired = scaled?.desiredReplicas ?? pool.replicas
  const specChanged =
    view.generation !== undefined && view.previous.observedGeneration !== undefined && view.generation !== view.previous.observedGeneration
  const plan = planScaling({
    pool: view.name,
    cells,
    desired,
    workload,
    templateHash: input.templateHash,
    updatePolicy: pool.updatePolicy,
    ...(scaled?.cellToDrain !== undefined ? { cellToDrain: scaled.cellToDrain } : {}),
    specChanged,
    now,
    prerequisites: { secret: provisioner.needsSecret(pool), seed: provisioner.seed !== undefined },
    drainDeletedGuest: provisioner.drainsDeletedGuest,
    ...(freeGPUs !== undefined ? { freeGPUs } : {}),
    ...(view.cellNodeSet !== undefined ? { rows: view.cellNodeSet.rows } : {}),
    earlierRows: view.previous.cells
  })

  const byIndex = new Map(cells.map((c) => [c.index, c]))
  const outcomes = plan.cells.map((decided): CellOutcome => {
    const cell = byIndex.get(decided.index)
    const outcome: CellOutcome = { index: decided.index, cell, answer: decided.answer, createGuest: decided.createGuest }
    // A cell being built has its entry before it has children: a Cluster API cell with a
    // bootstrap config template has none before its Machine, which waits for the entry's row.
    if ((cell !== undefined && hasChildren(cell)) || decided.answer === 'serve') {
      outcome.entry = { cordon: decided.cordon, readyOnce: decided.readyOnce }
    }
    if (decided.keepRow) outcome.row = decided
    return outcome
  })
  return {
    cells: outcomes,
    nodeSet: { demand: pool.autoscaling.enabled },
    poolChild: 'answer',
    kept: view.strays,
    status: {
      desired,
      progressing: plan.progressing,
      updated: plan.updated,
      autoscale: scaled,
      physicalGPUs: physicalGPUsCondition(inventory, plan.heldBackForGPU, plan.waitingForGPU)
    },
    deadlines: [
      ...plan.cells.map((c) => c.deadline),
      scaled !== undefined ? autoscaleDeadline(scaled, autoscaleConfig(pool), now) : undefined
    ]
  }
}
