/**
 * Spec checks of a GPUCellPool (cellpool.md, "Admission"), and the spec with every default
 * applied, as the hooks use it.
 *
 * The admission webhook and the sync hook run the same checks: an object can reach the sync hook
 * without admission (webhook off, stored by an older release), and the guestTemplate denylist is
 * a security control, since a cell's launcher pod is privileged. The spec is read as any JSON:
 * every field is checked for its type before it is used, and nothing here throws.
 *
 * Choices where the spec is silent:
 * - A guestTemplate field counts as set when its value is neither absent nor null.
 * - `cells.kubeswift.io/` keys are refused in node annotations as well as labels (the workload
 *   agent keeps its own record under that prefix).
 * - Two taints with the same key and effect are refused, as the API server refuses them on a Node.
 * - The resolved autoscaling floor is `minReplicas`, else `spec.replicas`; the ceiling is
 *   `maxReplicas` raised to the floor, or the floor when `maxReplicas` is unset (autoscaling off).
 * - The guestTemplate is checked against the fields a cell may set ({@link CELL_FIELDS}), not
 *   only against the denylist of cellpool.md: a key outside both is refused too, and a denied
 *   key in another case (`KernelRef`) is refused as the field it spells.
 * - Node labels and taints are refused where the workload agent would set, with its own rights,
 *   what NodeRestriction keeps from a kubelet (hooks/k8s/node-keys.ts). cellpool.md allows any
 *   valid label after join; this is narrower on purpose.
 * - Sizes are bounded (limits.ts); the CellNodeSet estimate is made only for a spec with no other
 *   problem, since it reads the resolved spec.
 */
import { Value } from '@sinclair/typebox/value'
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import type { Taint } from '../api/cellnodeset.ts'
import { DURATION_PATTERN, GPUCellPoolSpecSchema, POOL_NAME_MAX } from '../api/gpucellpool.ts'
import { canonicalJson } from '../k8s/hash.ts'
import { asRecord, isRecord } from '../k8s/objects.ts'
import { kubeletMaySetLabel, restrictedLabelReason, restrictedTaintReason } from '../k8s/node-keys.ts'
import { commonSchemaMessage, invalidValueMessage } from '../k8s/schema-messages.ts'
import { clusterApiProblems, resolveClusterApi, usesBootstrapTemplate, type ResolvedClusterApi } from './clusterapi-rules.ts'
import { desiredNodeSetProblems, guestTemplateSizeProblems, nodeMetadataProblems } from './limits.ts'

/** One problem of a pool spec: the field at fault and a sentence naming the rule. */
export interface PoolProblem {
  field: string
  message: string
}

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

/** guestTemplate fields the controller writes (cellpool.md item 3). */
export const CONTROLLER_FIELDS = ['seedProfileRef', 'gpuProfileRef', 'gpuResourceClaim', 'nodeName', 'migration', 'runPolicy'] as const

/** guestTemplate fields a GPU cell cannot use, with the reason. */
const UNSUPPORTED_FIELDS: ReadonlyArray<readonly [string, string]> = [
  ['kernelRef', 'a GPU cell boots from a disk (imageRef) only'],
  ['kernelCmdline', 'it belongs to a kernel boot (kernelRef), and a GPU cell boots from a disk (imageRef) only'],
  ['cloneFromSnapshot', 'VFIO device state cannot be restored from a snapshot'],
  ['vhostUserDevices', 'KubeSwift refuses vhost-user devices on the GPU path'],
  ['filesystems', 'KubeSwift refuses virtiofs filesystems on the GPU path']
]

