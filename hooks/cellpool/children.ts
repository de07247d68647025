/**
 * The children of a GPUCellPool, one builder each (cellpool.md, "Cells and their children"): per
 * cell a bootstrap Secret, a SwiftSeedProfile and a SwiftGuest; per pool a CellNodeSet.
 *
 * Every child names its namespace and carries the pool's labels (per cell: pool, pool-uid, cell
 * and cell-index; the CellNodeSet: pool and pool-uid) and `app.kubernetes.io/managed-by`. The
 * builders are pure and deterministic: object keys are sorted where order is free, lists keep a
 * fixed order, and empty collections are left out (metacontroller.md: the API server drops them,
 * and a child answered with one would differ from what is stored on every sync).
 *
 * Choices where the spec is silent:
 * - The bootstrap Secret has `type: Opaque` written out, the API server's default.
 * - `gpuResourceClaim.hugepages` is written only when set: KubeSwift reads an absent and an empty
 *   value alike.
 * - A CellNodeSet entry carries `cells.kubeswift.io/instance` and `instance` only once the guest
 *   has a uid, and `cordon` always (false unless the cell drains).
 * - `demand.nodeLabels` are the pool's node labels plus the pool and pool-uid labels, which every
 *   pool Node carries, so a Pod that selects the pool by its label counts as demand.
 * - `demand.resources` are HAMi's names derived from `resourceName`: the name itself and the name
 *   followed by `mem` and `cores` (nvidia.com/gpu, nvidia.com/gpumem, nvidia.com/gpucores).
 */
import {
  CELL_INDEX_LABEL,
  CELL_LABEL,
  CELLS_API_VERSION,
  INSTANCE_LABEL,
  POOL_LABEL,
  POOL_UID_LABEL,
  type CellNode,
  type CellNodeSetSpec
} from '../api/cellnodeset.ts'
import { SEED_API_VERSION, SWIFT_API_VERSION } from '../api/gpucellpool.ts'
import { canonicalJson, contentHash } from '../k8s/hash.ts'
import { MANAGED_BY, MANAGED_BY_LABEL, type KubeObject } from '../k8s/objects.ts'
import type { ResolvedPool } from './validate.ts'

/** Annotation on a cell's SwiftGuest: {@link templateHash} of what the cell was built from. */
export const TEMPLATE_HASH_ANNOTATION = 'cells.kubeswift.io/template-hash'
/** Keys of the bootstrap Secret; both hold the same bytes (KubeSwift reads `user-data`). */
export const BOOTSTRAP_KEYS = ['user-data', 'value'] as const

/** Which cell of which pool a builder makes a child for. */
export interface CellIdentity {
  poolName: string
  namespace: string
  poolUID: string
  index: number
}

/**
 * A cell index as written in names and the index label: decimal without leading zeros, at most
 * five digits (far above any pool's size), so that each index has exactly one spelling.
 */
export const CELL_INDEX = /^(0|[1-9][0-9]{0,4})$/

/** The name of cell `index`: `<pool>-<index>`, also its SwiftGuest, hostname and Node name. */
export function cellName(pool: string, index: number): string {
  return `${pool}-${index}`
}

/** The name of a cell's bootstrap Secret. */
export function bootstrapSecretName(cell: string): string {
  return `${cell}-bootstrap`
}

/** The name of a cell's SwiftSeedProfile. */
export function seedProfileName(cell: string): string {
  return `${cell}-seed`
}

/** The four labels of a cell's children and Node, keys sorted. */
export function cellLabels(poolName: string, poolUID: string, cell: string, index: number): Record<string, string> {
  return {
    [CELL_LABEL]: cell,
    [CELL_INDEX_LABEL]: String(index),
    [POOL_LABEL]: poolName,
    [POOL_UID_LABEL]: poolUID
  }
}

function childLabels(id: CellIdentity): Record<string, string> {
  return sortKeys({ ...cellLabels(id.poolName, id.poolUID, cellName(id.poolName, id.index), id.index), [MANAGED_BY_LABEL]: MANAGED_BY })
}

/**
 * The cell's bootstrap Secret `<cell>-bootstrap`: the rendered cloud-init under `user-data` and
 * `value`, base64 in `data` (never `stringData`, which the API server does not store, so the
 * answer would differ from the stored object on every sync).
 */
export function buildBootstrapSecret(id: CellIdentity, userData: string): KubeObject {
  const encoded = Buffer.from(userData, 'utf8').toString('base64')
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: bootstrapSecretName(cellName(id.poolName, id.index)), namespace: id.namespace, labels: childLabels(id) },
    type: 'Opaque',
    data: { 'user-data': encoded, value: encoded }
  }
}

/**
 * The cell's SwiftSeedProfile `<cell>-seed`: NoCloud, user data from the bootstrap Secret and,
 * with hostname `CellName`, meta data naming the guest after the cell (so its Node is too).
 */
export function buildSeedProfile(id: CellIdentity, hostname: ResolvedPool['hostname']): KubeObject {
  const cell = cellName(id.poolName, id.index)
  const spec: Record<string, unknown> = {
    datasource: 'NoCloud',
    userData: '',
    userDataFrom: { secretKeyRef: { key: 'user-data', name: bootstrapSecretName(cell) } }
  }
  if (hostname === 'CellName') spec.metaData = `instance-id: ${cell}\nlocal-hostname: ${cell}\n`
  return {
    apiVersion: SEED_API_VERSION,
    kind: 'SwiftSeedProfile',
    metadata: { name: seedProfileName(cell), namespace: id.namespace, labels: childLabels(id) },
    spec: sortKeys(spec)
  }
}

