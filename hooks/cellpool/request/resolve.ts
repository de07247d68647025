/**
 * The pool spec with every default applied (docs/api.md) and durations in seconds: the one view of a
 * pool the hooks build children, phases and scaling from, so no other module reads a default. The
 * defaults are the spec schema's own (`default` in hooks/api/gpucellpool.ts, which the API server
 * fills in), read from it; a default the schema does not state (the DRA tier, the hugepages, the
 * expected devices) is written here.
 *
 * It reads any JSON and never throws; its result is meaningful only for a spec the admission rules
 * (rules/validate.ts) find nothing wrong with.
 *
 * Choices where the spec is silent:
 * - The resolved autoscaling floor is `minReplicas`, else `spec.replicas`; the ceiling is
 *   `maxReplicas` raised to the floor, or the floor when `maxReplicas` is unset (autoscaling off).
 */
import type { Taint } from '../../api/cellnodeset.ts'
import { GPUCellPoolSpecSchema } from '../../api/gpucellpool.ts'
import { asRecord, isRecord, ownValue, setOwn } from '../../k8s/objects.ts'
import { parseDuration } from '../../api/duration.ts'
import type { ResolvedClusterApi, ResolvedPool } from '../model/resolved-pool.ts'

/**
 * The spec schema's `default` at `path` (the one the CRD declares and the API server fills in),
 * checked to be of the type resolvePool uses it as. A schema without it is a build error, found
 * when this module loads.
 */
function schemaDefault<T>(path: readonly string[], is: (value: unknown) => value is T): T {
  let schema: unknown = GPUCellPoolSpecSchema
  for (const key of path) schema = ownValue(asRecord(schema).properties, key)
  const value = asRecord(schema).default
  if (!is(value)) throw new Error(`GPUCellPoolSpecSchema has no default of the expected type at spec.${path.join('.')}`)
  return value
}

const isText = (value: unknown): value is string => typeof value === 'string'
const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value)
const isBoolean = (value: unknown): value is boolean => typeof value === 'boolean'
const isOneOf =
  <const T extends string>(values: readonly T[]) =>
  (value: unknown): value is T =>
    values.some((v) => v === value)
/** A duration default, in seconds. */
const secondsDefault = (path: readonly string[]): number => {
  const seconds = parseDuration(schemaDefault(path, isText))
  if (seconds === undefined) throw new Error(`GPUCellPoolSpecSchema's default at spec.${path.join('.')} is not a duration`)
  return seconds
}

/** The defaults resolvePool applies, each read from the spec schema (the CRD's own `default`s). */
const DEFAULT = {
  replicas: schemaDefault(['replicas'], isInteger),
  gpuCount: schemaDefault(['cell', 'gpu', 'count'], isInteger),
  backend: schemaDefault(['cell', 'gpu', 'backend'], isOneOf(['DRA', 'Native'])),
  requestName: schemaDefault(['cell', 'gpu', 'dra', 'requestName'], isText),
  hostname: schemaDefault(['bootstrap', 'hostname'], isOneOf(['CellName', 'None'])),
  joinSecretKey: schemaDefault(['bootstrap', 'joinSecretKey'], isText),
  bootstrapReadyTimeoutSeconds: secondsDefault(['bootstrap', 'readyTimeout']),
  kubeconfigKey: schemaDefault(['workloadCluster', 'key'], isText),
  autoscalingEnabled: schemaDefault(['autoscaling', 'enabled'], isBoolean),
  stabilizationWindowSeconds: secondsDefault(['autoscaling', 'stabilizationWindow']),
  scaleDown: schemaDefault(['autoscaling', 'scaleDown'], isOneOf(['Manual', 'Auto'])),
  scaleDownStabilizationWindowSeconds: secondsDefault(['autoscaling', 'scaleDownStabilizationWindow']),
  capacityReadyTimeoutSeconds: secondsDefault(['capacity', 'readyTimeout']),
  resourceName: schemaDefault(['capacity', 'hami', 'resourceName'], isText),
  deletionPolicy: schemaDefault(['deletion', 'policy'], isOneOf(['Drain', 'Force'])),
  drainTimeoutSeconds: secondsDefault(['deletion', 'drainTimeout']),
  updatePolicy: schemaDefault(['updatePolicy', 'type'], isOneOf(['Manual', 'RollingUpdate']))
} as const

/**
 * The spec with every default applied (docs/api.md) and durations in seconds. Call it only for a spec
 * the admission rules (rules/validate.ts `poolProblems`) find nothing wrong with; for anything else the result is unspecified
 * (but it still does not throw).
 */
