/**
 * Pending GPU demand that a pool could serve (docs/workload.md, "demand").
 *
 * A Pod counts when it has no Node, is `Pending` with `PodScheduled=False` reason `Unschedulable`,
 * requests one of the pool's resource names (limits, else requests; init containers ignored, as
 * the pool's devices serve the long-running containers), and could land on a pool Node: its
 * `nodeSelector` and required node affinity match the pool's Node labels and it tolerates every
 * `NoSchedule`/`NoExecute` taint the pool's Nodes carry. Two pools with the same labels and taints
 * both count such a Pod (docs/workload.md, "Limits" says so).
 */
import type { CellNodeSetSpec, DemandShape, Taint } from '../api/cellnodeset.ts'
import { isRecord } from '../k8s/objects.ts'

/** At most this many shapes are reported. */
export const MAX_SHAPES = 50

type DemandSpec = NonNullable<CellNodeSetSpec['demand']>

/** What the pending Pods add up to. */
export interface Demand {
  pendingPods: number
  shapes: DemandShape[]
}

/** Counts the Pods of `pods` (any JSON) that are demand for a pool with `spec`. */
export function readDemand(pods: readonly unknown[], spec: DemandSpec): Demand {
  const groups = new Map<string, DemandShape>()
  let pendingPods = 0
  for (const pod of pods) {
    const shape = demandOf(pod, spec)
    if (shape === undefined) continue
    pendingPods++
    const key = `${shape.devices}/${shape.memoryMiB}/${shape.cores}`
    const group = groups.get(key)
    if (group === undefined) groups.set(key, { ...shape, pods: 1 })
    else group.pods++
  }
  const shapes = [...groups.values()].sort((a, b) => b.devices - a.devices || b.memoryMiB - a.memoryMiB || b.cores - a.cores)
  return { pendingPods, shapes: shapes.slice(0, MAX_SHAPES) }
}