/**
 * The cell's SwiftGuest `<cell>`: the guestTemplate verbatim, overlaid with the fields the
 * controller owns (seed profile, run policy Always, migration off, the GPU), and annotated with
 * the template hash. No spread constraint is added: KubeSwift's GPU launcher ignores them.
 */
export function buildGuest(pool: ResolvedPool, id: CellIdentity): KubeObject {
  const cell = cellName(id.poolName, id.index)
  const spec: Record<string, unknown> = JSON.parse(canonicalJson(pool.guestTemplate)) as Record<string, unknown>
  const overlay: Record<string, unknown> = {
    seedProfileRef: { name: seedProfileName(cell) },
    runPolicy: 'Always',
    migration: { enabled: false }
  }
  if (pool.gpu.backend === 'Native' && pool.gpu.native !== undefined) {
    overlay.gpuProfileRef = { name: pool.gpu.native.profile }
  } else if (pool.gpu.dra !== undefined) {
    const dra = pool.gpu.dra
    const claim: Record<string, string> = { [dra.claim.kind]: dra.claim.name, requestName: dra.requestName, tier: dra.tier }
    if (dra.hugepages !== '') claim.hugepages = dra.hugepages
    overlay.gpuResourceClaim = sortKeys(claim)
  }
  for (const [key, value] of Object.entries(overlay))
    Object.defineProperty(spec, key, { value, enumerable: true, writable: true, configurable: true })
  return {
    apiVersion: SWIFT_API_VERSION,
    kind: 'SwiftGuest',
    metadata: {
      name: cell,
      namespace: id.namespace,
      labels: childLabels(id),
      annotations: { [TEMPLATE_HASH_ANNOTATION]: templateHash(pool) }
    },
    spec: sortKeys(spec)
  }
}

/**
 * The first 10 hex digits of the SHA-256 of what a cell is built from, as canonical JSON:
 * guestTemplate, the resolved gpu, nodeIPFrom and hostname. Defaults are applied first, so
 * writing a default out does not make cells outdated.
 */
export function templateHash(pool: ResolvedPool): string {
  return contentHash({ guestTemplate: pool.guestTemplate, gpu: pool.gpu, nodeIPFrom: pool.nodeIPFrom, hostname: pool.hostname })
}

/**
 * One `spec.nodes[]` entry: the Node the cell registers, what it must carry (the pool's labels,
 * annotations and taints, the cell labels and, once the guest exists, its instance label), and
 * whether it must be cordoned.
 */
export function buildCellNode(pool: ResolvedPool, id: CellIdentity, instance: string, cordon: boolean): CellNode {
  const cell = cellName(id.poolName, id.index)
  const labels: Record<string, string> = { ...pool.workload.labels, ...cellLabels(id.poolName, id.poolUID, cell, id.index) }
  if (instance !== '') labels[INSTANCE_LABEL] = instance
  const node: CellNode = { name: cell, labels: sortKeys(labels), cordon }
  if (instance !== '') node.instance = instance
  if (Object.keys(pool.workload.annotations).length > 0) node.annotations = sortKeys(pool.workload.annotations)
  if (pool.workload.taints.length > 0) node.taints = pool.workload.taints.map((t) => ({ ...t }))
  return sortKeys(node)
}

/** HAMi's resource names for a whole-device resource name. */
export function hamiResources(resourceName: string): string[] {
  return [resourceName, `${resourceName}mem`, `${resourceName}cores`]
}

/**
 * The pool's CellNodeSet, named after it: the kubeconfig the agent uses, the pool uid, one entry
 * per cell that has children (in index order), and, when `demand` is true (autoscaling on), what
 * pending Pods count as demand for this pool.
 */
export function buildCellNodeSet(
  poolName: string,
  namespace: string,
  poolUID: string,
  pool: ResolvedPool,
  nodes: readonly CellNode[],
  demand: boolean
): KubeObject {
  const spec: CellNodeSetSpec = {
    kubeconfigSecretRef: { key: pool.workload.key, name: pool.workload.kubeconfigSecretName },
    poolUID
  }
  if (nodes.length > 0) spec.nodes = [...nodes].sort(byIndex).map((n) => structuredClone(n))
  if (demand) {
    const wanted: NonNullable<CellNodeSetSpec['demand']> = {
      resources: hamiResources(pool.capacity.resourceName),
      nodeLabels: sortKeys({ ...pool.workload.labels, [POOL_LABEL]: poolName, [POOL_UID_LABEL]: poolUID })
    }
    if (pool.workload.taints.length > 0) wanted.taints = pool.workload.taints.map((t) => ({ ...t }))
    spec.demand = sortKeys(wanted)
  }
  return {
    apiVersion: CELLS_API_VERSION,
    kind: 'CellNodeSet',
    metadata: {
      name: poolName,
      namespace,
      labels: sortKeys({ [POOL_LABEL]: poolName, [POOL_UID_LABEL]: poolUID, [MANAGED_BY_LABEL]: MANAGED_BY })
    },
    spec: sortKeys(spec)
  }
}

/** Orders entries by the index their name ends in, then by name. */
function byIndex(a: CellNode, b: CellNode): number {
  const index = (name: string): number => {
    const match = /-(\d+)$/.exec(name)
    return match?.[1] === undefined ? Number.MAX_SAFE_INTEGER : Number(match[1])
  }
  return index(a.name) - index(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
}

/** A shallow copy with keys in sorted order (own enumerable keys only; no prototype writes). */
function sortKeys<T extends object>(value: T): T {
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) {
    Object.defineProperty(out, key, {
      value: (value as Record<string, unknown>)[key],
      enumerable: true,
      writable: true,
      configurable: true
    })
  }
  return out as T
}
