/**
 * The bounds on what a pool's author controls, so that no pool, and no request, makes the sync
 * hook build an answer out of proportion to what it was sent.
 *
 * A pool spec, its join template and the objects labelled as its cells are written by a tenant;
 * the hook copies parts of them once per cell (node labels and annotations into every CellNodeSet
 * entry, the join template into every bootstrap Secret, the guestTemplate into every SwiftGuest).
 * Each bound below is checked from sizes and counts before anything is built, and a pool past one
 * gets a status condition naming the field and the bound, with its existing cells kept exactly
 * as they are. Each is far above what a real pool needs, and each keeps the objects the hook
 * writes within what the API server stores:
 *
 * - bootstrap data per cell, as rendered: 64 KiB. Metacontroller keeps the object it applied in the
 *   annotation `metacontroller.k8s.io/last-applied-configuration`, and the API server takes at
 *   most 256 KiB of annotations on any object; the cell's Secret holds the data twice (`user-data`
 *   and `value`) in base64, so its record passes 256 KiB from about 96 KiB of data, and the Secret
 *   could never be created. A cloud-init join script with a CA bundle is a few KiB (EC2 takes
 *   16 KiB of user data, Azure 64 KiB).
 * - tokens in the join template: 256. A join template names each token once or twice.
 * - node labels and annotations together: 16 KiB of keys and values. Every cell Node carries them,
 *   and the API server takes 256 KiB of annotations on a Node in all, which HAMi's registration
 *   and other agents share. A pool labels its Nodes with a dozen labels and a few annotations,
 *   well under 2 KiB.
 * - the guestTemplate: 64 KiB as JSON. Every cell's SwiftGuest, and its last-applied record,
 *   carries a copy; a SwiftGuestSpec holds references to images, classes and networks, about 1 KiB.
 * - the pool's CellNodeSet: one entry per cell, each carrying the node labels, annotations and
 *   taints, and all of it in Metacontroller's last-applied record, an annotation of at most
 *   256 KiB. So the desired size (`replicas`, or `autoscaling.maxReplicas`) may ask for a spec of
 *   192 KiB, and the cells a pool holds (draining and being created included) may make one of
 *   240 KiB in the sync hook. With a dozen labels, a few annotations and a taint an entry is
 *   about 600 bytes: some 300 cells in one pool.
 *
 * The sync hook also renders at most {@link MAX_BUILT_PER_ANSWER} bootstrap Secrets and builds at
 * most as many SwiftGuests per answer; the rest follow in the next syncs, which the new children
 * trigger. With these, an answer is the observed children it keeps (at most the request), the
 * status (a row per cell), at most 240 KiB of CellNodeSet and a few new children of at most a few
 * hundred KiB each.
 */
import { canonicalJson } from '../../k8s/hash.ts'
import { buildCellNode, buildCellNodeSet } from '../build/children.ts'
import type { ResolvedPool } from '../request/resolve.ts'
import type { PoolProblem } from '../rules/validate.ts'

const KiB = 1024
const MiB = 1024 * KiB

/** The largest bootstrap data of one cell, in bytes, as rendered. */
export const MAX_BOOTSTRAP_BYTES = 64 * KiB
/** The most tokens (bare names between double braces, known or not) in a join template. */
export const MAX_TEMPLATE_TOKENS = 256
/** The most bytes of node label and annotation keys and values together. */
export const MAX_NODE_METADATA_BYTES = 16 * KiB
/** The largest guestTemplate, in bytes of JSON. */
export const MAX_GUEST_TEMPLATE_BYTES = 64 * KiB
/** The largest CellNodeSet the desired size may ask for, in bytes of JSON (admission and the spec check). */
export const MAX_NODE_SET_DESIRED_BYTES = 192 * KiB
/**
 * The largest CellNodeSet the sync hook answers for the cells a pool holds: what fits, with room
 * for the rest of the object, in the 256 KiB of annotations that hold Metacontroller's record.
 */
export const MAX_NODE_SET_BYTES = 240 * KiB
/** Bootstrap Secrets rendered, and SwiftGuests built, in one answer at most. */
export const MAX_BUILT_PER_ANSWER = 2
/** The highest cell index: a cell name's index has at most five digits. */
export const WIDEST_CELL_INDEX = 99999

/** A byte count as a message shows it: `262144 bytes (256 KiB)`. */
export function bytesText(bytes: number): string {
  if (bytes >= MiB && bytes % (MiB / 2) === 0) return `${bytes} bytes (${bytes / MiB} MiB)`
  if (bytes >= KiB && bytes % KiB === 0) return `${bytes} bytes (${bytes / KiB} KiB)`
  return `${bytes} bytes`
}

