/**
 * The workload agent's decisions: `(cellNodeSet, snapshot, now) → {status, actions}`
 * (docs/workload.md, steps 1 to 5; docs/style.md rule 13).
 *
 * Pure: the snapshot layer reads the workload cluster and the agent's own memory of heartbeats,
 * this module decides, and the action layer carries the actions out. Nothing here reads a clock
 * or does I/O. The one safety rule the agent keeps on its own, whatever its spec says: a live
 * Node is never deleted, and a Node without this pool's uid label is never written.
 */
import {
  cellIndexOf,
  INSTANCE_LABEL,
  POOL_UID_LABEL,
  WORKLOAD_NODES_FINALIZER,
  type CellNode,
  type CellNodeSetStatus,
  type CellNodeStatus,
  type SweptNode
} from '../../../api/cellnodeset.ts'
import { stampConditions, type Condition } from '../../../k8s/conditions.ts'
import { canonicalJson } from '../../../k8s/hash.ts'
import { apiTime } from '../../../k8s/time.ts'
import { observedCellSize } from '../demand/cell-size.ts'
import { demandStatus } from '../demand/demand.ts'
import { claimDemand, claimIndex } from '../demand/dra.ts'
import type { PhysicalGpuCounts } from '../physical-gpus.ts'
import { decideListed } from './listed.ts'
import { DEFAULT_WINDOWS } from './liveness.ts'
import type { Action, CellNodeSetInput, Decision, LivenessWindows, WorkloadSnapshot } from '../../model/observed.ts'
import { viewNode, type NodeView } from './node-view.ts'

/** The most Nodes `status.swept` keeps. */
export const MAX_SWEPT = 20
/** `observedTime` alone is refreshed at most this often (ms). */
export const OBSERVED_TIME_REFRESH_MS = 30_000
/** A CellNodeSet being deleted keeps its finalizer at most this long after Reachable turned False (ms). */
export const UNREACHABLE_RELEASE_MS = 10 * 60_000
/** ... and at most this long after its deletionTimestamp (ms). */
export const DELETION_RELEASE_MS = 15 * 60_000

/** Knobs of the core; tests shorten nothing here, they pass clocks. */
export interface CoreOptions {
  windows?: LivenessWindows
  /** Deletions already carried out this pass (recorded in swept). */
  sweptThisPass?: SweptNode[]
  /** Node label and taint keys the admin permits past the restricted-key rule (hooks/k8s/node-keys.ts). */
  permittedNodeKeys?: readonly string[]
  /** The infrastructure cluster's physical GPUs for `spec.physicalGPUs` (physical-gpus.ts); absent: not known yet. */
  physicalGPUs?: PhysicalGpuCounts
}

