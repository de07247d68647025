/**
 * What keeps a pool from creating cells (docs/cellpool.md, "Cells and their children"; docs/metacontroller.md
 * rule 5): an invalid spec, a missing join Secret or key, a join template that does not render, a
 * CellNodeSet that would outgrow its bound. While one holds, the answer keeps every observed child
 * of a name the pool gives exactly as it is, so nothing a user has is deleted because of it.
 */
import { isRecord } from '../../k8s/objects.ts'
import { heldAutoscale } from './autoscale-input.ts'
import { bootstrapValues, renderBootstrap } from '../build/bootstrap.ts'
import { MAX_NODE_SET_BYTES, WIDEST_CELL_INDEX } from '../model/limits.ts'
import { MAX_BUILDING } from './creation.ts'
import { poolProblems } from '../rules/validate.ts'
import type { CellProvisioner } from '../model/provisioner.ts'
import type { Cell } from '../model/cell.ts'
import { nodeSetProblems } from '../build/sizes.ts'
import type { PoolView } from '../model/pool.ts'
import type { ResolvedPool } from '../model/resolved-pool.ts'
import type { AnswerPlan, CellOutcome, DecidedRow } from '../model/answer.ts'
import type { Blocking } from '../model/problems.ts'
import { withoutStop } from '../rules/wording.ts'

/** The join template (decoded) or why it cannot be had. */
export function joinTemplate(view: PoolView, pool: ResolvedPool): { template: string } | Blocking {
  const ref = `Secret ${view.namespace}/${pool.joinSecretName}`
  const field = 'spec.bootstrap.joinSecretRef.name'
  const secret = view.joinSecret
  if (secret === undefined) {
    return {
      reason: 'JoinSecretMissing',
      message: `${field} ${pool.joinSecretName}: ${ref} does not exist; no cell is created until it does.`
    }
  }
  const data = secret.data
  const value = isRecord(data) && Object.hasOwn(data, pool.joinSecretKey) ? data[pool.joinSecretKey] : undefined
  if (typeof value !== 'string' || value === '') {
    const keys = isRecord(data) ? Object.keys(data).sort() : []
    const has = keys.length > 0 ? `it has ${keys.join(', ')}` : 'it has no keys'
    return {
      reason: 'JoinSecretMissing',
      message: `${ref} has no key ${pool.joinSecretKey} (spec.bootstrap.joinSecretKey; ${has}); no cell is created until it does.`
    }
  }
  return { template: Buffer.from(value, 'base64').toString('utf8') }
}

/** The first reason, if any, that keeps every child as it is. */
export function blockingProblem(
  view: PoolView,
  pool: ResolvedPool,
  provisioner: CellProvisioner,
  permittedNodeKeys: readonly string[] = []
): { blocking: Blocking | undefined; template: string } {
  const problems = poolProblems(view.name, view.spec, permittedNodeKeys)
  if (problems.length > 0) {
    return { blocking: { reason: 'SpecInvalid', message: `${problems.map((p) => withoutStop(p.message)).join('; ')}.` }, template: '' }
  }
  const changed = provisionerChanged(view, provisioner)
  if (changed !== undefined) return { blocking: changed, template: '' }
  // The objects labelled as the pool's cells may outnumber its spec (a scale-down, or a tenant's own).
  const oversized = nodeSetProblems(
    view.name,
    pool,
    view.cells.size + MAX_BUILDING,
    MAX_NODE_SET_BYTES,
    'spec.replicas',
    `${view.cells.size} cells have children, and ${MAX_BUILDING} more may be created`
  )
  if (oversized.length > 0) {
    return {
      blocking: { reason: 'CellNodeSetTooLarge', message: `${oversized.map((p) => withoutStop(p.message)).join('; ')}.` },
      template: ''
    }
  }
  // A pool whose cells have no bootstrap Secret (Cluster API with a bootstrap config template)
  // renders no join template.
  if (!provisioner.needsSecret(pool)) return { blocking: undefined, template: '' }
  const join = joinTemplate(view, pool)
  // eslint-disable-next-line no-restricted-syntax -- narrows a result union of this module, not request data
  if ('reason' in join) return { blocking: join, template: '' }
  // The widest cell name and index: a template within the bounds for it is within them for every cell.
  const rendered = renderBootstrap(join.template, bootstrapValues(view.name, view.uid, pool, WIDEST_CELL_INDEX))
  // eslint-disable-next-line no-restricted-syntax -- narrows a result union of this module, not request data
  if ('problem' in rendered) {
    return {
      blocking: {
        reason: 'BootstrapTemplateInvalid',
        message: `Secret ${view.namespace}/${pool.joinSecretName} key ${pool.joinSecretKey}: ${withoutStop(rendered.problem)}; no cell is created from it.`
      },
      template: ''
    }
  }
  return { blocking: undefined, template: join.template }
}

/** Cells of the other provisioner are observed (request/request.ts `otherProvisioner`): none is deleted for it. */
function provisionerChanged(view: PoolView, provisioner: CellProvisioner): Blocking | undefined {
  const others = view.otherProvisioner
  if (others.length === 0) return undefined
  const named = others.slice(0, 4).map((o) => `${o.kind} ${o.metadata.name ?? ''}`)
  if (others.length > named.length) named.push(`${others.length - named.length} more`)
  return {
    reason: 'ProvisionerChanged',
    message:
      `spec.cell.provisioner ${provisioner.name}: the pool has cells another provisioner made (${named.join(', ')}); ` +
      'they are kept as they are, and no cell is created until spec.cell.provisioner names the provisioner that made them again.'
  }
}

/**
 * The answer while the pool is blocked: every observed child exactly as it is, status rows from
 * observation with removal and failure rows carried over as they were.
 */
export function blockedPlan(view: PoolView, pool: ResolvedPool, cells: readonly Cell[], blocking: Blocking): AnswerPlan {
  const outcomes = cells.map((c): CellOutcome => {
    const prev = c.previous
    const carried = prev !== undefined && (prev.phase === 'Draining' || prev.phase === 'Deleting' || prev.phase === 'Failed')
    const row: DecidedRow = {
      index: c.index,
      name: c.name,
      phase: carried ? prev.phase : c.seen.phase,
      reason: carried ? prev.reason : c.seen.reason,
      message: carried ? prev.message : c.seen.message,
      lastTransitionTime: carried ? (prev.lastTransitionTime ?? c.seen.lastTransitionTime) : c.seen.lastTransitionTime,
      readyOnce: c.seen.readyOnce,
      failureCount: (prev?.failureCount ?? 0) + (!carried && c.seen.failedNow ? 1 : 0),
      building: false,
      templateHash: c.templateHash
    }
    if (c.seen.failure !== undefined) row.failure = c.seen.failure
    return { index: c.index, cell: c, answer: 'hold', createGuest: false, row }
  })
  const desired = pool.autoscaling.enabled ? (view.previous.desiredReplicas ?? pool.replicas) : pool.replicas
  return {
    cells: outcomes,
    nodeSet: 'keep',
    poolChild: 'keep',
    kept: [...view.otherProvisioner, ...view.strays],
    status: {
      desired,
      progressing: {
        type: 'Progressing',
        status: 'False',
        reason: blocking.reason,
        message: `${withoutStop(blocking.message)}; existing cells are kept as they are.`
      },
      updated: {
        type: 'Updated',
        status: 'Unknown',
        reason: blocking.reason,
        message: 'Whether cells are up to date is known once the pool is not blocked.'
      },
      autoscale: heldAutoscale(view, pool, desired, blocking)
    },
    deadlines: []
  }
}