/** Bytes of the keys and values of a map of strings; other values count as nothing (the schema check reports them). */
function mapBytes(map: unknown): number {
  if (typeof map !== 'object' || map === null || Array.isArray(map)) return 0
  let bytes = 0
  for (const [key, value] of Object.entries(map))
    bytes += Buffer.byteLength(key) + (typeof value === 'string' ? Buffer.byteLength(value) : 0)
  return bytes
}

/** The node labels and annotations past {@link MAX_NODE_METADATA_BYTES}, as a problem. */
export function nodeMetadataProblems(labels: unknown, annotations: unknown): PoolProblem[] {
  const bytes = mapBytes(labels) + mapBytes(annotations)
  if (bytes <= MAX_NODE_METADATA_BYTES) return []
  const field = 'spec.workloadCluster.node'
  return [
    {
      field,
      message:
        `${field}.labels and .annotations take ${bytes} bytes of keys and values, past the bound of ${bytesText(MAX_NODE_METADATA_BYTES)}: ` +
        "every cell's Node carries them, and the pool's CellNodeSet once per cell"
    }
  ]
}

/** A guestTemplate past {@link MAX_GUEST_TEMPLATE_BYTES}, as a problem. */
export function guestTemplateSizeProblems(template: unknown): PoolProblem[] {
  if (typeof template !== 'object' || template === null) return []
  const bytes = Buffer.byteLength(canonicalJson(template))
  if (bytes <= MAX_GUEST_TEMPLATE_BYTES) return []
  const field = 'spec.cell.guestTemplate'
  return [
    {
      field,
      message: `${field} takes ${bytes} bytes as JSON, past the bound of ${bytesText(MAX_GUEST_TEMPLATE_BYTES)}: every cell's SwiftGuest carries a copy`
    }
  ]
}

/** A uid's length (a UUID), for the estimates below. */
const UID = '00000000-0000-4000-8000-000000000000'

/**
 * Bytes of one CellNodeSet entry at its largest: the widest cell name, a guest uid, the pool's
 * node labels, annotations and taints. Builds that one entry, whose size the metadata bound caps.
 */
export function nodeSetEntryBytes(poolName: string, pool: ResolvedPool): number {
  const entry = buildCellNode(pool, { poolName, namespace: '', poolUID: UID, index: WIDEST_CELL_INDEX }, UID, false)
  // A comma between entries.
  return Buffer.byteLength(JSON.stringify(entry)) + 1
}

/**
 * Bytes of a pool's CellNodeSet with `cells` entries at their largest: the object without entries
 * (its demand carries the node labels and taints once more) plus one entry per cell.
 */
export function nodeSetBytes(poolName: string, pool: ResolvedPool, cells: number): { entry: number; total: number } {
  const empty = buildCellNodeSet(poolName, 'n'.repeat(63), UID, pool, [], true)
  const entry = nodeSetEntryBytes(poolName, pool)
  return { entry, total: Buffer.byteLength(JSON.stringify(empty)) + cells * entry }
}

/**
 * The CellNodeSet a pool of `cells` cells needs past `bound`, as a problem of `field` (which
 * `what` describes), or nothing.
 */
export function nodeSetProblems(
  poolName: string,
  pool: ResolvedPool,
  cells: number,
  bound: number,
  field: string,
  what: string
): PoolProblem[] {
  const { entry, total } = nodeSetBytes(poolName, pool, cells)
  if (total <= bound) return []
  const base = total - cells * entry
  return [
    {
      field,
      message:
        `${what}: each cell's CellNodeSet entry takes up to ${entry} bytes (the node labels, annotations and taints), so the pool's CellNodeSet ` +
        `would take ${total}, past the bound of ${bytesText(bound)} (Metacontroller records it in an annotation, and an object takes 256 KiB of them); ` +
        `at most ${Math.max(0, Math.floor((bound - base) / entry))} cells with these node labels, annotations and taints`
    }
  ]
}

/** The desired size of a pool against {@link MAX_NODE_SET_DESIRED_BYTES} (a spec rule). */
export function desiredNodeSetProblems(poolName: string, pool: ResolvedPool): PoolProblem[] {
  const autoscaling = pool.autoscaling.enabled
  const cells = autoscaling ? pool.autoscaling.maxReplicas : pool.replicas
  const field = autoscaling ? 'spec.autoscaling.maxReplicas' : 'spec.replicas'
  return nodeSetProblems(poolName, pool, cells, MAX_NODE_SET_DESIRED_BYTES, field, `${field} ${cells}`)
}
