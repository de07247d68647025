/**
 * Pending GPU demand that a pool could serve (docs/workload.md, "demand").
 *
 * A Pod counts when it has no Node, is `Pending` with `PodScheduled=False` reason `Unschedulable`,
 * requests one of the pool's resource names (limits, else requests; init containers ignored, as
 * the pool's devices serve the long-running containers), and could land on a pool Node: its
 * `nodeSelector` and required node affinity match the pool's Node labels and it tolerates every
 * `NoSchedule`/`NoExecute` taint the pool's Nodes carry. Two pools with the same labels and taints
 * both count such a Pod (docs/workload.md, "Limits" says so).
 *
 * Any tenant of the workload cluster writes these Pods, so their figures are read to the bound the
 * CellNodeSet schema states (quantity.ts): a Pod with a quantity that does not read, is negative
 * or is past the bound is not demand but counted in `unreadablePods`, and the sums saturate, so
 * no Pod can make the status unwritable.
 */
import type { CellNodeSetSpec, CellNodeSetStatus, CellSize, DemandShape } from '../../../api/cellnodeset.ts'
import { asRecord, isRecord } from '../../../k8s/objects.ts'
import { fitsCell, type PodResources } from './cell-size.ts'
import { landsOn } from './pod-placement.ts'
import { saturatingAdd, wholeQuantity } from './quantity.ts'

/** At most this many shapes are reported. */
export const MAX_SHAPES = 50

type DemandSpec = NonNullable<CellNodeSetSpec['demand']>

/** What the pending Pods add up to. */
export interface Demand {
  pendingPods: number
  shapes: DemandShape[]
  /** Pods that would count but whose request the agent cannot read (docs/workload.md, "Limits"). */
  unreadablePods: number
  /** Pods that would count but ask for more than one cell offers. */
  unrunnablePods: number
}

/** A Pod's request that the agent cannot read: a quantity that does not parse, is negative or is past the bound. */
export const UNREADABLE = 'Unreadable'

/** A Pod's GPU request read from its ResourceClaims (dra.ts), undefined when it has none on the pool's class. */
export type ClaimShape = (pod: unknown) => Omit<DemandShape, 'pods'> | typeof UNREADABLE | undefined

/**
 * Counts the Pods of `pods` (any JSON) that are demand for a pool with `spec` whose one cell
 * offers `cell` (cell-size.ts); without `cell`, every Pod that fits the pool's Nodes counts.
 */
export function readDemand(pods: readonly unknown[], spec: DemandSpec, cell?: CellSize, claimShape?: ClaimShape): Demand {
  const groups = new Map<string, DemandShape>()
  const demand: Demand = { pendingPods: 0, shapes: [], unreadablePods: 0, unrunnablePods: 0 }
  for (const pod of pods) {
    const request = demandOf(pod, spec, claimShape)
    if (request === undefined) continue
    if (request === UNREADABLE) demand.unreadablePods++
    else if (cell !== undefined && !fitsCell(request, cell)) demand.unrunnablePods++
    else {
      demand.pendingPods++
      const shape = { devices: request.devices, memoryMiB: request.memoryMiB, cores: request.cores }
      const key = `${shape.devices}/${shape.memoryMiB}/${shape.cores}`
      const group = groups.get(key)
      if (group === undefined) groups.set(key, { ...shape, pods: 1 })
      else group.pods++
    }
  }
  const shapes = [...groups.values()].sort((a, b) => b.devices - a.devices || b.memoryMiB - a.memoryMiB || b.cores - a.cores)
  return { ...demand, shapes: shapes.slice(0, MAX_SHAPES) }
}

/** `status.demand` of a pass: what `unbound` adds up to, when it was read, for a cell of `cell`. */
export function demandStatus(
  unbound: { read: boolean; items: readonly unknown[] },
  spec: DemandSpec,
  cell?: CellSize,
  claimShape?: ClaimShape
): NonNullable<CellNodeSetStatus['demand']> {
  if (!unbound.read) return { read: false, pendingPods: 0, shapes: [], ...(cell !== undefined ? { cell } : {}) }
  const { pendingPods, shapes, unreadablePods, unrunnablePods } = readDemand(unbound.items, spec, cell, claimShape)
  return {
    read: true,
    pendingPods,
    shapes,
    ...(unreadablePods > 0 ? { unreadablePods } : {}),
    ...(unrunnablePods > 0 ? { unrunnablePods } : {}),
    ...(cell !== undefined ? { cell } : {})
  }
}

/**
 * The request of one Pod if it is demand for the pool (its GPU shape, CPU and memory),
 * {@link UNREADABLE} if it would be but does not read, else undefined.
 */
export function demandOf(pod: unknown, spec: DemandSpec, claimShape?: ClaimShape): PodResources | typeof UNREADABLE | undefined {
  if (!isRecord(pod)) return undefined
  const podSpec = isRecord(pod.spec) ? pod.spec : {}
  const status = isRecord(pod.status) ? pod.status : {}
  if (typeof podSpec.nodeName === 'string' && podSpec.nodeName !== '') return undefined
  if (status.phase !== 'Pending' || !isUnschedulable(status.conditions)) return undefined
  // HAMi's DRA mode: a Pod's unallocated claims on the pool's class are its GPU request (dra.ts).
  const gpu = claimShape?.(pod) ?? podRequest(podSpec, spec.resources)
  if (gpu === undefined) return undefined
  if (!landsOn(podSpec, spec.nodeLabels ?? {}, spec.taints ?? [])) return undefined
  const compute = podCompute(podSpec)
  return gpu === UNREADABLE || compute === UNREADABLE ? UNREADABLE : { ...gpu, ...compute }
}

