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
import type { ResolvedClusterApi, ResolvedPool } from '../model/resolved-pool.ts'

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

/** The suffix of a bootstrap config template's kind; the config it makes is of the kind without it. */
export const TEMPLATE_SUFFIX = 'Template'

/** Whether the pool's cells are Cluster API Machines. */
export function usesClusterApi(spec: unknown): boolean {
  return record(record(spec).cell).provisioner === 'ClusterAPI'
}

/** The Cluster API settings of a spec that passed the Cluster API rules (rules/clusterapi-rules.ts); undefined for a SwiftGuest pool. */
export function resolveClusterApi(spec: unknown): ResolvedClusterApi | undefined {
  if (!usesClusterApi(spec)) return undefined
  const capi = record(record(record(spec).cell).clusterAPI)
  const ref = record(capi.bootstrapConfigTemplateRef)
  const text = (value: unknown): string => (typeof value === 'string' ? value : '')
  return {
    clusterName: text(capi.clusterName),
    version: text(capi.version),
    ...(isRecord(capi.bootstrapConfigTemplateRef)
      ? { bootstrapTemplate: { apiGroup: text(ref.apiGroup), kind: text(ref.kind), name: text(ref.name) } }
      : {})
  }
}

/** The kind of the config a template of `templateKind` makes (`KubeadmConfigTemplate` → `KubeadmConfig`). */
export function configKindOf(templateKind: string): string {
  return templateKind.endsWith(TEMPLATE_SUFFIX) ? templateKind.slice(0, -TEMPLATE_SUFFIX.length) : templateKind
}
