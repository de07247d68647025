/**
 * The size bounds of model/limits.ts, checked from sizes and counts before anything is built: the
 * node metadata and the guestTemplate of a spec, and the pool's CellNodeSet, measured on the
 * largest entry the builders make (build/children.ts). A pool past one gets a problem naming
 * the field and the bound (rules/validate.ts, plan/blocking.ts).
 */
import { canonicalJson } from '../../k8s/hash.ts'
import { bytesText } from './bootstrap.ts'
import { buildCellNode, buildCellNodeSet } from './children.ts'
import { MAX_GUEST_TEMPLATE_BYTES, MAX_NODE_METADATA_BYTES, MAX_NODE_SET_DESIRED_BYTES, WIDEST_CELL_INDEX } from '../model/limits.ts'
import type { PoolProblem } from '../model/problems.ts'
import type { ResolvedPool } from '../model/resolved-pool.ts'

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
