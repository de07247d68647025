/**
 * Sync hook of the GPUCellPool CompositeController (cellpool.md): per cell a bootstrap Secret, a
 * SwiftSeedProfile and a SwiftGuest; per pool a CellNodeSet, the pool's request to the workload
 * cluster.
 *
 * The answer always carries `children` and a full status (metacontroller.md rule 1). An invalid
 * spec, a missing join Secret or a broken join template stops new cells and keeps every observed
 * child of a name the pool gives exactly as it is (rule 5): nothing a user has is deleted because
 * of it (request.ts says what happens to an adopted object of another name).
 *
 * An existing cell keeps what it was built with: its SwiftGuest, seed profile and Secret are
 * answered as observed, in the shape of their last-applied records (keep.ts), so the merge changes
 * nothing on them. A new template reaches a cell only by replacing it (Manual or RollingUpdate,
 * scaling.ts).
 */
import type { CellNode, CellNodeStatus } from '../api/cellnodeset.ts'
import { isRecord, type KubeObject } from '../k8s/objects.ts'
import { keepAsIs } from '../metacontroller/keep.ts'
import type { CompositeResponse } from '../metacontroller/schemas.ts'
import { autoscale, autoscaleDeadline, type AutoscaleCell, type AutoscaleConfig, type AutoscaleResult } from './autoscale.ts'
import { bootstrapValues, renderBootstrap } from './bootstrap.ts'
import { MAX_BUILT_PER_ANSWER, MAX_NODE_SET_BYTES, WIDEST_CELL_INDEX, nodeSetProblems } from './limits.ts'
import {
  buildBootstrapSecret,
  buildCellNode,
  buildCellNodeSet,
  buildGuest,
  buildSeedProfile,
  CELL_INDEX,
  cellName,
  templateHash,
  type CellIdentity
} from './children.ts'
import { cellPhase, rowOfGuest, workloadState, type PhaseConfig, type PreviousCell, type WorkloadState } from './phases.ts'
import { readPool, type CellPoolSyncRequest, type ObservedCell, type PoolView, type PreviousRow } from './request.ts'
import { MAX_CREATING, isIdle, planScaling, type CellInput, type CellPlan } from './scaling.ts'
import { resyncAfter, viewStatus, withoutStop, type CellRow } from './status.ts'
import { poolProblems, resolvePool, type ResolvedPool } from './validate.ts'

