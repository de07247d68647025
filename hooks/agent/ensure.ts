/**
 * What a listed Node must carry, and the smallest merge patch that gets it there (docs/workload.md
 * steps 1 and 2).
 *
 * The agent records what it set in the Node annotation `cells.kubeswift.io/managed`
 * (`{labels, annotations, taints, cordoned}`), so that a key it set and no longer wants is
 * removed, while whatever someone else put on the Node is never touched. A Node already as
 * required gets no patch at all.
 */
import {
  CELL_INDEX_LABEL,
  CELL_LABEL,
  cellIndexOf,
  INSTANCE_LABEL,
  MANAGED_ANNOTATION,
  POOL_LABEL,
  POOL_UID_LABEL,
  type CellNode,
  type Taint
} from '../api/cellnodeset.ts'
import { restrictedLabelReason, restrictedTaintReason } from '../k8s/node-keys.ts'
import { isRecord, recordOf } from '../k8s/objects.ts'

/** What the agent set on a Node, as recorded in {@link MANAGED_ANNOTATION}. */
export interface Managed {
  labels: string[]
  annotations: string[]
  taints: { key: string; effect: string }[]
  cordoned: boolean
}

/** A merge patch for a Node: `null` removes a key. */
export interface NodePatch {
  metadata?: {
    resourceVersion?: string
    labels?: Record<string, string | null>
    annotations?: Record<string, string | null>
  }
  spec?: { taints?: unknown[]; unschedulable?: boolean | null }
}

/** The parts of a Node the rule reads. */
export interface NodeFacts {
  labels: Record<string, string>
  annotations: Record<string, string>
  taints: unknown[]
  unschedulable: boolean
  resourceVersion?: string
}

/** Reads the managed record; anything unreadable is an empty record (the agent then removes nothing). */
export function readManaged(value: string | undefined): Managed {
  const empty: Managed = { labels: [], annotations: [], taints: [], cordoned: false }
  if (value === undefined) return empty
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    return empty
  }
  if (!isRecord(parsed)) return empty
  const keys = (list: unknown): string[] => (Array.isArray(list) ? list.filter((k): k is string => typeof k === 'string') : [])
  const taints = Array.isArray(parsed.taints)
    ? parsed.taints
        .filter(isRecord)
        .flatMap((t) => (typeof t.key === 'string' && typeof t.effect === 'string' ? [{ key: t.key, effect: t.effect }] : []))
    : []
  return { labels: keys(parsed.labels), annotations: keys(parsed.annotations), taints, cordoned: parsed.cordoned === true }
}

/** The record as written: sorted, so an unchanged record is byte-identical. */
export function writeManaged(managed: Managed): string {
  return JSON.stringify({
    labels: [...managed.labels].sort(),
    annotations: [...managed.annotations].sort(),
    taints: [...managed.taints]
      .map((t) => ({ key: t.key, effect: t.effect }))
      .sort((a, b) => a.key.localeCompare(b.key) || a.effect.localeCompare(b.effect)),
    cordoned: managed.cordoned
  })
}

/**
 * The labels a listed Node must carry: the entry's, overlaid with the cell labels (pool, pool
 * uid, cell, cell index, instance), which win on a clash.
 */
export function desiredLabels(entry: CellNode, pool: string, poolUID: string): Record<string, string> {
  const labels: Record<string, string> = { ...(entry.labels ?? {}) }
  labels[POOL_LABEL] = pool
  labels[POOL_UID_LABEL] = poolUID
  labels[CELL_LABEL] = entry.name
  labels[INSTANCE_LABEL] = entry.instance ?? ''
  const index = cellIndexOf(pool, entry.name)
  if (index !== undefined) labels[CELL_INDEX_LABEL] = String(index)
  return labels
}

/**
 * The entry without the labels and taints a pool may not put on a Node (hooks/k8s/node-keys.ts),
 * and the keys left out. The pool hooks refuse them in the spec; the agent, which writes with
 * rights a kubelet does not have, refuses them again whatever a CellNodeSet says (written by an
 * older release, or past a webhook that was off). A key it set before and now refuses is removed
 * like any key it no longer wants.
 */
export function withoutRestricted(entry: CellNode): { entry: CellNode; refused: string[] } {
  const labels = Object.entries(entry.labels ?? {})
  const taints = entry.taints ?? []
  const keptLabels = labels.filter(([key]) => restrictedLabelReason(key) === undefined)
  const keptTaints = taints.filter((t) => restrictedTaintReason(t.key) === undefined)
  const refused = [
    ...labels.filter(([key]) => restrictedLabelReason(key) !== undefined).map(([key]) => `label ${key}`),
    ...taints.filter((t) => restrictedTaintReason(t.key) !== undefined).map((t) => `taint ${t.key}:${t.effect}`)
  ]
  if (refused.length === 0) return { entry, refused }
  const out: CellNode = { ...entry, labels: recordOf(keptLabels) }
  if (entry.taints !== undefined) out.taints = keptTaints
  return { entry: out, refused }
}