/**
 * The SwiftGuestSpec fields a cell may set (KubeSwift `api/swift/v1alpha1` SwiftGuestSpec): the
 * disk and class it boots from, its data disks, its network interfaces and pod-network binding,
 * the storage of the disks the controller clones, the OS family (linux), the launcher's scheduler
 * profile, topology spread (ignored by the GPU launcher) and the guest agent's vsock device. Each
 * stays within the VM and its launcher pod in the pool's namespace. Every other key is refused:
 * the controller's own fields and those the GPU path does not support get their reason, and a
 * key KubeSwift does not know (or a known one spelt in another case) is named as such, since the
 * API server would drop it without a word.
 */
export const CELL_FIELDS = [
  'imageRef',
  'guestClassRef',
  'dataDiskRef',
  'dataDiskRefs',
  'interfaces',
  'network',
  'storage',
  'osType',
  'schedulerName',
  'topologySpreadConstraints',
  'guestAgent'
] as const

/** The label and annotation prefix the controller keeps for itself. */
const CONTROLLER_PREFIX = 'cells.kubeswift.io/'

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/
const DURATION = new RegExp(DURATION_PATTERN)

export { kubeletMaySetLabel }

/**
 * Problems of the pool name: cells are named `<pool>-<index>`, and a cell name is a VM hostname
 * and a Node name, so the pool name must be a DNS label that leaves room for `-` and five digits
 * within 63 characters.
 */
export function poolNameProblems(name: string): PoolProblem[] {
  if (name.length <= POOL_NAME_MAX && DNS1123_LABEL.test(name)) return []
  return [
    {
      field: 'metadata.name',
      message:
        `metadata.name ${clip(name)} must be a DNS label (lower-case letters, digits and -, starting and ending with a letter or digit) ` +
        `of at most ${POOL_NAME_MAX} characters, so that cell names <pool>-<index> stay 63-character Node names`
    }
  ]
}

/** Every admission rule of cellpool.md against `spec` (any JSON) and the pool `name`, all problems at once. */
export function poolProblems(name: string, spec: unknown): PoolProblem[] {
  const named = poolNameProblems(name)
  if (!isRecord(spec)) return [...named, { field: 'spec', message: `spec must be an object, not ${describe(spec)}` }]
  const problems = [...named, ...merge(schemaProblems(spec), ruleProblems(spec))]
  // The CellNodeSet estimate reads the resolved spec, which is meaningful only for a valid one.
  return problems.length > 0 ? problems : desiredNodeSetProblems(name, resolvePool(spec))
}

/**
 * Schema and rule problems together, each said once: a rule's own sentence replaces the schema's
 * at the same field (`tier`, `count`, a duration), and a rule about a field inside one the schema
 * already reports missing or mistyped is left out.
 */
function merge(schema: PoolProblem[], rules: PoolProblem[]): PoolProblem[] {
  const ruleFields = new Set(rules.map((p) => p.field))
  const inside = (field: string, parent: string): boolean => field.startsWith(`${parent}.`) || field.startsWith(`${parent}[`)
  return dedupe([...schema.filter((p) => !ruleFields.has(p.field)), ...rules.filter((p) => !schema.some((s) => inside(p.field, s.field)))])
}

