/**
 * One listed Node: whether the Node under a cell's name is the cell's, and what the agent writes
 * onto it (docs/workload.md, step 1; the core calls this once per `spec.nodes[]` entry whose Node
 * exists).
 *
 * The Node's identity is its name: under NodeRestriction only a kubelet whose credential names
 * that Node may register or write it (docs/security.md, "Which Node is a cell's"). Which object
 * under that name the cell's guest registered is the agent's own record (record.ts): a Node
 * registered fresh (live, no instance label, no record of this object) is adopted by recording
 * it first, and written from the next pass on. A Node whose instance label the record does not
 * vouch for is treated like an earlier VM's: nothing is written, its row reports no instance, and
 * it is deleted once its kubelet stops heartbeating.
 */
import {
  INSTANCE_LABEL,
  MAX_INSTANCE_LENGTH,
  POOL_UID_LABEL,
  type Applied,
  type CellNode,
  type CellNodeStatus
} from '../../../api/cellnodeset.ts'
import type { NodePatch, PodList } from '../../model/observed.ts'
import { ensurePatch, nextClaims, NO_CLAIMS, wantedOf, withoutRestricted } from './ensure.ts'
import { nodeStatusRow, registeredByProvider, type NodeView } from './node-view.ts'
import { priorRecord, recordable, vouchedInstance } from './record.ts'

/** What the core needs to decide one listed Node. */
export interface ListedInput {
  entry: CellNode
  view: NodeView
  /** The entry's row as the agent stored it before this pass. */
  stored: CellNodeStatus | undefined
  /** The CellNodeSet has a stored status (record.ts). */
  hasStatus: boolean
  pool: string
  poolUID: string
  /** The CellNodeSet is being deleted: nothing is written, the record is kept. */
  deleting: boolean
  unbound: PodList
  /** HAMi's DRA mode: the workload cluster's ResourceClaims (the row reads devices and allocations from DRA). */
  claims?: PodList
  /** The Node keys the admin permits past the restricted-key rule. */
  permittedNodeKeys?: readonly string[]
}

/** What the agent does about one listed Node. */
export interface ListedDecision {
  row: CellNodeStatus
  patch?: NodePatch
  /** Not the cell's Node and not live: delete it (`Stale`). */
  stale: boolean
  /** The record claims what the Node does not carry yet: the next pass writes it. */
  pending: boolean
}

/** Decides one listed Node (the module header). */
export function decideListed(input: ListedInput): ListedDecision {
  const { entry, view, pool, poolUID } = input
  const wanted = entry.instance ?? ''
  const prior = priorRecord(view, input.stored, wanted, input.hasStatus)
  const keep = (record: Applied | undefined, extra: Partial<CellNodeStatus> = {}): CellNodeStatus => {
    const row: CellNodeStatus = { ...nodeStatusRow(view, input.unbound, vouchedInstance(view, record), input.claims), ...extra }
    if (record !== undefined) row.applied = record
    return row
  }
  if (input.deleting) return { row: keep(prior), stale: false, pending: false }

  const nodePool = view.labels[POOL_UID_LABEL]
  if (nodePool !== poolUID && !registeredByProvider(view, entry)) {
    const message =
      nodePool === undefined
        ? `Node ${view.name} lacks the label ${POOL_UID_LABEL}: it was not registered by this pool's cell; nothing is written to it`
        : `Node ${view.name} carries ${POOL_UID_LABEL}=${nodePool}, another pool's Node (two pools of one name on one workload cluster?); nothing is written to it`
    return { row: keep(prior, { conflict: true, message }), stale: false, pending: false }
  }

  const label = view.labels[INSTANCE_LABEL]
  const ours = prior !== undefined && wanted !== '' && prior.instance === wanted
  const fresh =
    prior === undefined && recordable(view) && wanted !== '' && wanted.length <= MAX_INSTANCE_LENGTH && label === undefined && view.live
  if (ours || fresh) {
    const { entry: allowed, refused } = withoutRestricted(entry, input.permittedNodeKeys ?? [])
    const { want, tooMany } = wantedOf(allowed, pool, poolUID)
    const claims = prior ?? { uid: view.uid, instance: wanted, ...NO_CLAIMS }
    const record: Applied = { uid: view.uid, instance: wanted, ...nextClaims(claims, want, view) }
    const row = keep(record)
    const notes = [
      ...(refused.length > 0
        ? [
            `not written: ${refused.join(', ')} (a pool may not set what NodeRestriction keeps from a kubelet, or what Kubernetes' controllers own)`
          ]
        : []),
      ...(tooMany.length > 0 ? [`not written: ${tooMany.join(', ')} (what the agent cannot record, it does not write)`] : [])
    ]
    if (notes.length > 0) row.message = notes.join('; ')
    // A fresh Node is only recorded in this pass: the agent writes onto it what its record held when the pass began.
    const patch = ours ? ensurePatch(view, want, prior) : undefined
    const decision: ListedDecision = { row, stale: false, pending: ensurePatch(view, want, record) !== undefined }
    if (patch !== undefined) decision.patch = patch
    return decision
  }
  if (!view.live) return { row: keep(prior), stale: true, pending: false }

  const instance = prior?.instance ?? label ?? ''
  const message =
    prior === undefined && wanted !== '' && instance === wanted
      ? `Node ${view.name} carries the label ${INSTANCE_LABEL} of this cell's guest, but the agent did not write it onto this Node object (a kubelet may set that label on itself): it is not counted as the cell's Node, nothing is written to it, and it is deleted once it stops heartbeating`
      : `Node ${view.name} belongs to instance ${instance === '' ? '(none)' : instance}, not ${wanted === '' ? "this cell's guest (not created yet)" : wanted}, and its kubelet is still live; it is deleted once it stops heartbeating`
  return { row: keep(prior, { conflict: true, message }), stale: false, pending: false }
}