const taintKey = (t: { key: string; effect: string }): string => `${t.key}\u0000${t.effect}`

/**
 * The merge patch that makes `node` carry `entry` (labels from {@link desiredLabels}), or
 * undefined when it already does. Taints are a list, which a merge patch replaces whole, so a
 * taint change sends the full list with the Node's resourceVersion: a concurrent change makes
 * the API server refuse the patch (409) rather than lose it.
 */
export function ensurePatch(node: NodeFacts, entry: CellNode, labels: Record<string, string>): NodePatch | undefined {
  const before = readManaged(node.annotations[MANAGED_ANNOTATION])
  const patch: NodePatch = {}
  const metadata: NonNullable<NodePatch['metadata']> = {}

  const mapPatch = (have: Record<string, string>, want: Record<string, string>, owned: string[]): Record<string, string | null> => {
    // Built with own data properties: a key such as `__proto__` stays a key of the patch.
    const set = Object.entries(want).filter(([key, value]) => !Object.hasOwn(have, key) || have[key] !== value)
    const removed = owned.filter((key) => !Object.hasOwn(want, key) && Object.hasOwn(have, key)).map((key) => [key, null] as const)
    return recordOf<string | null>([...set, ...removed])
  }
  const wantAnnotations = recordOf(Object.entries(entry.annotations ?? {}).filter(([key]) => key !== MANAGED_ANNOTATION))
  const labelPatch = mapPatch(node.labels, labels, before.labels)
  const annotationPatch = mapPatch(
    node.annotations,
    wantAnnotations,
    before.annotations.filter((k) => k !== MANAGED_ANNOTATION)
  )

  // Taints: drop the ones the agent set and no longer wants, set the wanted ones by key and effect.
  const wanted = new Map<string, Taint>()
  for (const taint of entry.taints ?? []) wanted.set(taintKey(taint), taint)
  const owned = new Set(before.taints.map(taintKey))
  const next: unknown[] = []
  const placed = new Set<string>()
  for (const taint of node.taints) {
    if (!isRecord(taint) || typeof taint.key !== 'string' || typeof taint.effect !== 'string') {
      next.push(taint)
      continue
    }
    const key = taintKey({ key: taint.key, effect: taint.effect })
    const want = wanted.get(key)
    if (want !== undefined) {
      if (placed.has(key)) continue
      placed.add(key)
      next.push((taint.value ?? '') === (want.value ?? '') ? taint : plainTaint(want))
    } else if (!owned.has(key)) {
      next.push(taint)
    }
  }
  for (const [key, taint] of wanted) if (!placed.has(key)) next.push(plainTaint(taint))
  const taintsChanged = JSON.stringify(next) !== JSON.stringify(node.taints)

  // Cordon: set when asked; cleared only when the agent's record says it set it.
  let cordoned = before.cordoned
  let unschedulable: boolean | null | undefined
  if (entry.cordon === true) {
    if (!node.unschedulable) {
      unschedulable = true
      cordoned = true
    }
  } else if (cordoned) {
    if (node.unschedulable) unschedulable = null
    cordoned = false
  }

  const record = writeManaged({
    labels: Object.keys(labels),
    annotations: Object.keys(wantAnnotations),
    taints: [...wanted.values()].map((t) => ({ key: t.key, effect: t.effect })),
    cordoned
  })
  if (node.annotations[MANAGED_ANNOTATION] !== record) annotationPatch[MANAGED_ANNOTATION] = record

  if (Object.keys(labelPatch).length > 0) metadata.labels = labelPatch
  if (Object.keys(annotationPatch).length > 0) metadata.annotations = annotationPatch
  const spec: NonNullable<NodePatch['spec']> = {}
  if (taintsChanged) spec.taints = next
  if (unschedulable !== undefined) spec.unschedulable = unschedulable
  if (Object.keys(metadata).length === 0 && Object.keys(spec).length === 0) return undefined
  if (taintsChanged && node.resourceVersion !== undefined) metadata.resourceVersion = node.resourceVersion
  if (Object.keys(metadata).length > 0) patch.metadata = metadata
  if (Object.keys(spec).length > 0) patch.spec = spec
  return patch
}

function plainTaint(taint: Taint): Taint {
  const out: Taint = { key: taint.key, effect: taint.effect }
  if (taint.value !== undefined && taint.value !== '') out.value = taint.value
  return out
}