/** The rules the schema cannot state (or states without saying why). */
function ruleProblems(spec: Record<string, unknown>): PoolProblem[] {
  const problems: PoolProblem[] = []
  const cell = record(spec.cell)
  const gpu = record(cell.gpu)
  problems.push(...guestTemplateProblems(cell.guestTemplate))
  if (isRecord(cell.gpu)) problems.push(...gpuProblems(spec, gpu))
  problems.push(...clusterApiProblems(spec, CELL_FIELDS))
  if (record(record(spec.capacity).hami).mode === 'DRA') {
    problems.push({
      field: 'spec.capacity.hami.mode',
      message: 'spec.capacity.hami.mode DRA is not in this version: only DevicePlugin (HAMi Node registration annotations) is read'
    })
  }
  problems.push(...nodeIPFromProblems(cell.nodeIPFrom, cell.guestTemplate))
  const bootstrap = record(spec.bootstrap)
  const workload = record(spec.workloadCluster)
  const secrets = [
    {
      ref: 'spec.bootstrap.joinSecretRef.name',
      name: record(bootstrap.joinSecretRef).name,
      why: 'a cell without a join template never joins',
      keyField: 'spec.bootstrap.joinSecretKey',
      key: bootstrap.joinSecretKey
    },
    {
      ref: 'spec.workloadCluster.kubeconfigSecretRef.name',
      name: record(workload.kubeconfigSecretRef).name,
      why: 'the workload agent reads the workload cluster through it',
      keyField: 'spec.workloadCluster.key',
      key: workload.key
    }
  ]
  // A Cluster API pool with a bootstrap config template has no join template (clusterapi-rules.ts).
  for (const secret of usesBootstrapTemplate(spec) ? secrets.slice(1) : secrets)
    problems.push(...secretRefProblems(secret.ref, secret.name, secret.why), ...secretKeyProblems(secret.keyField, secret.key))
  const node = record(workload.node)
  problems.push(...labelProblems(node.labels), ...annotationProblems(node.annotations), ...taintProblems(node.taints))
  problems.push(...nodeMetadataProblems(node.labels, node.annotations), ...guestTemplateSizeProblems(cell.guestTemplate))
  problems.push(...autoscalingProblems(record(spec.autoscaling)))
  problems.push(
    ...durationProblems('spec.bootstrap.readyTimeout', bootstrap.readyTimeout, true),
    ...durationProblems('spec.capacity.readyTimeout', record(spec.capacity).readyTimeout, true),
    ...durationProblems('spec.deletion.drainTimeout', record(spec.deletion).drainTimeout, false)
  )
  return problems
}

/** Types, enums, ranges and required fields, from the TypeBox schema the CRD is rendered from. */
function schemaProblems(spec: Record<string, unknown>): PoolProblem[] {
  const problems: PoolProblem[] = []
  const seen = new Set<string>()
  for (const error of Value.Errors(GPUCellPoolSpecSchema, spec)) {
    // TypeBox reports a missing property twice (required, then its type): keep the first.
    if (seen.has(error.path)) continue
    seen.add(error.path)
    problems.push({ field: fieldOf(error.path), message: schemaMessage(error) })
  }
  return problems
}

/** Every SwiftGuestSpec field this module knows, by its lower-case spelling. */
const KNOWN_FIELDS = new Map<string, string>(
  [...CONTROLLER_FIELDS, ...UNSUPPORTED_FIELDS.map(([field]) => field), ...CELL_FIELDS].map((field) => [field.toLowerCase(), field])
)
const CELL_FIELD_SET = new Set<string>(CELL_FIELDS)

/**
 * The guestTemplate's fields against {@link CELL_FIELDS}. Names are compared as written and, to
 * say what a misspelt one is, without case: `KernelRef` is refused as kernelRef is.
 */
