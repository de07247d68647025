/**
 * The pool spec with every default applied (docs/api.md) and durations in seconds: the one view of a
 * pool the hooks build children, phases and scaling from, so no other module reads a default.
 *
 * It reads any JSON and never throws; its result is meaningful only for a spec the admission rules
 * (validate.ts) find nothing wrong with.
 *
 * Choices where the spec is silent:
 * - The resolved autoscaling floor is `minReplicas`, else `spec.replicas`; the ceiling is
 *   `maxReplicas` raised to the floor, or the floor when `maxReplicas` is unset (autoscaling off).
 */
import type { Taint } from '../../api/cellnodeset.ts'
import { asRecord, isRecord, setOwn } from '../../k8s/objects.ts'
import { parseDuration } from '../../api/duration.ts'
import { resolveClusterApi, type ResolvedClusterApi } from '../rules/clusterapi-rules.ts'

/** The DRA claim of a cell: a per-cell claim from a template, or one shared claim. */
export interface ResolvedDra {
  claim: { kind: 'resourceClaimTemplateName' | 'resourceClaimName'; name: string }
  requestName: string
  tier: 'pcie'
  /** `''`: no hugepage backing. */
  hugepages: '' | '1Gi' | '2Mi'
}

/** A pool spec with every default applied and durations in seconds. */
export interface ResolvedPool {
  replicas: number
  /** The guestTemplate as written (a deep copy). */
  guestTemplate: Record<string, unknown>
  gpu: { count: number; backend: 'DRA' | 'Native'; dra?: ResolvedDra; native?: { profile: string } }
  /** `''`: the primary interface. */
  nodeIPFrom: string
  hostname: 'CellName' | 'None'
  joinSecretName: string
  joinSecretKey: string
  bootstrapReadyTimeoutSeconds: number
  workload: {
    kubeconfigSecretName: string
    key: string
    labels: Record<string, string>
    annotations: Record<string, string>
    /** In spec order; `value` omitted when empty, `timeAdded` dropped. */
    taints: Taint[]
  }
  autoscaling: {
    enabled: boolean
    /** The floor: `minReplicas`, else `spec.replicas`. */
    minReplicas: number
    /** The ceiling: `maxReplicas`, never below the floor. */
    maxReplicas: number
    stabilizationWindowSeconds: number
    scaleDown: 'Manual' | 'Auto'
    scaleDownStabilizationWindowSeconds: number
  }
  capacity: { readyTimeoutSeconds: number; expectedDevicesPerCell: number; resourceName: string }
  deletion: { policy: 'Drain' | 'Force'; drainTimeoutSeconds: number }
  updatePolicy: 'Manual' | 'RollingUpdate'
  /** Provisioner ClusterAPI: the cells are Machines of this Cluster. Absent: SwiftGuests. */
  clusterApi?: ResolvedClusterApi
}

/**
 * The spec with every default applied (docs/api.md) and durations in seconds. Call it only for a spec
 * the admission rules (validate.ts `poolProblems`) find nothing wrong with; for anything else the result is unspecified
 * (but it still does not throw).
 */
