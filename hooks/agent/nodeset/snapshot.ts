/**
 * Reads what the core needs from a workload cluster, for one CellNodeSet (style rule 13: the
 * I/O before the decision).
 *
 * Nodes: those carrying the pool's uid label (one list by label selector) and every listed name
 * not among them (one get each). Per Node, its Lease `kube-node-lease/<node>` and its Pods
 * (`spec.nodeName=<node>`); and the Pods with no Node yet that are Pending
 * (`spec.nodeName=,status.phase=Pending`), which carry both the demand and the Pods HAMi's
 * scheduler has annotated for a Node (`hami.io/vgpu-node`) before binding them. That list is read
 * in pages ({@link listPendingPods}), at most `maxPods` Pods, and given by the caller: the
 * controller reads it once per workload cluster and round and shares it between the pools of that
 * cluster. No list covers the whole cluster's Pods. A failed Node read makes the cluster
 * unreachable (classified); a failed Pod list only makes the Pods unread.
 */
import { HAMI_DRA_DRIVER, POOL_UID_LABEL } from '../../api/cellnodeset.ts'
import { isRecord, nameOf } from '../../k8s/objects.ts'
import type { WorkloadApi } from '../model/apis.ts'
import type { DraSnapshot, ObservedNode, PodList, WorkloadSnapshot } from '../model/observed.ts'
import type { HeartbeatTracker } from './decide/liveness.ts'
import { classifyError } from '../workload/reachability.ts'
import { WorkloadHttpError } from '../workload/http.ts'

/** The field selector of the Pods that have no Node and are Pending. */
export const UNBOUND_PENDING = 'spec.nodeName=,status.phase=Pending'
/** Pods asked for per page of the pending list. */
export const PENDING_PAGE_SIZE = 500
/**
 * Pages read at most for one pending list. The API server filters a field selector after it
 * reads a page from storage, so a page may hold few Pods or none yet carry on: this stops a
 * server that answers an endless run of them, on top of the pass's deadline and byte budget.
 */
export const MAX_PENDING_PAGES = 1000

/**
 * The unbound pending Pods, page by page (`limit`, `continue`), at most `maxPods` of them. The
 * list stops early, `truncated`, at `maxPods`, at {@link MAX_PENDING_PAGES}, or when a page is past
 * a byte bound (the answer's, or the pass's budget): the Pods read so far count, more may exist.
 * Any other failure makes the list unread.
 */
export async function listPendingPods(api: WorkloadApi, maxPods: number): Promise<PodList> {
  return listPages((limit, token) => api.listPodPage(UNBOUND_PENDING, limit, token), maxPods)
}

/**
 * The most ResourceClaims a DRA pool's pass lists (every namespace's: a claim has no field
 * selector for its Node or class); past it the list is `truncated`, allocations unread.
 */
export const MAX_CLAIMS = 50_000

/** A list read page by page as {@link listPendingPods} reads the pending Pods. */
export async function listPages(
  page: (limit: number, token: string | undefined) => Promise<{ items: unknown[]; continue?: string }>,
  maxItems: number
): Promise<PodList> {
  const items: unknown[] = []
  let token: string | undefined
  try {
    for (let n = 0; n < MAX_PENDING_PAGES; n++) {
      const answer = await page(Math.min(PENDING_PAGE_SIZE, maxItems - items.length), token)
      // A server may answer more than the limit asked for; only what fits is kept.
      for (const item of answer.items.slice(0, maxItems - items.length)) items.push(item)
      token = answer.continue
      if (token === undefined) return { read: true, items }
      if (items.length >= maxItems) break
    }
  } catch (error) {
    if (!(error instanceof WorkloadHttpError && error.bound !== undefined)) return { read: false, items: [] }
  }
  return { read: true, items, truncated: true }
}

/** A snapshot that says only why the cluster could not be read. */
export function unreachable(reason: WorkloadSnapshot['reachability']): WorkloadSnapshot {
  return { reachability: reason, nodes: [], unbound: { read: false, items: [] } }
}