function guestTemplateProblems(template: unknown): PoolProblem[] {
  const base = 'spec.cell.guestTemplate'
  if (!isRecord(template)) return template === undefined ? [] : [{ field: base, message: `${base} must be an object (a SwiftGuestSpec)` }]
  const problems: PoolProblem[] = []
  for (const key of Object.keys(template)) {
    if (CELL_FIELD_SET.has(key) || !isSet(template, key)) continue
    const field = `${base}.${clip(key)}`
    const known = KNOWN_FIELDS.get(key.toLowerCase())
    const as = known !== undefined && known !== key ? ` (${known})` : ''
    const unsupported = UNSUPPORTED_FIELDS.find(([name]) => name === known)
    if ((CONTROLLER_FIELDS as readonly string[]).includes(known ?? '')) {
      problems.push({ field, message: `${field}${as} is set by the controller and must not be set here` })
    } else if (unsupported !== undefined) {
      problems.push({ field, message: `${field}${as} is not supported on the GPU path: ${unsupported[1]}` })
    } else if (known !== undefined) {
      problems.push({ field, message: `${field} is not a SwiftGuestSpec field: field names are case-sensitive; write ${known}` })
    } else {
      problems.push({ field, message: `${field} is not a SwiftGuestSpec field a cell may set; a cell may set ${CELL_FIELDS.join(', ')}` })
    }
  }
  const osType = Object.hasOwn(template, 'osType') ? template.osType : undefined
  if (typeof osType === 'string' && osType.toLowerCase() === 'windows') {
    problems.push({
      field: `${base}.osType`,
      message: `${base}.osType windows is not supported on the GPU path: a cell runs Linux with the NVIDIA driver and a kubelet`
    })
  } else if (osType !== undefined && osType !== null && osType !== 'linux') {
    problems.push({ field: `${base}.osType`, message: `${base}.osType ${describe(osType)} is not linux, the only OS family a cell runs` })
  }
  for (const field of ['guestClassRef', 'imageRef']) {
    const ref = Object.hasOwn(template, field) ? template[field] : undefined
    if (!isRecord(ref) || typeof ref.name !== 'string' || ref.name === '') {
      problems.push({
        field: `${base}.${field}.name`,
        message: `${base}.${field}.name is required: a GPU cell boots from a disk image in a guest class`
      })
    }
  }
  problems.push(...interfaceNameProblems(template.interfaces))
  return problems
}

/** Interface names are DNS labels: the one `nodeIPFrom` names goes into the boot script. */
function interfaceNameProblems(interfaces: unknown): PoolProblem[] {
  if (!Array.isArray(interfaces)) return []
  const problems: PoolProblem[] = []
  interfaces.forEach((entry, i) => {
    const name = isRecord(entry) && Object.hasOwn(entry, 'name') ? entry.name : undefined
    const field = `spec.cell.guestTemplate.interfaces[${i}].name`
    if (typeof name !== 'string' || !isDnsLabel(name)) {
      problems.push({ field, message: `${field} ${describe(name)} is not a DNS label (${DNS_LABEL_RULE})` })
    }
  })
  return problems
}

function gpuProblems(spec: Record<string, unknown>, gpu: Record<string, unknown>): PoolProblem[] {
  const base = 'spec.cell.gpu'
  const problems: PoolProblem[] = []
  if (gpu.count !== undefined && gpu.count !== 1) {
    problems.push({
      field: `${base}.count`,
      message: `${base}.count ${describe(gpu.count)} is not supported: a cell holds exactly 1 whole GPU`
    })
  }
  const backend = gpu.backend ?? 'DRA'
  if (backend === 'Native') {
    if (gpu.dra !== undefined) problems.push({ field: `${base}.dra`, message: `${base}.dra must not be set with backend Native` })
    const profile = record(record(gpu.native).gpuProfileRef).name
    if (typeof profile !== 'string' || profile === '') {
      problems.push({
        field: `${base}.native.gpuProfileRef.name`,
        message: `${base}.native.gpuProfileRef.name is required with backend Native`
      })
    }
    return problems
  }
  if (backend !== 'DRA') return problems // the schema check names a backend outside the enum
  if (gpu.native !== undefined) problems.push({ field: `${base}.native`, message: `${base}.native must not be set with backend DRA` })
  if (!isRecord(gpu.dra)) {
    problems.push({
      field: `${base}.dra`,
      message: `${base}.dra is required with backend DRA: it names the ResourceClaimTemplate or ResourceClaim of the GPU`
    })
    return problems
  }
  const template = nonEmpty(gpu.dra.resourceClaimTemplateName)
  const claim = nonEmpty(gpu.dra.resourceClaimName)
  if (template === claim) {
    problems.push({ field: `${base}.dra`, message: `${base}.dra must set exactly one of resourceClaimTemplateName and resourceClaimName` })
  } else if (claim) {
    const replicas = typeof spec.replicas === 'number' ? spec.replicas : 1
    const autoscaling = record(spec.autoscaling)
    const max = autoscaling.enabled === true && typeof autoscaling.maxReplicas === 'number' ? autoscaling.maxReplicas : 0
    if (replicas > 1 || max > 1) {
      problems.push({
        field: `${base}.dra.resourceClaimName`,
        message:
          `${base}.dra.resourceClaimName is one shared claim and a VFIO device backs one running VM: only for a pool of at most one cell ` +
          `(replicas ${replicas}${max > 1 ? `, autoscaling.maxReplicas ${max}` : ''}); use resourceClaimTemplateName`
      })
    }
  }
  const tier = gpu.dra.tier
  if (tier !== undefined && tier !== 'pcie') {
    problems.push({
      field: `${base}.dra.tier`,
      message: `${base}.dra.tier ${describe(tier)} is not supported: a cell takes the pcie tier (Cloud Hypervisor)`
    })
  }
  return problems
}

