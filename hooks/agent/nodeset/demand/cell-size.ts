/**
 * What one cell of a pool offers, read from the pool's Nodes (docs/workload.md, "demand"), and
 * whether a Pod's request fits it.
 *
 * The pool's spec does not say: a cell's CPU and memory come from its guest class (KubeSwift's
 * SwiftGuestClass, which the hooks never read) and its GPU from whatever HAMi registers. So the
 * agent reads them off the cells it can see: the Nodes the CellNodeSet lists that carry the pool's
 * uid label, are Ready and have at least one healthy HAMi device. Each figure is the smallest among
 * them: cells are built from one template, and a cell whose kubelet reports more than the others
 * (a compromised one, or one of an older template) cannot make a Pod count that the others could
 * not run. With no such Node the last size the status recorded stands; with none ever seen, every
 * Pod counts, as before (the autoscaler then has no cell shape either, and holds).
 */
import { HAMI_REGISTER_ANNOTATION, POOL_UID_LABEL, type CellSize } from '../../../api/cellnodeset.ts'
import { isRecord, ownValue } from '../../../k8s/objects.ts'
import { parseRegistration } from './hami.ts'
import { wholeQuantity } from './quantity.ts'

/** A Pod's request as the fit reads it. */
export interface PodResources {
  devices: number
  memoryMiB: number
  cores: number
  cpuMillicores: number
  memoryBytes: number
}

/** The size of one cell of the Nodes `nodes` (any JSON) that the pool lists in `listed`, or undefined. */
export function observedCellSize(nodes: readonly unknown[], poolUID: string, listed: ReadonlySet<string>): CellSize | undefined {
  let size: CellSize | undefined
  for (const node of nodes) {
    const one = nodeSize(node, poolUID, listed)
    if (one === undefined) continue
    size =
      size === undefined
        ? one
        : {
            cpuMillicores: Math.min(size.cpuMillicores, one.cpuMillicores),
            memoryBytes: Math.min(size.memoryBytes, one.memoryBytes),
            devices: Math.min(size.devices, one.devices),
            deviceMemoryMiB: Math.min(size.deviceMemoryMiB, one.deviceMemoryMiB),
            deviceCores: Math.min(size.deviceCores, one.deviceCores)
          }
  }
  return size
}

function nodeSize(node: unknown, poolUID: string, listed: ReadonlySet<string>): CellSize | undefined {
  const metadata = ownValue(node, 'metadata')
  const name = ownValue(metadata, 'name')
  if (typeof name !== 'string' || !listed.has(name) || ownValue(ownValue(metadata, 'labels'), POOL_UID_LABEL) !== poolUID) return undefined
  const status = ownValue(node, 'status')
  const conditions = ownValue(status, 'conditions')
  const ready = Array.isArray(conditions) && conditions.some((c) => isRecord(c) && c.type === 'Ready' && c.status === 'True')
  if (!ready) return undefined
  const allocatable = ownValue(status, 'allocatable')
  const cpuMillicores = wholeQuantity(ownValue(allocatable, 'cpu'), 1e-3)
  const memoryBytes = wholeQuantity(ownValue(allocatable, 'memory'))
  const register = ownValue(ownValue(metadata, 'annotations'), HAMI_REGISTER_ANNOTATION)
  const healthy = parseRegistration(typeof register === 'string' ? register : undefined).devices.filter((d) => d.healthy)
  if (cpuMillicores === undefined || memoryBytes === undefined || healthy.length === 0) return undefined
  return {
    cpuMillicores,
    memoryBytes,
    devices: healthy.length,
    deviceMemoryMiB: Math.max(0, Math.min(...healthy.map((d) => d.memoryMiB))),
    deviceCores: Math.max(0, Math.min(...healthy.map((d) => d.cores)))
  }
}

/** Whether one cell of `size` could run a Pod asking for `request`: every figure within the cell's. */
export function fitsCell(request: PodResources, size: CellSize): boolean {
  return (
    request.cpuMillicores <= size.cpuMillicores &&
    request.memoryBytes <= size.memoryBytes &&
    request.devices <= size.devices &&
    request.memoryMiB <= size.deviceMemoryMiB &&
    request.cores <= size.deviceCores
  )
}
