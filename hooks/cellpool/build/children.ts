/**
 * The children of a GPUCellPool (docs/cellpool.md, "Cells and their children"): what one answer carries
 * for each cell, and the builders of what every pool has whatever its provisioner: per cell the
 * bootstrap Secret and the CellNodeSet entry, per pool the CellNodeSet. The machine and what it
 * refers to are the provisioner's (model/provisioner.ts; SwiftGuest: provisioners/swift-guest.ts).
 *
 * Every child names its namespace and carries the pool's labels (per cell: pool, pool-uid, cell
 * and cell-index; the CellNodeSet: pool and pool-uid) and `app.kubernetes.io/managed-by`. The
 * builders are pure and deterministic: object keys are sorted where order is free, lists keep a
 * fixed order, and empty collections are left out (docs/metacontroller.md: the API server drops them,
 * and a child answered with one would differ from what is stored on every sync).
 *
 * An existing cell keeps what it was built with: its children are answered as observed, in the
 * shape of their last-applied records (metacontroller/keep.ts), so the merge changes nothing on them. A new
 * template reaches a cell only by replacing it (plan/scaling.ts).
 *
 * Choices where the spec is silent:
 * - The bootstrap Secret has `type: Opaque` written out, the API server's default.
 * - A CellNodeSet entry carries `cells.kubeswift.io/instance` and `instance` only once the guest
 *   has a uid, and `cordon` always (false unless the cell drains).
 * - `demand.nodeLabels` are the pool's node labels plus the pool and pool-uid labels, which every
 *   pool Node carries, so a Pod that selects the pool by its label counts as demand.
 * - `demand.resources` are HAMi's names derived from `resourceName`: the name itself and the name
 *   followed by `mem` and `cores` (nvidia.com/gpu, nvidia.com/gpumem, nvidia.com/gpucores).
 */
import {
  cellName,
  CELLS_API_VERSION,
  INSTANCE_LABEL,
  POOL_LABEL,
  PHYSICAL_GPU_DRIVER,
  POOL_UID_LABEL,
  type CellNode,
  type CellNodeSetSpec
} from '../../api/cellnodeset.ts'
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../k8s/labels.ts'
import { sortedRecord, type KubeObject } from '../../k8s/objects.ts'
import { keepAsIs } from '../../metacontroller/keep.ts'
import { bootstrapValues, renderBootstrap } from './bootstrap.ts'
import { bootstrapSecretName, cellLabels } from '../request/cell-names.ts'
import { MAX_BUILT_PER_ANSWER } from '../model/limits.ts'
import type { CellProvisioner, CellIdentity } from '../model/provisioner.ts'
import type { ObservedCell } from '../model/cell.ts'
import type { ResolvedDra, ResolvedPool } from '../model/resolved-pool.ts'
import type { CellPlan } from '../model/plan.ts'

/** Keys of the bootstrap Secret; both hold the same bytes (KubeSwift reads `user-data`). */
export const BOOTSTRAP_KEYS = ['user-data', 'value'] as const

/** The labels of a cell's children: the cell labels and managed-by, keys sorted. */
export function childLabels(id: CellIdentity): Record<string, string> {
  return sortedRecord({ ...cellLabels(id.poolName, id.poolUID, cellName(id.poolName, id.index), id.index), [MANAGED_BY_LABEL]: MANAGED_BY })
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
 * One `spec.nodes[]` entry: the Node the cell registers, what it must carry (the pool's labels,
 * annotations and taints, the cell labels and, once the guest exists, its instance label), and
 * whether it must be cordoned.
 */
export function buildCellNode(pool: ResolvedPool, id: CellIdentity, instance: string, cordon: boolean): CellNode {
  const cell = cellName(id.poolName, id.index)
  const labels: Record<string, string> = { ...pool.workload.labels, ...cellLabels(id.poolName, id.poolUID, cell, id.index) }
  if (instance !== '') labels[INSTANCE_LABEL] = instance
  const node: CellNode = { name: cell, labels: sortedRecord(labels), cordon }
  if (instance !== '') node.instance = instance
  if (Object.keys(pool.workload.annotations).length > 0) node.annotations = sortedRecord(pool.workload.annotations)
  if (pool.workload.taints.length > 0) node.taints = pool.workload.taints.map((t) => ({ ...t }))
  return sortedRecord(node)
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
  if (nodes.length > 0) spec.nodes = [...nodes].sort(byCellIndex).map((n) => structuredClone(n))
  if (demand) {
    const wanted: NonNullable<CellNodeSetSpec['demand']> = {
      resources: hamiResources(pool.capacity.resourceName),
      nodeLabels: sortedRecord({ ...pool.workload.labels, [POOL_LABEL]: poolName, [POOL_UID_LABEL]: poolUID })
    }
    if (pool.workload.taints.length > 0) wanted.taints = pool.workload.taints.map((t) => ({ ...t }))
    spec.demand = sortedRecord(wanted)
  }
  if (pool.capacity.mode === 'DRA' && pool.capacity.deviceClassName !== '') spec.dra = { deviceClassName: pool.capacity.deviceClassName }
  const claim = pool.gpu.dra?.claim
  if (claim !== undefined && claim.name !== '') {
    spec.physicalGPUs = { driver: PHYSICAL_GPU_DRIVER, ...(claim.kind === 'resourceClaimName' ? { claimName: claim.name } : {}) }
  }
  return {
    apiVersion: CELLS_API_VERSION,
    kind: 'CellNodeSet',
    metadata: {
      name: poolName,
      namespace,
      labels: sortedRecord({ [POOL_LABEL]: poolName, [POOL_UID_LABEL]: poolUID, [MANAGED_BY_LABEL]: MANAGED_BY })
    },
    spec: sortedRecord(spec)
  }
}

/** Orders a pool's per-cell entries (CellNodeSet, CellInfrastructure) by the index their name ends in, then by name. */
export function byCellIndex(a: { name: string }, b: { name: string }): number {
  const index = (name: string): number => {
    const match = /-(\d+)$/.exec(name)
    return match?.[1] === undefined ? Number.MAX_SAFE_INTEGER : Number(match[1])
  }
  return index(a.name) - index(b.name) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)
}