function nodeIPFromProblems(nodeIPFrom: unknown, template: unknown): PoolProblem[] {
  if (typeof nodeIPFrom !== 'string' || nodeIPFrom === '') return []
  if (!isDnsLabel(nodeIPFrom)) {
    return [
      {
        field: 'spec.cell.nodeIPFrom',
        message: `spec.cell.nodeIPFrom ${describe(nodeIPFrom)} is not a DNS label (${DNS_LABEL_RULE}); it goes into the boot script as {{ nodeIPInterface }}`
      }
    ]
  }
  const interfaces = isRecord(template) && Array.isArray(template.interfaces) ? template.interfaces : []
  const names = interfaces
    .filter(isRecord)
    .map((i) => i.name)
    .filter((n): n is string => typeof n === 'string')
  if (names.includes(nodeIPFrom)) return []
  return [
    {
      field: 'spec.cell.nodeIPFrom',
      message:
        `spec.cell.nodeIPFrom ${clip(nodeIPFrom)} names no interface of spec.cell.guestTemplate.interfaces ` +
        `(${names.length === 0 ? 'it lists none' : `it lists ${names.map(clip).join(', ')}`})`
    }
  ]
}

function labelProblems(labels: unknown): PoolProblem[] {
  if (!isRecord(labels)) return []
  const problems: PoolProblem[] = []
  for (const [key, value] of Object.entries(labels)) {
    const field = `spec.workloadCluster.node.labels[${clip(key)}]`
    const keyed = keyProblems(field, key, 'label')
    problems.push(...keyed)
    const restricted = keyed.length === 0 ? restrictedLabelReason(key) : undefined
    if (restricted !== undefined) problems.push({ field, message: `${field}: ${clip(key)} is refused: ${restricted}` })
    if (typeof value === 'string' && !isLabelValue(value)) {
      problems.push({
        field,
        message: `${field} value ${clip(value)} is not a label value (at most 63 letters, digits, -, _ and ., starting and ending with a letter or digit)`
      })
    }
  }
  return problems
}

function annotationProblems(annotations: unknown): PoolProblem[] {
  if (!isRecord(annotations)) return []
  return Object.keys(annotations).flatMap((key) => keyProblems(`spec.workloadCluster.node.annotations[${clip(key)}]`, key, 'annotation'))
}