/**
 * Reads one snapshot. `tracker` remembers heartbeats between passes; `now` is the agent's clock,
 * read after the reads so that a slow read never ages a heartbeat it has just seen change.
 */
export async function readSnapshot(
  api: WorkloadApi,
  spec: { poolUID: string; nodes?: { name: string }[]; dra?: { deviceClassName: string } },
  tracker: HeartbeatTracker,
  now: () => number,
  unbound: () => Promise<PodList>
): Promise<WorkloadSnapshot> {
  let nodes: unknown[]
  try {
    nodes = await api.listNodes(`${POOL_UID_LABEL}=${spec.poolUID}`)
    const seen = new Set(nodes.map(nameOf))
    for (const entry of spec.nodes ?? []) {
      if (seen.has(entry.name)) continue
      const node = await api.getNode(entry.name)
      if (node !== undefined) nodes.push(node)
    }
  } catch (error) {
    // After an outage every heartbeat is watched afresh: kubelets could not renew either, and a
    // Lease that aged while nobody could reach the API server says nothing about its kubelet.
    tracker.retain(new Set())
    return unreachable(classifyError(error))
  }

  const observed: ObservedNode[] = []
  for (const node of nodes) {
    const name = nameOf(node)
    if (name === undefined) continue
    let renewTime: string | undefined
    try {
      const lease = await api.getNodeLease(name)
      renewTime = isRecord(lease) && isRecord(lease.spec) && typeof lease.spec.renewTime === 'string' ? lease.spec.renewTime : undefined
    } catch {
      // An unreadable Lease: the Ready heartbeat decides (docs/workload.md, "live").
      renewTime = undefined
    }
    observed.push({ node, beats: { watchedSince: 0 }, pods: await podList(api, `spec.nodeName=${name}`) })
    const last = observed[observed.length - 1] as ObservedNode
    if (spec.dra !== undefined) last.slices = await sliceList(api, name)
    last.beats = tracker.observe(name, renewTime, heartbeatOf(node), now())
  }
  tracker.retain(new Set(observed.map((o) => nameOf(o.node) as string)))
  const snapshot: WorkloadSnapshot = { reachability: { reason: 'Reachable', message: '' }, nodes: observed, unbound: await unbound() }
  if (spec.dra !== undefined) snapshot.dra = await readDra(api, spec.dra.deviceClassName)
  return snapshot
}

/** HAMi's ResourceSlices of one Node (field selectors `spec.nodeName` and `spec.driver`). */
async function sliceList(api: WorkloadApi, node: string): Promise<PodList> {
  try {
    return { read: true, items: await api.listResourceSlices(`spec.nodeName=${node},spec.driver=${HAMI_DRA_DRIVER}`) }
  } catch {
    return { read: false, items: [] }
  }
}

/** The claims of every namespace and the pool's DeviceClass. */
async function readDra(api: WorkloadApi, deviceClassName: string): Promise<DraSnapshot> {
  const claims = await listPages((limit, token) => api.listResourceClaimPage(limit, token), MAX_CLAIMS)
  let deviceClass: DraSnapshot['deviceClass']
  try {
    deviceClass = (await api.getDeviceClass(deviceClassName)) === undefined ? 'Missing' : 'Found'
  } catch {
    deviceClass = 'Unread'
  }
  return { claims, deviceClass }
}

async function podList(api: WorkloadApi, fieldSelector: string): Promise<PodList> {
  try {
    return { read: true, items: await api.listPods(fieldSelector) }
  } catch {
    return { read: false, items: [] }
  }
}

/** The Ready condition's lastHeartbeatTime, as the text the API server sent. */
export function heartbeatOf(node: unknown): string | undefined {
  if (!isRecord(node) || !isRecord(node.status) || !Array.isArray(node.status.conditions)) return undefined
  const ready = (node.status.conditions as unknown[]).find((c) => isRecord(c) && c.type === 'Ready')
  return isRecord(ready) && typeof ready.lastHeartbeatTime === 'string' ? ready.lastHeartbeatTime : undefined
}