export function resolvePool(spec: unknown): ResolvedPool {
  const s = record(spec)
  const cell = record(s.cell)
  const gpu = record(cell.gpu)
  const bootstrap = record(s.bootstrap)
  const workload = record(s.workloadCluster)
  const node = record(workload.node)
  const capacity = record(s.capacity)
  const hami = record(capacity.hami)
  const autoscaling = record(s.autoscaling)
  const deletion = record(s.deletion)
  const replicas = int(s.replicas, 1)
  const count = int(gpu.count, 1)
  const backend = gpu.backend === 'Native' ? 'Native' : 'DRA'
  const resolvedGpu: ResolvedPool['gpu'] = { count, backend }
  if (backend === 'DRA') {
    const dra = record(gpu.dra)
    const template = nonEmpty(dra.resourceClaimTemplateName)
    resolvedGpu.dra = {
      claim: template
        ? { kind: 'resourceClaimTemplateName', name: String(dra.resourceClaimTemplateName) }
        : { kind: 'resourceClaimName', name: str(dra.resourceClaimName, '') },
      requestName: str(dra.requestName, 'gpu') || 'gpu',
      tier: 'pcie',
      hugepages: dra.hugepages === '1Gi' || dra.hugepages === '2Mi' ? dra.hugepages : ''
    }
  } else {
    resolvedGpu.native = { profile: str(record(record(gpu.native).gpuProfileRef).name, '') }
  }
  const minReplicas = int(autoscaling.minReplicas, replicas)
  const maxReplicas = Math.max(minReplicas, int(autoscaling.maxReplicas, minReplicas))
  return {
    replicas,
    guestTemplate: isRecord(cell.guestTemplate) ? structuredClone(cell.guestTemplate) : {},
    gpu: resolvedGpu,
    nodeIPFrom: str(cell.nodeIPFrom, ''),
    hostname: bootstrap.hostname === 'None' ? 'None' : 'CellName',
    joinSecretName: str(record(bootstrap.joinSecretRef).name, ''),
    joinSecretKey: str(bootstrap.joinSecretKey, 'user-data') || 'user-data',
    bootstrapReadyTimeoutSeconds: seconds(bootstrap.readyTimeout, 15 * 60),
    workload: {
      kubeconfigSecretName: str(record(workload.kubeconfigSecretRef).name, ''),
      key: str(workload.key, 'value') || 'value',
      labels: stringMap(node.labels),
      annotations: stringMap(node.annotations),
      taints: resolveTaints(node.taints)
    },
    autoscaling: {
      enabled: autoscaling.enabled === true,
      minReplicas,
      maxReplicas,
      stabilizationWindowSeconds: seconds(autoscaling.stabilizationWindow, 10 * 60),
      scaleDown: autoscaling.scaleDown === 'Auto' ? 'Auto' : 'Manual',
      scaleDownStabilizationWindowSeconds: seconds(autoscaling.scaleDownStabilizationWindow, 30 * 60)
    },
    capacity: {
      readyTimeoutSeconds: seconds(capacity.readyTimeout, 5 * 60),
      expectedDevicesPerCell: int(hami.expectedDevicesPerCell, count),
      resourceName: str(hami.resourceName, 'nvidia.com/gpu') || 'nvidia.com/gpu'
    },
    deletion: {
      policy: deletion.policy === 'Force' ? 'Force' : 'Drain',
      drainTimeoutSeconds: seconds(deletion.drainTimeout, 10 * 60)
    },
    updatePolicy: record(s.updatePolicy).type === 'RollingUpdate' ? 'RollingUpdate' : 'Manual',
    ...clusterApiOf(s)
  }
}

function clusterApiOf(spec: Record<string, unknown>): { clusterApi?: ResolvedClusterApi } {
  const clusterApi = resolveClusterApi(spec)
  return clusterApi === undefined ? {} : { clusterApi }
}

function resolveTaints(taints: unknown): Taint[] {
  if (!Array.isArray(taints)) return []
  const out: Taint[] = []
  for (const taint of taints) {
    if (!isRecord(taint) || typeof taint.key !== 'string') continue
    const effect = taint.effect
    if (effect !== 'NoSchedule' && effect !== 'PreferNoSchedule' && effect !== 'NoExecute') continue
    // Keys in sorted order: the taint is copied as it is into the CellNodeSet.
    const resolved: Taint = { effect, key: taint.key }
    if (typeof taint.value === 'string' && taint.value !== '') resolved.value = taint.value
    out.push(resolved)
  }
  return out
}

/** A map of strings with keys sorted; non-string values dropped. */
function stringMap(value: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  if (!isRecord(value)) return out
  for (const key of Object.keys(value).sort()) {
    const v = value[key]
    if (typeof v === 'string') setOwn(out, key, v)
  }
  return out
}

const record = asRecord

function nonEmpty(value: unknown): boolean {
  return typeof value === 'string' && value !== ''
}

function str(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback
}

function int(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isInteger(value) ? value : fallback
}

function seconds(value: unknown, fallback: number): number {
  return typeof value === 'string' ? (parseDuration(value) ?? fallback) : fallback
}