function taintProblems(taints: unknown): PoolProblem[] {
  if (!Array.isArray(taints)) return []
  const problems: PoolProblem[] = []
  const seen = new Set<string>()
  taints.forEach((taint, i) => {
    if (!isRecord(taint)) return // the schema check reports it
    const field = `spec.workloadCluster.node.taints[${i}]`
    if (typeof taint.key === 'string' && taint.key !== '') {
      const keyed = keyProblems(`${field}.key`, taint.key, 'taint')
      problems.push(...keyed)
      const restricted = keyed.length === 0 ? restrictedTaintReason(taint.key) : undefined
      if (restricted !== undefined)
        problems.push({ field: `${field}.key`, message: `${field}.key ${clip(taint.key)} is refused: ${restricted}` })
    }
    if (typeof taint.value === 'string' && !isLabelValue(taint.value)) {
      problems.push({
        field: `${field}.value`,
        message: `${field}.value ${clip(taint.value)} is not a valid taint value (at most 63 letters, digits, -, _ and ., starting and ending with a letter or digit)`
      })
    }
    // Only string keys and effects are compared: the schema check reports any other type, and
    // `String()` of an object with a `toString` field that is not a function throws.
    if (typeof taint.key !== 'string' || typeof taint.effect !== 'string') return
    const identity = `${taint.key}:${taint.effect}`
    if (seen.has(identity)) {
      problems.push({
        field,
        message: `${field} repeats key ${clip(taint.key)} with effect ${taint.effect}; a Node carries one taint per key and effect`
      })
    }
    seen.add(identity)
  })
  return problems
}

/** A label, annotation or taint key: a qualified name, outside the controller's prefix. */
function keyProblems(field: string, key: string, what: 'label' | 'annotation' | 'taint'): PoolProblem[] {
  if (!isQualifiedName(key)) {
    return [
      {
        field,
        message: `${field}: ${clip(key)} is not a valid ${what} key (an optional DNS subdomain prefix and /, then at most 63 letters, digits, -, _ and .)`
      }
    ]
  }
  if (what !== 'taint' && key.startsWith(CONTROLLER_PREFIX)) {
    return [{ field, message: `${field}: ${clip(key)} is under cells.kubeswift.io/, which the controller keeps for itself` }]
  }
  return []
}

function autoscalingProblems(autoscaling: Record<string, unknown>): PoolProblem[] {
  const base = 'spec.autoscaling'
  const problems: PoolProblem[] = []
  const { minReplicas: min, maxReplicas: max } = autoscaling
  if (autoscaling.enabled === true && max === undefined) {
    problems.push({
      field: `${base}.maxReplicas`,
      message: `${base}.maxReplicas is required when autoscaling is enabled: an unbounded pool can take every GPU of the cluster`
    })
  }
  if (typeof min === 'number' && typeof max === 'number' && min > max) {
    problems.push({ field: `${base}.minReplicas`, message: `${base}.minReplicas ${min} exceeds maxReplicas ${max}` })
  }
  if (autoscaling.scaleDown === 'Auto' && min === undefined) {
    problems.push({
      field: `${base}.minReplicas`,
      message: `${base}.minReplicas is required with scaleDown Auto: it is the floor the pool shrinks to`
    })
  }
  problems.push(
    ...durationProblems(`${base}.stabilizationWindow`, autoscaling.stabilizationWindow, false),
    ...durationProblems(`${base}.scaleDownStabilizationWindow`, autoscaling.scaleDownStabilizationWindow, false)
  )
  return problems
}

function durationProblems(field: string, value: unknown, positive: boolean): PoolProblem[] {
  if (typeof value !== 'string') return [] // absent takes the default; another type is a schema problem
  const seconds = parseDuration(value)
  if (seconds === undefined) return [{ field, message: `${field} ${clip(value)} is not a duration (such as 90s, 15m or 1h30m)` }]
  if (positive && seconds <= 0) return [{ field, message: `${field} ${clip(value)} must be longer than 0` }]
  return []
}

/** A required Secret name: `why` says what the Secret is for. */
function secretRefProblems(field: string, name: unknown, why: string): PoolProblem[] {
  if (typeof name !== 'string' || name === '') return [{ field, message: `${field} is required: ${why}` }]
  if (!isSecretName(name)) return [{ field, message: `${field} ${clip(name)} is not a Secret name (a DNS subdomain)` }]
  return []
}

function secretKeyProblems(field: string, value: unknown): PoolProblem[] {
  if (typeof value !== 'string') return []
  if (value.length > 0 && value.length <= 253 && SECRET_KEY.test(value)) return []
  return [{ field, message: `${field} ${clip(value)} is not a Secret key (letters, digits, -, _ and ., at most 253)` }]
}