/**
 * A cell's DRA GPU claim as KubeSwift takes it (a SwiftGuest's `gpuResourceClaim`, a
 * KubeSwiftMachine's `gpu`): the claim or its template, the request and the tier, and the
 * hugepages only when set (KubeSwift reads an absent and an empty value alike). Keys sorted.
 */
export function gpuClaim(dra: ResolvedDra): Record<string, string> {
  const claim: Record<string, string> = { [dra.claim.kind]: dra.claim.name, requestName: dra.requestName, tier: dra.tier }
  if (dra.hugepages !== '') claim.hugepages = dra.hugepages
  return sortedRecord(claim)
}

/**
 * How many bootstrap Secrets and machines one answer may still build (model/limits.ts); the rest are
 * built by the next syncs, which the new children trigger.
 */
export interface BuildBudget {
  secrets: number
  guests: number
}

/** A fresh budget for one answer. */
export function buildBudget(): BuildBudget {
  return { secrets: MAX_BUILT_PER_ANSWER, guests: MAX_BUILT_PER_ANSWER }
}

/** What building a cell's children takes besides the plan: who it is, the spec and the join template. */
export interface CellBuild {
  id: CellIdentity
  pool: ResolvedPool
  provisioner: CellProvisioner
  /** The join template (decoded), rendered per cell into its bootstrap Secret. */
  template: string
}

/** Every observed child of a cell, answered unchanged, in role order. */
function keptChildren(observed: ObservedCell | undefined): KubeObject[] {
  if (observed === undefined) return []
  return [observed.secret, observed.seed, observed.guest].filter((o): o is KubeObject => o !== undefined).map(keepAsIs)
}

/** A cell's observed Secret and seed, answered unchanged: its machine is left out. */
function withoutGuest(observed: ObservedCell): KubeObject[] {
  return [observed.secret, observed.seed].filter((o): o is KubeObject => o !== undefined).map(keepAsIs)
}

/** The children answered for one cell, in a fixed order: Secret, seed, machine. */
export function cellChildren(
  plan: Pick<CellPlan, 'answer' | 'createGuest'>,
  observed: ObservedCell | undefined,
  build: CellBuild,
  budget: BuildBudget = buildBudget()
): KubeObject[] {
  switch (plan.answer) {
    case 'none':
      return []
    case 'hold':
      return keptChildren(observed)
    case 'remove':
      // The machine first; the seed and Secret only once the machine is no longer observed.
      if (observed?.guest === undefined) return []
      return withoutGuest(observed)
    case 'withoutGuest':
      return observed === undefined ? [] : withoutGuest(observed)
    case 'serve': {
      const { id, pool, provisioner } = build
      const out: KubeObject[] = []
      if (observed?.secret !== undefined) out.push(keepAsIs(observed.secret))
      else if (provisioner.needsSecret(pool) && budget.secrets > 0) {
        budget.secrets -= 1
        const rendered = renderBootstrap(build.template, bootstrapValues(id.poolName, id.poolUID, pool, id.index))
        // eslint-disable-next-line no-restricted-syntax -- narrows a result union of this module, not request data
        if ('text' in rendered) out.push(buildBootstrapSecret(id, rendered.text))
      }
      const seed = observed?.seed !== undefined ? keepAsIs(observed.seed) : provisioner.buildSeed(pool, id)
      if (seed !== undefined) out.push(seed)
      if (observed?.guest !== undefined) out.push(keepAsIs(observed.guest))
      else if (plan.createGuest && budget.guests > 0) {
        budget.guests -= 1
        out.push(provisioner.buildGuest(pool, id))
      }
      return out
    }
  }
}
