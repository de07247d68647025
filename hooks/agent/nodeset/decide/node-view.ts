/**
 * A workload Node as the agent's core sees it: the fields it reads, taken defensively from
 * whatever the snapshot listed, and the status row a present Node gets (its liveness, its HAMi
 * registration and allocations). Pure, like the core (docs/workload.md, "What the agent does").
 */
import { HAMI_REGISTER_ANNOTATION, POOL_UID_LABEL, type CellNode, type CellNodeStatus } from '../../../api/cellnodeset.ts'
import { asText, isRecord, recordOf } from '../../../k8s/objects.ts'
import type { LivenessWindows, ObservedNode, PodList } from '../../model/observed.ts'
import { draNodeRow } from '../demand/dra.ts'
import { allocationsOf, parseRegistration } from '../demand/hami.ts'
import { isLive } from './liveness.ts'

const stringMap = (value: unknown): Record<string, string> => {
  // Own data properties only: a key such as `__proto__` stays a key.
  return isRecord(value) ? recordOf(Object.entries(value).filter((e): e is [string, string] => typeof e[1] === 'string')) : {}
}

/** The fields of a Node the core reads, defensively. */
export interface NodeView {
  name: string
  uid: string
  resourceVersion: string
  labels: Record<string, string>
  annotations: Record<string, string>
  taints: unknown[]
  providerID: string
  unschedulable: boolean
  ready: boolean
  live: boolean
  pods: PodList
  /** HAMi's DRA mode: the Node's ResourceSlices of HAMi's driver. */
  slices?: PodList
}

export function viewNode(observed: ObservedNode, now: number, windows: LivenessWindows): NodeView | undefined {
  const node = observed.node
  if (!isRecord(node) || !isRecord(node.metadata)) return undefined
  const name = asText(node.metadata.name)
  if (name === undefined || name === '') return undefined
  const spec = isRecord(node.spec) ? node.spec : {}
  const status = isRecord(node.status) ? node.status : {}
  const conditions = Array.isArray(status.conditions) ? status.conditions : []
  const ready = conditions.some((c) => isRecord(c) && c.type === 'Ready' && c.status === 'True')
  return {
    name,
    uid: asText(node.metadata.uid) ?? '',
    resourceVersion: asText(node.metadata.resourceVersion) ?? '',
    labels: stringMap(node.metadata.labels),
    annotations: stringMap(node.metadata.annotations),
    taints: Array.isArray(spec.taints) ? spec.taints : [],
    providerID: asText(spec.providerID) ?? '',
    unschedulable: spec.unschedulable === true,
    ready,
    live: isLive(observed.beats, now, windows),
    pods: observed.pods,
    ...(observed.slices !== undefined ? { slices: observed.slices } : {})
  }
}

/**
 * A Cluster API cell's Node as its kubelet registered it: no pool-uid label (the user's
 * bootstrap config template gives it none), and the providerID of the cell's Machine, which the
 * infrastructure provider writes onto the Node it boots. The pool labels are then written as for
 * a fresh registration.
 */
export function registeredByProvider(view: NodeView, entry: CellNode): boolean {
  const providerID = entry.providerID ?? ''
  return providerID !== '' && view.providerID === providerID && !Object.hasOwn(view.labels, POOL_UID_LABEL)
}

/**
 * The status row of a present Node; `instance` is the one the agent vouches for (record.ts,
 * `vouchedInstance`), never the label as the Node carries it.
 */
export function nodeStatusRow(view: NodeView, unbound: PodList, instance: string, claims?: PodList): CellNodeStatus {
  const head: CellNodeStatus = {
    name: view.name,
    present: true,
    instance,
    poolUID: view.labels[POOL_UID_LABEL] ?? '',
    live: view.live,
    ready: view.ready,
    unschedulable: view.unschedulable
  }
  // HAMi's DRA mode: devices and allocations from ResourceSlices and ResourceClaims (dra.ts).
  if (claims !== undefined) return { ...head, ...draNodeRow(view.name, view.slices ?? { read: false, items: [] }, claims) }
  const { registration, devices } = parseRegistration(view.annotations[HAMI_REGISTER_ANNOTATION])
  const row: CellNodeStatus = { ...head, devices, registration, allocations: allocationsOf(view.name, devices, view.pods, unbound) }
  if (registration === 'Unparseable')
    row.message = `${HAMI_REGISTER_ANNOTATION} reads in neither HAMi format (a JSON array, or records of 7 or 9 fields)`
  return row
}