function isUnschedulable(conditions: unknown): boolean {
  if (!Array.isArray(conditions)) return false
  return conditions.some((c) => isRecord(c) && c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable')
}

/**
 * What a resource name contributes to a shape. HAMi's names end in `gpumem` (MiB), `gpucores`
 * (percent) and `gpumem-percentage`; any other name counts devices.
 */
function resourceRole(name: string): 'memory' | 'cores' | 'percentage' | 'devices' {
  if (name.endsWith('mem-percentage')) return 'percentage'
  if (name.endsWith('mem')) return 'memory'
  if (name.endsWith('cores') || name.endsWith('core')) return 'cores'
  return 'devices'
}

/**
 * The Pod's request summed over its containers (each figure held at the schema's bound), undefined
 * when it requests none of `resources`, {@link UNREADABLE} when one of its quantities does not read.
 */
export function podRequest(
  podSpec: Record<string, unknown>,
  resources: readonly string[]
): Omit<DemandShape, 'pods'> | typeof UNREADABLE | undefined {
  const total = { devices: 0, memoryMiB: 0, cores: 0 }
  let requested = false
  const containers = Array.isArray(podSpec.containers) ? podSpec.containers : []
  for (const container of containers) {
    if (!isRecord(container) || !isRecord(container.resources)) continue
    const { limits, requests } = container.resources
    for (const name of resources) {
      // Limits win where they name the resource, as HAMi reads them; what they say must then read.
      const list = Object.hasOwn(asRecord(limits), name) ? limits : requests
      if (!Object.hasOwn(asRecord(list), name)) continue
      const quantity = wholeQuantity(asRecord(list)[name])
      if (quantity === undefined) return UNREADABLE
      if (quantity === 0) continue
      requested = true
      const role = resourceRole(name)
      if (role === 'devices') total.devices = saturatingAdd(total.devices, quantity)
      else if (role === 'memory') total.memoryMiB = saturatingAdd(total.memoryMiB, quantity)
      else if (role === 'cores') total.cores = saturatingAdd(total.cores, quantity)
    }
  }
  if (!requested) return undefined
  // HAMi gives a container that asks for memory or cores alone one device.
  if (total.devices === 0) total.devices = 1
  return total
}

/**
 * The CPU (millicores) and memory (bytes) a Pod needs on a Node, by the scheduler's rule: its
 * containers' requests (else limits, which the API server copies into an absent request) summed,
 * with sidecars (init containers of `restartPolicy: Always`), or the largest other init
 * container's if more, plus the Pod's overhead. {@link UNREADABLE} when a quantity does not read.
 */
export function podCompute(podSpec: Record<string, unknown>): { cpuMillicores: number; memoryBytes: number } | typeof UNREADABLE {
  const running = { cpuMillicores: 0, memoryBytes: 0 }
  const init = { cpuMillicores: 0, memoryBytes: 0 }
  const list = (value: unknown): unknown[] => (Array.isArray(value) ? value : [])
  const sidecars = list(podSpec.initContainers).filter((c) => isRecord(c) && c.restartPolicy === 'Always')
  for (const container of [...list(podSpec.containers), ...sidecars]) {
    const need = containerNeed(container)
    if (need === UNREADABLE) return UNREADABLE
    running.cpuMillicores = saturatingAdd(running.cpuMillicores, need.cpuMillicores)
    running.memoryBytes = saturatingAdd(running.memoryBytes, need.memoryBytes)
  }
  for (const container of list(podSpec.initContainers).filter((c) => !sidecars.includes(c))) {
    const need = containerNeed(container)
    if (need === UNREADABLE) return UNREADABLE
    init.cpuMillicores = Math.max(init.cpuMillicores, need.cpuMillicores)
    init.memoryBytes = Math.max(init.memoryBytes, need.memoryBytes)
  }
  const overhead = asRecord(podSpec.overhead)
  const cpu = Object.hasOwn(overhead, 'cpu') ? wholeQuantity(overhead.cpu, 1e-3) : 0
  const memory = Object.hasOwn(overhead, 'memory') ? wholeQuantity(overhead.memory) : 0
  if (cpu === undefined || memory === undefined) return UNREADABLE
  return {
    cpuMillicores: saturatingAdd(Math.max(running.cpuMillicores, init.cpuMillicores), cpu),
    memoryBytes: saturatingAdd(Math.max(running.memoryBytes, init.memoryBytes), memory)
  }
}

/** One container's CPU and memory request (else limit); an absent one is 0. */
function containerNeed(container: unknown): { cpuMillicores: number; memoryBytes: number } | typeof UNREADABLE {
  const resources = asRecord(asRecord(container).resources)
  const read = (name: string, unit: number): number | undefined => {
    const requests = asRecord(resources.requests)
    const limits = asRecord(resources.limits)
    if (Object.hasOwn(requests, name)) return wholeQuantity(requests[name], unit)
    if (Object.hasOwn(limits, name)) return wholeQuantity(limits[name], unit)
    return 0
  }
  const cpuMillicores = read('cpu', 1e-3)
  const memoryBytes = read('memory', 1)
  return cpuMillicores === undefined || memoryBytes === undefined ? UNREADABLE : { cpuMillicores, memoryBytes }
}
