/**
 * Sync hook of the GPUCellPool CompositeController (docs/cellpool.md): per cell a bootstrap Secret and
 * the provisioner's children (SwiftGuest: a SwiftSeedProfile and a SwiftGuest); per pool a
 * CellNodeSet, the pool's request to the workload cluster.
 *
 * The answer always carries `children` and a full status (docs/metacontroller.md rule 1). The request
 * is read once (request.ts), its cells once (cell.ts); a pool that may not create cells is
 * answered by blocking.ts; otherwise scaling.ts plans every cell and children.ts answers each.
 */
import type { CellNode } from '../api/cellnodeset.ts'
import type { KubeObject } from '../k8s/objects.ts'
import { keepAsIs } from '../metacontroller/keep.ts'
import { type CompositeResponse, asChildren } from '../metacontroller/schemas.ts'
import { autoscaleDeadline } from './plan/autoscale.ts'
import { autoscaleConfig, autoscaleFor } from './plan/autoscale-input.ts'
import { blockedAnswer, blockingProblem } from './plan/blocking.ts'
import { hasChildren, readCells } from './cells/cell.ts'
import { buildBudget, buildCellNode, buildCellNodeSet, cellChildren } from './build/children.ts'
import { phaseConfig } from './cells/phases.ts'
import { freeForPool, physicalGPUsCondition, poolInventory } from './plan/physical-gpus.ts'
import { readPool } from './request/request.ts'
import { resolvePool } from './request/resolve.ts'
import { planScaling } from './plan/scaling.ts'
import { resyncAfter, statusRow, viewStatus } from './answer/status.ts'
import { witnessed } from './cells/witness.ts'
import { workloadOf } from './request/workload.ts'
import type { CellIdentity } from './model/provisioner.ts'
import { provisionerOf } from './provisioners/choose.ts'
import type { CellPoolSyncRequest } from './model/request.ts'
import type { CellRow } from './model/answer.ts'

/** The sync hook. */
export function sync(request: CellPoolSyncRequest, now: Date): CompositeResponse {
  const provisioner = provisionerOf(request.parent.spec)
  const view = readPool(request, provisioner)
  const pool = resolvePool(view.spec)
  const workload = workloadOf(view, now)
  const currentHash = provisioner.templateHash(pool)
  const cells = readCells(view, workload, phaseConfig(pool), currentHash, now)
  const { blocking, template } = blockingProblem(view, pool, provisioner)
  if (blocking !== undefined) return blockedAnswer(view, pool, cells, workload, blocking, now)

  const scaled = autoscaleFor(view, pool, cells, workload, now)
  const inventory = poolInventory(request.related, view.namespace, pool)
  const freeGPUs = freeForPool(inventory)
  const desired = scaled?.desiredReplicas ?? pool.replicas
  const specChanged =
    view.generation !== undefined && view.previous.observedGeneration !== undefined && view.generation !== view.previous.observedGeneration
  const plan = planScaling({
    pool: view.name,
    cells,
    desired,
    workload,
    templateHash: currentHash,
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
  const budget = buildBudget()
  const children: KubeObject[] = []
  const nodes: CellNode[] = []
  const rows: CellRow[] = []
  for (const decided of plan.cells) {
    const cell = byIndex.get(decided.index)
    const observed = cell?.observed
    const id: CellIdentity = { poolName: view.name, namespace: view.namespace, poolUID: view.uid, index: decided.index }
    const answered = cellChildren(decided, observed, { id, pool, provisioner, template }, budget)
    children.push(...answered)
    // A cell being built has its entry before it has children: a Cluster API cell with a
    // bootstrap config template has none before its Machine, which waits for the entry's row.
    if ((cell !== undefined && hasChildren(cell)) || answered.length > 0 || decided.answer === 'serve') {
      const entry = buildCellNode(pool, id, observed?.guestView?.uid ?? '', decided.cordon)
      nodes.push(provisioner.nodeEntry(witnessed(entry, decided.readyOnce), observed?.guestView))
    }
    if (decided.keepRow) rows.push(statusRow(decided, cell))
  }
  // While the workload cluster is unobserved the CellNodeSet still gets its spec: changing a spec
  // deletes nothing, and the agent carries it out once it is back.
  children.push(buildCellNodeSet(view.name, view.namespace, view.uid, pool, nodes, pool.autoscaling.enabled))
  const indices = [...new Set([...cells.map((c) => c.index), ...plan.cells.map((d) => d.index)])].sort((a, b) => a - b)
  const machines = indices.map((index) => ({ index, machine: byIndex.get(index)?.observed?.guest }))
  const common = { pool, poolName: view.name, namespace: view.namespace, poolUID: view.uid, observed: view.cellInfrastructure }
  const poolChild = provisioner.poolChild({ ...common, cells: machines, children })
  if (poolChild !== undefined) children.push(poolChild)
  children.push(...view.strays.map(keepAsIs))

  const physicalGPUs = physicalGPUsCondition(inventory, plan.heldBackForGPU, plan.waitingForGPU)
  const decided = { rows, desired, progressing: plan.progressing, updated: plan.updated, autoscale: scaled, physicalGPUs }
  const status = viewStatus(view, workload, now, decided)
  const resync = resyncAfter(
    [...plan.cells.map((c) => c.deadline), scaled !== undefined ? autoscaleDeadline(scaled, autoscaleConfig(pool), now) : undefined],
    now
  )
  const response: CompositeResponse = { children: asChildren(children), status }
  if (resync !== undefined) response.resyncAfterSeconds = resync
  return response
}
