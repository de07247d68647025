/**
 * The one renderer of the cellpool hooks' answers (model/answer.ts): a plan, from sync, the blocked
 * answer or teardown alike, becomes the children, the CellNodeSet entries, the status rows and the
 * resync. A new child or status field is one change here.
 *
 * The answer always carries `children` and a full status (docs/metacontroller.md rule 1). The
 * children come in a fixed order: each cell's (in index order; Secret, seed, machine), the
 * CellNodeSet, the provisioner's own child of the pool, then what is kept as observed.
 *
 * Choice where the spec is silent: while the workload cluster is unobserved the CellNodeSet still
 * gets its spec. Changing a spec deletes nothing, and the agent carries it out once it is back.
 */
import type { CellNode } from '../../api/cellnodeset.ts'
import type { KubeObject } from '../../k8s/objects.ts'
import { keepAsIs } from '../../metacontroller/keep.ts'
import { asChildren, type CompositeResponse } from '../../metacontroller/schemas.ts'
import { buildBudget, buildCellNode, buildCellNodeSet, cellChildren } from '../build/children.ts'
import { witnessed } from '../cells/witness.ts'
import type { AnswerPlan, CellRow } from '../model/answer.ts'
import type { PoolView } from '../model/pool.ts'
import type { CellIdentity, CellProvisioner } from '../model/provisioner.ts'
import type { ResolvedPool } from '../model/resolved-pool.ts'
import type { WorkloadState } from '../model/workload.ts'
import { resyncAfter, statusRow, viewStatus } from './status.ts'

/** What every answer is rendered with besides its plan: the pool as read, and the request's time. */
export interface AnswerContext {
  view: PoolView
  pool: ResolvedPool
  provisioner: CellProvisioner
  workload: WorkloadState
  /** The join template (decoded), rendered into each new cell's bootstrap Secret; `''` when none is built. */
  template: string
  now: Date
}

/** The response a plan says (see the header). */
export function renderAnswer(plan: AnswerPlan, context: AnswerContext): CompositeResponse {
  const { view, pool, provisioner } = context
  const budget = buildBudget()
  const children: KubeObject[] = []
  const nodes: CellNode[] = []
  const rows: CellRow[] = []
  for (const outcome of plan.cells) {
    const observed = outcome.cell?.observed
    const id: CellIdentity = { poolName: view.name, namespace: view.namespace, poolUID: view.uid, index: outcome.index }
    children.push(...cellChildren(outcome, observed, { id, pool, provisioner, template: context.template }, budget))
    if (outcome.entry !== undefined) {
      const entry = buildCellNode(pool, id, observed?.guestView?.uid ?? '', outcome.entry.cordon)
      nodes.push(provisioner.nodeEntry(witnessed(entry, outcome.entry.readyOnce), observed?.guestView))
    }
    if (outcome.row !== undefined) rows.push(statusRow(outcome.row, outcome.cell))
  }
  if (plan.nodeSet === 'keep') {
    if (view.cellNodeSet !== undefined) children.push(keepAsIs(view.cellNodeSet.object))
  } else if (plan.nodeSet !== 'none') {
    children.push(buildCellNodeSet(view.name, view.namespace, view.uid, pool, nodes, plan.nodeSet.demand))
  }
  if (plan.poolChild === 'keep') {
    if (view.cellInfrastructure !== undefined) children.push(keepAsIs(view.cellInfrastructure))
  } else if (plan.poolChild === 'answer') {
    const own = provisioner.poolChild({
      pool,
      poolName: view.name,
      namespace: view.namespace,
      poolUID: view.uid,
      cells: plan.cells.map((c) => ({ index: c.index, machine: c.cell?.observed?.guest })),
      children,
      observed: view.cellInfrastructure
    })
    if (own !== undefined) children.push(own)
  }
  children.push(...plan.kept.map(keepAsIs))

  const status = viewStatus(view, context.workload, context.now, { ...plan.status, rows })
  const response: CompositeResponse = { children: asChildren(children), status }
  if (plan.finalized !== undefined) response.finalized = plan.finalized
  const resync = resyncAfter(plan.deadlines, context.now)
  if (resync !== undefined) response.resyncAfterSeconds = resync
  return response
}