/** Decides one pass for one CellNodeSet. */
export function decide(cns: CellNodeSetInput, snapshot: WorkloadSnapshot, now: Date, options: CoreOptions = {}): Decision {
  const windows = options.windows ?? DEFAULT_WINDOWS
  const nowMs = now.getTime()
  const previous: CellNodeSetStatus = cns.status ?? {}
  const generation = cns.metadata.generation
  const deleting = cns.metadata.deletionTimestamp !== undefined
  const hasFinalizer = (cns.metadata.finalizers ?? []).includes(WORKLOAD_NODES_FINALIZER)
  const actions: Action[] = []

  if (snapshot.reachability.reason !== 'Reachable') {
    // Frozen: the last observation stays as it was; nothing is written in the workload cluster.
    const conditions = stampConditions(
      [{ type: 'Reachable', status: 'False', reason: snapshot.reachability.reason, message: snapshot.reachability.message }],
      previous.conditions,
      now,
      undefined
    )
    const status: CellNodeSetStatus = { ...previous, conditions }
    if (deleting && hasFinalizer) {
      const left = (previous.nodes ?? []).filter((row) => row.present).map((row) => row.name)
      const release = releaseReason(cns, conditions, nowMs, true)
      if (release !== undefined) actions.push({ type: 'removeFinalizer', nodesLeft: left, why: release })
    }
    return { status, writeStatus: canonicalJson(status) !== canonicalJson(previous), actions }
  }

  const poolUID = cns.spec.poolUID
  const pool = cns.metadata.name
  const views = snapshot.nodes.flatMap((o) => viewNode(o, nowMs, windows) ?? [])
  const byName = new Map(views.map((v) => [v.name, v]))
  const entries: CellNode[] = deleting ? [] : (cns.spec.nodes ?? [])
  const listed = new Set(entries.map((e) => e.name))
  const planned: SweptNode[] = []
  const stamp = apiTime(now)
  const sweep = (view: NodeView, reason: SweptNode['reason']): void => {
    const instance = view.labels[INSTANCE_LABEL] ?? ''
    actions.push({ type: 'deleteNode', name: view.name, uid: view.uid, resourceVersion: view.resourceVersion, reason, instance })
    planned.push({ name: view.name, instance, reason, time: stamp })
  }

  const rows: CellNodeStatus[] = []
  let pending = false
  const storedRows = new Map((previous.nodes ?? []).map((row) => [row.name, row]))
  for (const entry of cns.spec.nodes ?? []) {
    const view = byName.get(entry.name)
    if (view === undefined) {
      rows.push({ name: entry.name, present: false })
      continue
    }
    const decision = decideListed({
      entry,
      view,
      stored: storedRows.get(entry.name),
      hasStatus: cns.status !== undefined,
      pool,
      poolUID,
      deleting,
      unbound: snapshot.unbound,
      ...(cns.spec.dra !== undefined ? { claims: snapshot.dra?.claims ?? { read: false, items: [] } } : {}),
      permittedNodeKeys: options.permittedNodeKeys ?? []
    })
    rows.push(decision.row)
    if (decision.patch !== undefined) actions.push({ type: 'patchNode', name: view.name, patch: decision.patch })
    if (decision.stale) sweep(view, 'Stale')
    pending ||= decision.pending
  }

  // The pool's Nodes are those named as its cells (docs/security.md, "Which Node is a cell's"): a
  // Node of another name carrying the pool's uid label set it on itself, and is left alone.
  const specNames = new Set((cns.spec.nodes ?? []).map((e) => e.name))
  const ofPool = (view: NodeView): boolean =>
    view.labels[POOL_UID_LABEL] === poolUID && (specNames.has(view.name) || cellIndexOf(pool, view.name) !== undefined)
  const foreignNodes = views.filter((v) => v.labels[POOL_UID_LABEL] === poolUID && !ofPool(v)).length
  // Orphans: the pool's Nodes no entry names (every one, while the CellNodeSet is being deleted).
  for (const view of views) {
    if (!ofPool(view) || listed.has(view.name)) continue
    if (!view.live) sweep(view, 'Orphan')
  }
  const deleted = new Set(planned.map((s) => s.name))
  const nodeCount = views.filter((v) => ofPool(v) && !deleted.has(v.name)).length

  if (!deleting && !hasFinalizer) actions.push({ type: 'addFinalizer' })
  const conditions = stampConditions(
    [{ type: 'Reachable', status: 'True', reason: 'Reachable', message: 'The workload cluster answered every read of this pass.' }],
    previous.conditions,
    now,
    undefined
  )
  if (deleting && hasFinalizer) {
    const left = views.filter((v) => ofPool(v) && !deleted.has(v.name)).map((v) => v.name)
    if (left.length === 0 && planned.length === 0) {
      actions.push({ type: 'removeFinalizer', nodesLeft: [], why: 'no Node of the pool is left' })
    } else {
      const release = releaseReason(cns, conditions, nowMs, false)
      if (release !== undefined) actions.push({ type: 'removeFinalizer', nodesLeft: left, why: release })
    }
  }

  // A claim not yet carried out is an action of the spec not yet done, like a Node write.
  const nodeWrites = pending || actions.some((a) => a.type === 'patchNode' || a.type === 'deleteNode')
  const status: CellNodeSetStatus = {}
  const observedGeneration = nodeWrites ? previous.observedGeneration : generation
  if (observedGeneration !== undefined) status.observedGeneration = observedGeneration
  status.conditions = conditions
  status.nodeCount = nodeCount
  if (foreignNodes > 0) status.foreignNodes = foreignNodes
  status.nodes = rows
  if (cns.spec.demand !== undefined) {
    const observed = observedCellSize(
      snapshot.nodes.map((o) => o.node),
      poolUID,
      listed
    )
    const dra = cns.spec.dra
    const claims = snapshot.dra?.claims
    const index = dra !== undefined && claims?.read === true ? claimIndex(claims.items) : undefined
    const shape =
      dra === undefined ? undefined : (pod: unknown) => (index === undefined ? undefined : claimDemand(pod, index, dra.deviceClassName))
    status.demand = demandStatus(snapshot.unbound, cns.spec.demand, observed ?? previous.demand?.cell, shape)
    // Claims unread: a Pod asking through one cannot be told from one that does not; demand is unread.
    if (dra !== undefined && claims?.read !== true) status.demand = { ...status.demand, read: false }
    if (snapshot.unbound.truncated === true) status.demand.truncated = true
  }
  if (cns.spec.dra !== undefined) status.dra = draStatus(cns.spec.dra.deviceClassName, snapshot)
  const swept = [...(previous.swept ?? []), ...(options.sweptThisPass ?? []), ...planned].slice(-MAX_SWEPT)
  if (swept.length > 0) status.swept = swept

  const gpus = cns.spec.physicalGPUs !== undefined ? options.physicalGPUs : undefined

  // The summary's time is the status's: it changes the status only when its counts do.
  const { observedTime: previousTime, physicalGPUs: previousGpus, ...previousRest } = previous
  const countsOf = (g: typeof previousGpus) => (g === undefined ? undefined : { ...g, observedTime: undefined })
  const changed =
    canonicalJson(status) !== canonicalJson(previousRest) ||
    canonicalJson(countsOf(previousGpus)) !== canonicalJson(gpus === undefined ? undefined : { ...gpus, observedTime: undefined })
  const lastTime = previousTime === undefined ? NaN : Date.parse(previousTime)
  const due = !(nowMs - lastTime < OBSERVED_TIME_REFRESH_MS)
  status.observedTime = changed || due ? stamp : previousTime
  if (gpus !== undefined && status.observedTime !== undefined) status.physicalGPUs = { observedTime: status.observedTime, ...gpus }
  return { status: orderStatus(status), writeStatus: changed || due, actions }
}

