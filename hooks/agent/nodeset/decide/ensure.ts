/**
 * What a listed Node must carry, and the smallest merge patch that gets it there (docs/workload.md
 * steps 1 and 2).
 *
 * The agent keeps what it set on a Node in its record (`status.nodes[].applied`, record.ts), never
 * on the Node, whose kubelet may write its own annotations. The record is written ahead: a pass
 * first records what it is about to set (a claim), and writes onto the Node only what the record
 * already held when the pass began. So whatever the agent has set is recorded, even when a status
 * write fails after a Node write, and a key is removed only while the record names it. Whatever
 * someone else put on the Node is never touched. A Node already as required gets no patch at all.
 */
import {
  CELL_INDEX_LABEL,
  CELL_LABEL,
  cellIndexOf,
  INSTANCE_LABEL,
  MANAGED_ANNOTATION,
  MAX_KEY_LENGTH,
  MAX_WRITTEN_KEYS,
  MAX_WRITTEN_TAINTS,
  POOL_LABEL,
  POOL_UID_LABEL,
  type CellNode,
  type Taint
} from '../../../api/cellnodeset.ts'
import { restrictedLabelReason, restrictedTaintReason } from '../../../k8s/node-keys.ts'
import { isRecord, recordOf } from '../../../k8s/objects.ts'
import type { NodePatch } from '../../model/observed.ts'

/** A taint by what identifies it on a Node: its key and effect. */
export interface TaintKey {
  key: string
  effect: Taint['effect']
}

/** What the agent's record says it set, or sets next, on a Node. */
export interface Claims {
  labels: string[]
  annotations: string[]
  taints: TaintKey[]
  cordoned: boolean
}

/** A record that claims nothing. */
export const NO_CLAIMS: Claims = { labels: [], annotations: [], taints: [], cordoned: false }

/** What a listed Node must carry, after the keys the agent refuses are left out. */
export interface Wanted {
  labels: Record<string, string>
  annotations: Record<string, string>
  taints: Taint[]
  cordon: boolean
}