/** Unit lengths in seconds of a Go duration. */
const UNIT_SECONDS: Record<string, number> = { ns: 1e-9, us: 1e-6, µs: 1e-6, μs: 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 }

/** A Go duration (`90s`, `1h30m`, `1.5h`, `0`) in seconds, or undefined when it is not one. */
export function parseDuration(text: string): number | undefined {
  if (text.length > 64 || !DURATION.test(text)) return undefined
  if (text === '0') return 0
  let seconds = 0
  for (const [, amount, unit] of text.matchAll(/([0-9]*\.?[0-9]*)(ns|us|µs|μs|ms|s|m|h)/g)) {
    const factor = unit === undefined ? undefined : UNIT_SECONDS[unit]
    if (amount === undefined || factor === undefined) return undefined
    seconds += Number(amount) * factor
  }
  return Number.isFinite(seconds) ? seconds : undefined
}

/**
 * The spec with every default applied (api.md) and durations in seconds. Call it only for a spec
 * {@link poolProblems} finds nothing wrong with; for anything else the result is unspecified
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
    if (typeof v === 'string') Object.defineProperty(out, key, { value: v, enumerable: true, writable: true, configurable: true })
  }
  return out
}

const record = asRecord

function isSet(object: Record<string, unknown>, field: string): boolean {
  return Object.hasOwn(object, field) && object[field] !== undefined && object[field] !== null
}

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

function isSecretName(name: string): boolean {
  return name.length <= 253 && DNS1123_SUBDOMAIN.test(name)
}

const DNS_LABEL_RULE = 'at most 63 lower-case letters, digits and -, starting and ending with a letter or digit'

function isDnsLabel(value: string): boolean {
  return value.length <= 63 && DNS1123_LABEL.test(value)
}

function isLabelValue(value: string): boolean {
  return value.length <= 63 && LABEL_VALUE.test(value)
}

function isQualifiedName(key: string): boolean {
  const parts = key.split('/')
  if (parts.length > 2) return false
  const name = parts.length === 2 ? parts[1] : parts[0]
  const prefix = parts.length === 2 ? parts[0] : undefined
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix))) return false
  return name !== undefined && name.length <= 63 && QUALIFIED_NAME.test(name)
}

function dedupe(problems: PoolProblem[]): PoolProblem[] {
  const seen = new Set<string>()
  return problems.filter((p) => {
    const key = `${p.field}\u0000${p.message}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  })
}

/** A value as a message shows it, at most 80 characters: strings bare, everything else as JSON. */
function describe(value: unknown): string {
  if (typeof value === 'string') return value === '' ? '""' : clip(value)
  if (value === undefined) return 'nothing'
  return clip(canonicalJson(value))
}

function clip(text: string): string {
  return text.length > 80 ? `${text.slice(0, 77)}...` : text
}

/** `/cell/gpu/count` → `spec.cell.gpu.count`; JSON pointer escapes undone. */
function fieldOf(path: string): string {
  let field = 'spec'
  for (const raw of path.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~')
    field += /^\d+$/.test(part) ? `[${part}]` : /^[A-Za-z0-9]+$/.test(part) ? `.${part}` : `[${clip(part)}]`
  }
  return field
}

function schemaMessage(error: ValueError): string {
  const field = fieldOf(error.path)
  const value = describe(error.value)
  const common = commonSchemaMessage(error, field, value)
  if (common !== undefined) return common
  if (error.type === ValueErrorType.Kind) return `${field} ${value} must be an object`
  const type = (error.schema as { type?: unknown }).type
  if (typeof type !== 'string') return invalidValueMessage(error, field, value)
  return `${field} ${value} must be ${type === 'integer' || type === 'object' || type === 'array' ? 'an' : 'a'} ${type}`
}