/** Why the pool creates no cell and keeps every child as it is. */
export interface Blocking {
  reason: 'SpecInvalid' | 'JoinSecretMissing' | 'BootstrapTemplateInvalid' | 'CellNodeSetTooLarge'
  message: string
}

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
export function blockingProblem(view: PoolView, pool: ResolvedPool): { blocking: Blocking | undefined; template: string } {
  const problems = poolProblems(view.name, view.spec)
  if (problems.length > 0) {
    return { blocking: { reason: 'SpecInvalid', message: `${problems.map((p) => withoutStop(p.message)).join('; ')}.` }, template: '' }
  }
  // The objects labelled as the pool's cells may outnumber its spec (a scale-down, or a tenant's own).
  const oversized = nodeSetProblems(
    view.name,
    pool,
    view.cells.size + MAX_CREATING,
    MAX_NODE_SET_BYTES,
    'spec.replicas',
    `${view.cells.size} cells have children, and ${MAX_CREATING} more may be created`
  )
  if (oversized.length > 0) {
    return {
      blocking: { reason: 'CellNodeSetTooLarge', message: `${oversized.map((p) => withoutStop(p.message)).join('; ')}.` },
      template: ''
    }
  }
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

/** The budgets and expectations phases need. */
export function phaseConfig(pool: ResolvedPool): PhaseConfig {
  return {
    bootstrapReadyTimeoutSeconds: pool.bootstrapReadyTimeoutSeconds,
    capacityReadyTimeoutSeconds: pool.capacity.readyTimeoutSeconds,
    expectedDevices: pool.capacity.expectedDevicesPerCell,
    nodeIPFrom: pool.nodeIPFrom === '' ? undefined : pool.nodeIPFrom
  }
}

/** The workload cluster's state from the observed CellNodeSet (observed/unobserved rule). */
export function workloadOf(view: PoolView, now: Date): WorkloadState {
  const cns = view.cellNodeSet
  return workloadState({
    hasStatus: cns?.hasStatus ?? false,
    reachable: cns?.reachable,
    observedTime: cns?.observedTime,
    observedGeneration: cns?.observedGeneration,
    generation: cns?.generation,
    now
  })
}

/** A cell as the hooks see it: observed children, previous row, phase. */
export interface CellContext {
  index: number
  name: string
  observed: ObservedCell | undefined
  previous: PreviousRow | undefined
  /** The previous row describes the observed guest's build. */
  sameBuild: boolean
  row: CellNodeStatus | undefined
  input: CellInput
}

const FRESH: Omit<PreviousCell, 'failureCount'> = {
  phase: 'Pending',
  reason: '',
  message: '',
  lastTransitionTime: undefined,
  readyOnce: false,
  guestUID: undefined,
  templateHash: undefined
}

/** Index of a previous row: its `index`, else the number its name ends in after `<pool>-`. */
function rowIndex(pool: string, row: PreviousRow): number | undefined {
  if (row.index !== undefined) return cellName(pool, row.index) === row.name ? row.index : undefined
  const prefix = `${pool}-`
  if (!row.name.startsWith(prefix)) return undefined
  const rest = row.name.slice(prefix.length)
  return CELL_INDEX.test(rest) ? Number(rest) : undefined
}

/**
 * Every cell the pool has: each index with an observed child, and each Failed row without one (an
 * index waiting for its rebuild). Other rows without children are gone.
 */
export function cellContexts(view: PoolView, workload: WorkloadState, config: PhaseConfig, currentHash: string, now: Date): CellContext[] {
  const indices = new Set<number>(view.cells.keys())
  const previousByIndex = new Map<number, PreviousRow>()
  for (const row of view.previous.cells.values()) {
    const index = rowIndex(view.name, row)
    if (index === undefined || previousByIndex.has(index)) continue
    previousByIndex.set(index, row)
    if (row.phase === 'Failed') indices.add(index)
  }
  return [...indices]
    .sort((a, b) => a - b)
    .map((index) => {
      const name = cellName(view.name, index)
      const observed = view.cells.get(index)
      const previous = previousByIndex.get(index)
      const guest = observed?.guestView
      const sameBuild =
        previous !== undefined && (previous.guestUID === undefined || guest === undefined || previous.guestUID === guest.uid)
      const forPhase: PreviousCell | undefined =
        previous === undefined ? undefined : sameBuild ? previous : { ...FRESH, failureCount: previous.failureCount }
      const row = view.cellNodeSet?.rows.get(name)
      const seen = cellPhase({ guest, row, workload, config, previous: forPhase, now })
      const hasChild = observed?.secret !== undefined || observed?.seed !== undefined || observed?.guest !== undefined
      const input: CellInput = {
        index,
        name,
        seen,
        previous: forPhase,
        children: { secret: observed?.secret !== undefined, seed: observed?.seed !== undefined, guest: observed?.guest !== undefined },
        guestDeleting: guest?.deleting ?? false,
        templateHash: guest !== undefined ? guest.templateHash : hasChild ? currentHash : (previous?.templateHash ?? currentHash),
        row,
        ownRow: rowOfGuest(row, guest)
      }
      return { index, name, observed, previous, sameBuild, row, input }
    })
}

/** A status row for a cell from its plan and what was observed of it. */
export function statusRow(plan: CellPlan, ctx: CellContext | undefined): CellRow {
  const guest = ctx?.observed?.guestView
  const row: CellRow = {
    name: plan.name,
    index: plan.index,
    phase: plan.phase,
    reason: plan.reason,
    message: plan.message,
    lastTransitionTime: plan.lastTransitionTime,
    readyOnce: plan.readyOnce,
    failureCount: plan.failureCount,
    owned:
      ctx?.observed !== undefined &&
      (ctx.observed.secret !== undefined || ctx.observed.seed !== undefined || ctx.observed.guest !== undefined)
  }
  if (plan.templateHash !== undefined) row.templateHash = plan.templateHash
  if (plan.building) return row
  const guestUID = guest?.uid !== undefined && guest.uid !== '' ? guest.uid : ctx?.previous?.guestUID
  if (guestUID !== undefined) row.guestUID = guestUID
  if (guest !== undefined) {
    if (guest.hostNode !== undefined) row.hostNode = guest.hostNode
    if (guest.devices.length > 0) row.devices = [...guest.devices]
  }
  if (ctx?.input.seen.nodeIP !== undefined) row.nodeIP = ctx.input.seen.nodeIP
  if (ctx?.input.ownRow !== undefined) row.nodeName = ctx.input.ownRow.name
  return row
}

/** Every observed child of a cell, answered unchanged. */
function keptChildren(observed: ObservedCell | undefined): KubeObject[] {
  if (observed === undefined) return []
  return [observed.secret, observed.seed, observed.guest].filter((o): o is KubeObject => o !== undefined).map(keepAsIs)
}

/** The autoscaler's view of the cells: removal phases carried from the previous status. */
function autoscaleCells(contexts: readonly CellContext[], workload: WorkloadState): AutoscaleCell[] {
  return contexts.map((c) => {
    const prev = c.input.previous
    const hasChild = c.input.children.secret || c.input.children.seed || c.input.children.guest
    const phase = hasChild && (prev?.phase === 'Draining' || prev?.phase === 'Deleting') ? prev.phase : c.input.seen.phase
    return {
      name: c.name,
      index: c.index,
      phase,
      idle: workload.observed && phase === 'Ready' && isIdle(c.input),
      devices: c.input.ownRow?.devices ?? []
    }
  })
}

/** `spec.autoscaling` as the autoscaler takes it. */
export function autoscaleConfig(pool: ResolvedPool): AutoscaleConfig {
  return {
    replicas: pool.replicas,
    minReplicas: pool.autoscaling.minReplicas,
    maxReplicas: pool.autoscaling.maxReplicas,
    stabilizationWindowSeconds: pool.autoscaling.stabilizationWindowSeconds,
    scaleDown: pool.autoscaling.scaleDown,
    scaleDownStabilizationWindowSeconds: pool.autoscaling.scaleDownStabilizationWindowSeconds
  }
}

/** The autoscaler's decision, when autoscaling is enabled. */
function autoscaleFor(
  view: PoolView,
  pool: ResolvedPool,
  contexts: readonly CellContext[],
  workload: WorkloadState,
  now: Date
): AutoscaleResult | undefined {
  if (!pool.autoscaling.enabled) return undefined
  const p = view.previous
  return autoscale(
    {
      config: autoscaleConfig(pool),
      cells: autoscaleCells(contexts, workload),
      demand: view.cellNodeSet?.demand,
      observed: workload.observed,
      observedTime: view.cellNodeSet?.observedTime,
      memory: {
        ...(p.desiredReplicas !== undefined ? { desiredReplicas: p.desiredReplicas } : {}),
        ...(p.cellDeviceShape !== undefined ? { cellDeviceShape: p.cellDeviceShape } : {}),
        ...(p.lastScaleUpTime !== undefined ? { lastScaleUpTime: p.lastScaleUpTime } : {}),
        ...(p.lastScaleDownTime !== undefined ? { lastScaleDownTime: p.lastScaleDownTime } : {}),
        ...(p.demandFreeSince !== undefined ? { demandFreeSince: p.demandFreeSince } : {}),
        ...(p.demand !== undefined ? { demand: p.demand } : {})
      }
    },
    now
  )
}

/** The autoscaler's fields carried over unchanged while the pool is blocked. */
function heldAutoscale(view: PoolView, pool: ResolvedPool, desired: number, blocking: Blocking): AutoscaleResult | undefined {
  if (!isRecord(view.spec.autoscaling) || view.spec.autoscaling.enabled !== true) return undefined
  const p = view.previous
  const result: AutoscaleResult = {
    desiredReplicas: desired,
    reason: 'Unknown',
    message: `The autoscaler waits: ${withoutStop(blocking.message)}.`,
    base: desired,
    floor: pool.autoscaling.minReplicas,
    ceiling: pool.autoscaling.maxReplicas
  }
  if (p.demand !== undefined) result.demand = p.demand
  if (p.cellDeviceShape !== undefined) result.cellDeviceShape = p.cellDeviceShape
  if (p.lastScaleUpTime !== undefined) result.lastScaleUpTime = p.lastScaleUpTime
  if (p.lastScaleDownTime !== undefined) result.lastScaleDownTime = p.lastScaleDownTime
  if (p.demandFreeSince !== undefined) result.demandFreeSince = p.demandFreeSince
  return result
}

/**
 * The answer while the pool is blocked: every observed child exactly as it is, status rows from
 * observation with removal and failure rows carried over as they were.
 */
function blockedAnswer(
  view: PoolView,
  pool: ResolvedPool,
  contexts: readonly CellContext[],
  workload: WorkloadState,
  blocking: Blocking,
  now: Date
): CompositeResponse {
  const children: KubeObject[] = []
  for (const c of contexts) children.push(...keptChildren(c.observed))
  if (view.cellNodeSet !== undefined) children.push(keepAsIs(view.cellNodeSet.object))
  children.push(...view.strays.map(keepAsIs))
  const rows: CellRow[] = contexts.map((c) => {
    const prev = c.previous
    const carried = prev !== undefined && c.sameBuild && (prev.phase === 'Draining' || prev.phase === 'Deleting' || prev.phase === 'Failed')
    const plan: CellPlan = {
      index: c.index,
      name: c.name,
      phase: carried ? prev.phase : c.input.seen.phase,
      reason: carried ? prev.reason : c.input.seen.reason,
      message: carried ? prev.message : c.input.seen.message,
      lastTransitionTime: carried ? (prev.lastTransitionTime ?? c.input.seen.lastTransitionTime) : c.input.seen.lastTransitionTime,
      readyOnce: c.input.seen.readyOnce,
      failureCount: (prev?.failureCount ?? 0) + (!carried && c.input.seen.failedNow ? 1 : 0),
      answer: 'hold',
      createGuest: false,
      cordon: false,
      building: false,
      keepRow: true,
      templateHash: c.input.templateHash
    }
    return statusRow(plan, c)
  })
  const desired = pool.autoscaling.enabled ? (view.previous.desiredReplicas ?? pool.replicas) : pool.replicas
  const status = viewStatus(view, workload, now, {
    rows,
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
  })
  return { children: children as CompositeResponse['children'], status }
}

/** The sync hook. */
export function sync(request: CellPoolSyncRequest, now: Date): CompositeResponse {
  const view = readPool(request)
  const pool = resolvePool(view.spec)
  const workload = workloadOf(view, now)
  const config = phaseConfig(pool)
  const currentHash = templateHash(pool)
  const contexts = cellContexts(view, workload, config, currentHash, now)
  const { blocking, template } = blockingProblem(view, pool)
  if (blocking !== undefined) return blockedAnswer(view, pool, contexts, workload, blocking, now)

  const scaled = autoscaleFor(view, pool, contexts, workload, now)
  const desired = scaled?.desiredReplicas ?? pool.replicas
  const specChanged =
    view.generation !== undefined && view.previous.observedGeneration !== undefined && view.generation !== view.previous.observedGeneration
  const plan = planScaling({
    pool: view.name,
    cells: contexts.map((c) => c.input),
    desired,
    workload,
    templateHash: currentHash,
    updatePolicy: pool.updatePolicy,
    ...(scaled?.cellToDrain !== undefined ? { cellToDrain: scaled.cellToDrain } : {}),
    specChanged,
    now
  })

  const byIndex = new Map(contexts.map((c) => [c.index, c]))
  const budget: BuildBudget = { secrets: MAX_BUILT_PER_ANSWER, guests: MAX_BUILT_PER_ANSWER }
  const children: KubeObject[] = []
  const nodes: CellNode[] = []
  const rows: CellRow[] = []
  for (const cell of plan.cells) {
    const ctx = byIndex.get(cell.index)
    const observed = ctx?.observed
    const id: CellIdentity = { poolName: view.name, namespace: view.namespace, poolUID: view.uid, index: cell.index }
    const answered = answerCell(cell, observed, id, pool, template, budget)
    children.push(...answered)
    const hasChild =
      observed !== undefined && (observed.secret !== undefined || observed.seed !== undefined || observed.guest !== undefined)
    if (hasChild || answered.length > 0) nodes.push(buildCellNode(pool, id, observed?.guestView?.uid ?? '', cell.cordon))
    if (cell.keepRow) rows.push(statusRow(cell, ctx))
  }
  // While the workload cluster is unobserved the CellNodeSet still gets its spec: changing a spec
  // deletes nothing, and the agent carries it out once it is back.
  children.push(buildCellNodeSet(view.name, view.namespace, view.uid, pool, nodes, pool.autoscaling.enabled))
  children.push(...view.strays.map(keepAsIs))

  const status = viewStatus(view, workload, now, { rows, desired, progressing: plan.progressing, updated: plan.updated, autoscale: scaled })
  const resync = resyncAfter(
    [...plan.cells.map((c) => c.deadline), scaled !== undefined ? autoscaleDeadline(scaled, autoscaleConfig(pool), now) : undefined],
    now
  )
  const response: CompositeResponse = { children: children as CompositeResponse['children'], status }
  if (resync !== undefined) response.resyncAfterSeconds = resync
  return response
}

/**
 * How many bootstrap Secrets and SwiftGuests one answer may still build (limits.ts); the rest
 * are built by the next syncs, which the new children trigger.
 */
export interface BuildBudget {
  secrets: number
  guests: number
}

/** The children answered for one cell, in a fixed order: Secret, seed profile, guest. */
export function answerCell(
  cell: CellPlan,
  observed: ObservedCell | undefined,
  id: CellIdentity,
  pool: ResolvedPool,
  template: string,
  budget: BuildBudget = { secrets: MAX_BUILT_PER_ANSWER, guests: MAX_BUILT_PER_ANSWER }
): KubeObject[] {
  switch (cell.answer) {
    case 'none':
      return []
    case 'hold':
      return keptChildren(observed)
    case 'remove':
      // Guest first; the seed profile and Secret only once the guest is no longer observed.
      if (observed?.guest === undefined) return []
      return [observed.secret, observed.seed].filter((o): o is KubeObject => o !== undefined).map(keepAsIs)
    case 'serve': {
      const out: KubeObject[] = []
      if (observed?.secret !== undefined) out.push(keepAsIs(observed.secret))
      else if (budget.secrets > 0) {
        budget.secrets -= 1
        const rendered = renderBootstrap(template, bootstrapValues(id.poolName, id.poolUID, pool, id.index))
        // eslint-disable-next-line no-restricted-syntax -- narrows a result union of this module, not request data
        if ('text' in rendered) out.push(buildBootstrapSecret(id, rendered.text))
      }
      out.push(observed?.seed !== undefined ? keepAsIs(observed.seed) : buildSeedProfile(id, pool.hostname))
      if (observed?.guest !== undefined) out.push(keepAsIs(observed.guest))
      else if (cell.createGuest && budget.guests > 0) {
        budget.guests -= 1
        out.push(buildGuest(pool, id))
      }
      return out
    }
  }
}