/** Why a deleting CellNodeSet may let go of its finalizer now, or undefined. */
function releaseReason(cns: CellNodeSetInput, conditions: Condition[], now: number, unreachable: boolean): string | undefined {
  const deletedAt = Date.parse(cns.metadata.deletionTimestamp ?? '')
  if (now - deletedAt >= DELETION_RELEASE_MS) return '15 minutes have passed since the CellNodeSet was deleted'
  const reachable = conditions.find((c) => c.type === 'Reachable')
  if (unreachable && reachable !== undefined && now - Date.parse(reachable.lastTransitionTime) >= UNREACHABLE_RELEASE_MS) {
    return 'the workload cluster has been unreachable for 10 minutes'
  }
  return undefined
}

/** Fixed key order, so a status written twice is byte-identical. */
function orderStatus(status: CellNodeSetStatus): CellNodeSetStatus {
  const order: (keyof CellNodeSetStatus)[] = [
    'observedGeneration',
    'observedTime',
    'conditions',
    'nodeCount',
    'foreignNodes',
    'nodes',
    'demand',
    'swept',
    'dra',
    'physicalGPUs'
  ]
  const out: Record<string, unknown> = {}
  for (const key of order) if (status[key] !== undefined) out[key] = status[key]
  return out
}

/** `status.dra`: whether the class exists and the claims were read. */
function draStatus(deviceClassName: string, snapshot: WorkloadSnapshot): NonNullable<CellNodeSetStatus['dra']> {
  const dra = snapshot.dra
  const out: NonNullable<CellNodeSetStatus['dra']> = {
    deviceClass: dra?.deviceClass ?? 'Unread',
    claimsRead: dra?.claims.read === true
  }
  if (dra?.claims.truncated === true) out.claimsTruncated = true
  const notes: string[] = []
  if (out.deviceClass === 'Missing')
    notes.push(`DeviceClass ${deviceClassName} does not exist in the workload cluster: no claim on it can be allocated`)
  if (out.deviceClass === 'Unread') notes.push(`DeviceClass ${deviceClassName} could not be read`)
  if (!out.claimsRead) notes.push('the ResourceClaims could not be listed: allocations and demand are unread')
  else if (out.claimsTruncated === true) notes.push('the ResourceClaim list stopped at the agent bound: allocations are unread')
  if (notes.length > 0) out.message = notes.join('; ')
  return out
}