/** The parts of a Node the rule reads. */
export interface NodeFacts {
  labels: Record<string, string>
  annotations: Record<string, string>
  taints: unknown[]
  unschedulable: boolean
  resourceVersion?: string
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
 * like any key it no longer wants. `permitted` are the keys the admin permits (`PERMITTED_NODE_KEYS`).
 */
export function withoutRestricted(entry: CellNode, permitted: readonly string[] = []): { entry: CellNode; refused: string[] } {
  const labels = Object.entries(entry.labels ?? {})
  const taints = entry.taints ?? []
  const labelAllowed = ([key]: [string, string]): boolean => restrictedLabelReason(key, permitted) === undefined
  const taintAllowed = (t: { key: string }): boolean => restrictedTaintReason(t.key, permitted) === undefined
  const keptLabels = labels.filter(labelAllowed)
  const keptTaints = taints.filter(taintAllowed)
  const refused = [
    ...labels.filter((l) => !labelAllowed(l)).map(([key]) => `label ${key}`),
    ...taints.filter((t) => !taintAllowed(t)).map((t) => `taint ${t.key}:${t.effect}`)
  ]
  if (refused.length === 0) return { entry, refused }
  const out: CellNode = { ...entry, labels: recordOf(keptLabels) }
  if (entry.taints !== undefined) out.taints = keptTaints
  return { entry: out, refused }
}

/**
 * What a listed Node must carry (the entry's labels overlaid with the cell labels, its
 * annotations, taints and cordon), within what the record can hold: a key longer than a
 * qualified name, and keys past {@link MAX_WRITTEN_KEYS} labels or annotations or
 * {@link MAX_WRITTEN_TAINTS} taints (the cell labels first, then by key), are left out and named,
 * since a key the agent cannot record it must not write.
 */
export function wantedOf(entry: CellNode, pool: string, poolUID: string): { want: Wanted; tooMany: string[] } {
  const tooMany: string[] = []
  const cell = new Set([POOL_LABEL, POOL_UID_LABEL, CELL_LABEL, CELL_INDEX_LABEL, INSTANCE_LABEL])
  const bound = (what: string, map: Record<string, string>, first: ReadonlySet<string>): Record<string, string> => {
    const keys = Object.keys(map).sort((a, b) => Number(first.has(b)) - Number(first.has(a)) || (a < b ? -1 : a > b ? 1 : 0))
    const kept: [string, string][] = []
    for (const key of keys) {
      if (key.length > MAX_KEY_LENGTH) tooMany.push(`${what} of ${key.length} characters (a key has at most ${MAX_KEY_LENGTH})`)
      else if (kept.length >= MAX_WRITTEN_KEYS) tooMany.push(`${what} ${key} (past ${MAX_WRITTEN_KEYS} ${what}s)`)
      else kept.push([key, map[key] as string])
    }
    return recordOf(kept)
  }
  const labels = bound('label', desiredLabels(entry, pool, poolUID), cell)
  const annotations = bound(
    'annotation',
    recordOf(Object.entries(entry.annotations ?? {}).filter(([k]) => k !== MANAGED_ANNOTATION)),
    new Set()
  )
  const taints: Taint[] = []
  for (const taint of entry.taints ?? []) {
    if (taint.key.length > MAX_KEY_LENGTH) tooMany.push(`taint of ${taint.key.length} characters (a key has at most ${MAX_KEY_LENGTH})`)
    else if (taints.length >= MAX_WRITTEN_TAINTS) tooMany.push(`taint ${taint.key}:${taint.effect} (past ${MAX_WRITTEN_TAINTS} taints)`)
    else taints.push(taint)
  }
  return { want: { labels, annotations, taints, cordon: entry.cordon === true }, tooMany }
}

const taintId = (t: { key: string; effect: string }): string => `${t.key}\u0000${t.effect}`

/** The Node's taints that have a string key and effect, by key and effect. */
function taintIds(taints: readonly unknown[]): Set<string> {
  const ids = new Set<string>()
  for (const t of taints)
    if (isRecord(t) && typeof t.key === 'string' && typeof t.effect === 'string') ids.add(taintId({ key: t.key, effect: t.effect }))
  return ids
}

/**
 * The merge patch that makes `node` carry what is both wanted and claimed, and removes what is
 * claimed and no longer wanted; undefined when there is nothing to write. What is wanted but not
 * yet claimed waits for the record to hold it ({@link nextClaims}). Taints are a list, which a
 * merge patch replaces whole, so a taint change sends the full list with the Node's
 * resourceVersion: a concurrent change makes the API server refuse the patch (409) rather than
 * lose it. The annotation of earlier releases ({@link MANAGED_ANNOTATION}) goes with any patch.
 */
export function ensurePatch(node: NodeFacts, want: Wanted, claims: Claims): NodePatch | undefined {
  const mapPatch = (
    have: Record<string, string>,
    wanted: Record<string, string>,
    claimed: readonly string[]
  ): Record<string, string | null> => {
    const mine = new Set(claimed)
    // Built with own data properties: a key such as `__proto__` stays a key of the patch.
    const set = Object.entries(wanted).filter(([key, value]) => mine.has(key) && (!Object.hasOwn(have, key) || have[key] !== value))
    const removed = claimed.filter((key) => !Object.hasOwn(wanted, key) && Object.hasOwn(have, key)).map((key) => [key, null] as const)
    return recordOf<string | null>([...set, ...removed])
  }
  const labelPatch = mapPatch(node.labels, want.labels, claims.labels)
  const annotationPatch = mapPatch(
    node.annotations,
    want.annotations,
    claims.annotations.filter((k) => k !== MANAGED_ANNOTATION)
  )

  // Taints: drop the claimed ones no longer wanted, set the wanted claimed ones by key and effect.
  const claimed = new Set(claims.taints.map(taintId))
  const wanted = new Map<string, Taint>()
  for (const taint of want.taints) if (claimed.has(taintId(taint))) wanted.set(taintId(taint), taint)
  const next: unknown[] = []
  const placed = new Set<string>()
  for (const taint of node.taints) {
    if (!isRecord(taint) || typeof taint.key !== 'string' || typeof taint.effect !== 'string') {
      next.push(taint)
      continue
    }
    const id = taintId({ key: taint.key, effect: taint.effect })
    const wantedTaint = wanted.get(id)
    if (wantedTaint !== undefined) {
      if (placed.has(id)) continue
      placed.add(id)
      next.push((taint.value ?? '') === (wantedTaint.value ?? '') ? taint : plainTaint(wantedTaint))
    } else if (!claimed.has(id)) {
      next.push(taint)
    }
  }
  for (const [id, taint] of wanted) if (!placed.has(id)) next.push(plainTaint(taint))
  const taintsChanged = JSON.stringify(next) !== JSON.stringify(node.taints)

  // Cordon: set when asked and claimed; cleared only when the record says the agent set it.
  let unschedulable: boolean | null | undefined
  if (want.cordon && claims.cordoned && !node.unschedulable) unschedulable = true
  else if (!want.cordon && claims.cordoned && node.unschedulable) unschedulable = null

  const spec: NonNullable<NodePatch['spec']> = {}
  if (taintsChanged) spec.taints = next
  if (unschedulable !== undefined) spec.unschedulable = unschedulable
  if (Object.keys(labelPatch).length === 0 && Object.keys(annotationPatch).length === 0 && Object.keys(spec).length === 0) return undefined
  if (Object.hasOwn(node.annotations, MANAGED_ANNOTATION)) annotationPatch[MANAGED_ANNOTATION] = null
  const metadata: NonNullable<NodePatch['metadata']> = {}
  if (taintsChanged && node.resourceVersion !== undefined) metadata.resourceVersion = node.resourceVersion
  if (Object.keys(labelPatch).length > 0) metadata.labels = labelPatch
  if (Object.keys(annotationPatch).length > 0) metadata.annotations = annotationPatch
  const patch: NodePatch = {}
  if (Object.keys(metadata).length > 0) patch.metadata = metadata
  if (Object.keys(spec).length > 0) patch.spec = spec
  return patch
}

/**
 * What the record claims after this pass: everything wanted, and what it claimed before that the
 * Node still carries (a key to remove stays recorded until it is seen gone). The cordon is
 * claimed when asked for while the Node is schedulable (so the cordon the agent then sets is its
 * own, and one an admin set before is not), and kept while the Node stays unschedulable. Keys to
 * remove past what the record holds are forgotten, so left on the Node: the safe side.
 */
export function nextClaims(claims: Claims, want: Wanted, node: NodeFacts): Claims {
  const keys = (wanted: Record<string, string>, claimed: readonly string[], have: Record<string, string>): string[] => {
    const keep = Object.keys(wanted).sort()
    const pending = claimed.filter((k) => !Object.hasOwn(wanted, k) && Object.hasOwn(have, k)).sort()
    return [...keep, ...[...new Set(pending)].slice(0, 2 * MAX_WRITTEN_KEYS - keep.length)].sort()
  }
  const onNode = taintIds(node.taints)
  const wantedIds = new Set(want.taints.map(taintId))
  const taints = new Map<string, TaintKey>()
  for (const t of want.taints) taints.set(taintId(t), { key: t.key, effect: t.effect })
  for (const t of claims.taints) {
    if (taints.size >= 2 * MAX_WRITTEN_TAINTS) break
    if (!wantedIds.has(taintId(t)) && onNode.has(taintId(t))) taints.set(taintId(t), { key: t.key, effect: t.effect })
  }
  return {
    labels: keys(want.labels, claims.labels, node.labels),
    annotations: keys(want.annotations, claims.annotations, node.annotations),
    taints: [...taints.values()].sort((a, b) =>
      a.key < b.key ? -1 : a.key > b.key ? 1 : a.effect < b.effect ? -1 : a.effect > b.effect ? 1 : 0
    ),
    cordoned: want.cordon ? claims.cordoned || !node.unschedulable : claims.cordoned && node.unschedulable
  }
}

function plainTaint(taint: Taint): Taint {
  const out: Taint = { key: taint.key, effect: taint.effect }
  if (taint.value !== undefined && taint.value !== '') out.value = taint.value
  return out
}