export function resolvePool(spec: unknown): ResolvedPool {
  const s = asRecord(spec)
  const cell = asRecord(s.cell)
  const gpu = asRecord(cell.gpu)
  const bootstrap = asRecord(s.bootstrap)
  const workload = asRecord(s.workloadCluster)
  const node = asRecord(workload.node)
  const capacity = asRecord(s.capacity)
  const hami = asRecord(capacity.hami)
  const autoscaling = asRecord(s.autoscaling)
  const deletion = asRecord(s.deletion)
  const replicas = integerOr(s.replicas, DEFAULT.replicas)
  const count = integerOr(gpu.count, DEFAULT.gpuCount)
  const backend = oneOf(gpu.backend, ['DRA', 'Native'], DEFAULT.backend)
  const resolvedGpu: ResolvedPool['gpu'] = { count, backend }
  if (backend === 'DRA') {
    const dra = asRecord(gpu.dra)
    const template = nonEmpty(dra.resourceClaimTemplateName)
    resolvedGpu.dra = {
      claim: template
        ? { kind: 'resourceClaimTemplateName', name: String(dra.resourceClaimTemplateName) }
        : { kind: 'resourceClaimName', name: textOr(dra.resourceClaimName, '') },
      requestName: textOr(dra.requestName, DEFAULT.requestName) || DEFAULT.requestName,
      tier: 'pcie',
      hugepages: dra.hugepages === '1Gi' || dra.hugepages === '2Mi' ? dra.hugepages : ''
    }
  } else {
    resolvedGpu.native = { profile: textOr(asRecord(asRecord(gpu.native).gpuProfileRef).name, '') }
  }
  const minReplicas = integerOr(autoscaling.minReplicas, replicas)
  const maxReplicas = Math.max(minReplicas, integerOr(autoscaling.maxReplicas, minReplicas))
  return {
    replicas,
    guestTemplate: isRecord(cell.guestTemplate) ? structuredClone(cell.guestTemplate) : {},
    gpu: resolvedGpu,
    nodeIPFrom: textOr(cell.nodeIPFrom, ''),
    hostname: oneOf(bootstrap.hostname, ['CellName', 'None'], DEFAULT.hostname),
    joinSecretName: textOr(asRecord(bootstrap.joinSecretRef).name, ''),
    joinSecretKey: textOr(bootstrap.joinSecretKey, DEFAULT.joinSecretKey) || DEFAULT.joinSecretKey,
    bootstrapReadyTimeoutSeconds: secondsOr(bootstrap.readyTimeout, DEFAULT.bootstrapReadyTimeoutSeconds),
    workload: {
      kubeconfigSecretName: textOr(asRecord(workload.kubeconfigSecretRef).name, ''),
      key: textOr(workload.key, DEFAULT.kubeconfigKey) || DEFAULT.kubeconfigKey,
      labels: stringMap(node.labels),
      annotations: stringMap(node.annotations),
      taints: resolveTaints(node.taints)
    },
    autoscaling: {
      enabled: typeof autoscaling.enabled === 'boolean' ? autoscaling.enabled : DEFAULT.autoscalingEnabled,
      minReplicas,
      maxReplicas,
      stabilizationWindowSeconds: secondsOr(autoscaling.stabilizationWindow, DEFAULT.stabilizationWindowSeconds),
      scaleDown: oneOf(autoscaling.scaleDown, ['Manual', 'Auto'], DEFAULT.scaleDown),
      scaleDownStabilizationWindowSeconds: secondsOr(autoscaling.scaleDownStabilizationWindow, DEFAULT.scaleDownStabilizationWindowSeconds)
    },
    capacity: {
      readyTimeoutSeconds: secondsOr(capacity.readyTimeout, DEFAULT.capacityReadyTimeoutSeconds),
      expectedDevicesPerCell: integerOr(hami.expectedDevicesPerCell, count),
      resourceName: textOr(hami.resourceName, DEFAULT.resourceName) || DEFAULT.resourceName,
      mode: hami.mode === 'DRA' ? 'DRA' : 'DevicePlugin',
      deviceClassName: hami.mode === 'DRA' ? textOr(hami.deviceClassName, '') : ''
    },
    deletion: {
      policy: oneOf(deletion.policy, ['Drain', 'Force'], DEFAULT.deletionPolicy),
      drainTimeoutSeconds: secondsOr(deletion.drainTimeout, DEFAULT.drainTimeoutSeconds)
    },
    updatePolicy: oneOf(asRecord(s.updatePolicy).type, ['Manual', 'RollingUpdate'], DEFAULT.updatePolicy),
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

function nonEmpty(value: unknown): boolean {
  return typeof value === 'string' && value !== ''
}

function textOr(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback
}

function integerOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isInteger(value) ? value : fallback
}

function secondsOr(value: unknown, fallback: number): number {
  return typeof value === 'string' ? (parseDuration(value) ?? fallback) : fallback
}

/** `value` when it is one of `values`, else `fallback`. */
function oneOf<const T extends string>(value: unknown, values: readonly T[], fallback: T): T {
  return values.find((v) => v === value) ?? fallback
}

/** The suffix of a bootstrap config template's kind; the config it makes is of the kind without it. */
export const TEMPLATE_SUFFIX = 'Template'

/** Whether the pool's cells are Cluster API Machines. */
export function usesClusterApi(spec: unknown): boolean {
  return asRecord(asRecord(spec).cell).provisioner === 'ClusterAPI'
}

/** The Cluster API settings of a spec that passed the Cluster API rules (rules/clusterapi-rules.ts); undefined for a SwiftGuest pool. */
export function resolveClusterApi(spec: unknown): ResolvedClusterApi | undefined {
  if (!usesClusterApi(spec)) return undefined
  const capi = asRecord(asRecord(asRecord(spec).cell).clusterAPI)
  const ref = asRecord(capi.bootstrapConfigTemplateRef)
  return {
    clusterName: textOr(capi.clusterName, ''),
    version: textOr(capi.version, ''),
    ...(isRecord(capi.bootstrapConfigTemplateRef)
      ? { bootstrapTemplate: { apiGroup: textOr(ref.apiGroup, ''), kind: textOr(ref.kind, ''), name: textOr(ref.name, '') } }
      : {})
  }
}

/** The kind of the config a template of `templateKind` makes (`KubeadmConfigTemplate` → `KubeadmConfig`). */
export function configKindOf(templateKind: string): string {
  return templateKind.endsWith(TEMPLATE_SUFFIX) ? templateKind.slice(0, -TEMPLATE_SUFFIX.length) : templateKind
}