/** The request of one Pod if it is demand for the pool, else undefined. */
export function demandOf(pod: unknown, spec: DemandSpec): Omit<DemandShape, 'pods'> | undefined {
  if (!isRecord(pod)) return undefined
  const podSpec = isRecord(pod.spec) ? pod.spec : {}
  const status = isRecord(pod.status) ? pod.status : {}
  if (typeof podSpec.nodeName === 'string' && podSpec.nodeName !== '') return undefined
  if (status.phase !== 'Pending' || !isUnschedulable(status.conditions)) return undefined
  const request = podRequest(podSpec, spec.resources)
  if (request === undefined) return undefined
  if (!selectorMatches(podSpec.nodeSelector, spec.nodeLabels ?? {})) return undefined
  if (!affinityMatches(podSpec.affinity, spec.nodeLabels ?? {})) return undefined
  if (!toleratesAll(podSpec.tolerations, spec.taints ?? [])) return undefined
  return request
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

/** The Pod's request summed over its containers, or undefined when it requests none of `resources`. */
export function podRequest(podSpec: Record<string, unknown>, resources: readonly string[]): Omit<DemandShape, 'pods'> | undefined {
  const total = { devices: 0, memoryMiB: 0, cores: 0 }
  let requested = false
  const containers = Array.isArray(podSpec.containers) ? podSpec.containers : []
  for (const container of containers) {
    if (!isRecord(container) || !isRecord(container.resources)) continue
    const { limits, requests } = container.resources
    for (const name of resources) {
      const quantity = quantityOf(limits, name) ?? quantityOf(requests, name)
      if (quantity === undefined || quantity <= 0) continue
      requested = true
      const role = resourceRole(name)
      if (role === 'devices') total.devices += quantity
      else if (role === 'memory') total.memoryMiB += quantity
      else if (role === 'cores') total.cores += quantity
    }
  }
  if (!requested) return undefined
  // HAMi gives a container that asks for memory or cores alone one device.
  if (total.devices === 0) total.devices = 1
  return { devices: Math.ceil(total.devices), memoryMiB: Math.ceil(total.memoryMiB), cores: Math.ceil(total.cores) }
}

const SUFFIXES: Record<string, number> = {
  '': 1,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60
}

function quantityOf(list: unknown, name: string): number | undefined {
  if (!isRecord(list) || !Object.hasOwn(list, name)) return undefined
  return parseQuantity(list[name])
}

/** A Kubernetes quantity as a number; undefined when it does not read as one. */
export function parseQuantity(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined
  if (typeof value !== 'string') return undefined
  const match = /^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([a-zA-Z]{0,2})$/.exec(value.trim())
  if (match === null) return undefined
  const suffix = match[2] ?? ''
  if (!Object.hasOwn(SUFFIXES, suffix)) return undefined
  const result = Number(match[1]) * (SUFFIXES[suffix] as number)
  return Number.isFinite(result) ? result : undefined
}

function labelValue(labels: Readonly<Record<string, string>>, key: string): string | undefined {
  return Object.hasOwn(labels, key) ? labels[key] : undefined
}

function selectorMatches(selector: unknown, labels: Readonly<Record<string, string>>): boolean {
  if (selector === undefined || selector === null) return true
  if (!isRecord(selector)) return false
  return Object.entries(selector).every(([key, value]) => labelValue(labels, key) === value)
}

/** Required node affinity: the terms are ORed, the expressions of a term ANDed (Kubernetes' rule). */
function affinityMatches(affinity: unknown, labels: Readonly<Record<string, string>>): boolean {
  if (!isRecord(affinity) || !isRecord(affinity.nodeAffinity)) return true
  const required = affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
  if (required === undefined || required === null) return true
  if (!isRecord(required) || !Array.isArray(required.nodeSelectorTerms)) return false
  return required.nodeSelectorTerms.some((term) => termMatches(term, labels))
}

function termMatches(term: unknown, labels: Readonly<Record<string, string>>): boolean {
  if (!isRecord(term)) return false
  const expressions = Array.isArray(term.matchExpressions) ? term.matchExpressions : []
  // A term on fields names particular Nodes (metadata.name); a Node yet to be built has no name to match.
  if (Array.isArray(term.matchFields) && term.matchFields.length > 0) return false
  if (expressions.length === 0) return false
  return expressions.every((e) => expressionMatches(e, labels))
}

function expressionMatches(expression: unknown, labels: Readonly<Record<string, string>>): boolean {
  if (!isRecord(expression) || typeof expression.key !== 'string') return false
  const value = labelValue(labels, expression.key)
  const values = Array.isArray(expression.values) ? expression.values.filter((v): v is string => typeof v === 'string') : []
  switch (expression.operator) {
    case 'In':
      return value !== undefined && values.includes(value)
    case 'NotIn':
      return value === undefined || !values.includes(value)
    case 'Exists':
      return value !== undefined
    case 'DoesNotExist':
      return value === undefined
    case 'Gt':
    case 'Lt': {
      if (value === undefined || values.length !== 1 || !/^-?\d+$/.test(value) || !/^-?\d+$/.test(values[0] as string)) return false
      return expression.operator === 'Gt' ? Number(value) > Number(values[0]) : Number(value) < Number(values[0])
    }
    default:
      return false
  }
}

/** Every NoSchedule and NoExecute taint of the pool's Nodes is tolerated. */
function toleratesAll(tolerations: unknown, taints: readonly Taint[]): boolean {
  const list = Array.isArray(tolerations) ? tolerations.filter(isRecord) : []
  return taints
    .filter((taint) => taint.effect === 'NoSchedule' || taint.effect === 'NoExecute')
    .every((taint) => list.some((toleration) => tolerates(toleration, taint)))
}

function tolerates(toleration: Record<string, unknown>, taint: Taint): boolean {
  const effect = toleration.effect
  if (effect !== undefined && effect !== '' && effect !== taint.effect) return false
  const key = typeof toleration.key === 'string' ? toleration.key : ''
  if (toleration.operator === 'Exists') return key === '' || key === taint.key
  if (toleration.operator !== undefined && toleration.operator !== 'Equal') return false
  const value = typeof toleration.value === 'string' ? toleration.value : ''
  return key === taint.key && value === (taint.value ?? '')
}
