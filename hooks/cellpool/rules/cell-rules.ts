/**
 * The admission rules of `spec.cell` (docs/cellpool.md, "Admission"): the guestTemplate's fields, the
 * GPU and the node address interface.
 *
 * Choices where the spec is silent:
 * - A guestTemplate field counts as set when its value is neither absent nor null.
 * - The guestTemplate is checked against the fields a cell may set ({@link CELL_FIELDS}), not
 *   only against the denylist of docs/cellpool.md: a key outside both is refused too, and a denied
 *   key in another case (`KernelRef`) is refused as the field it spells.
 */
import { asRecord, isRecord } from '../../k8s/objects.ts'
import { DNS_LABEL_RULE, isDnsLabel } from '../../k8s/names.ts'
import { describe } from '../../k8s/schema-messages.ts'
import { clip } from './wording.ts'
import type { PoolProblem } from '../model/problems.ts'

/** guestTemplate fields the controller writes (docs/cellpool.md item 3). */
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

/** Every SwiftGuestSpec field this module knows, by its lower-case spelling. */
const KNOWN_FIELDS = new Map<string, string>(
  [...CONTROLLER_FIELDS, ...UNSUPPORTED_FIELDS.map(([field]) => field), ...CELL_FIELDS].map((field) => [field.toLowerCase(), field])
)
const CELL_FIELD_SET = new Set<string>(CELL_FIELDS)

/**
 * The guestTemplate's fields against {@link CELL_FIELDS}. Names are compared as written and, to
 * say what a misspelt one is, without case: `KernelRef` is refused as kernelRef is.
 */
export function guestTemplateProblems(template: unknown): PoolProblem[] {
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
  problems.push(...interfaceNameProblems(template.interfaces), ...refProblems(template))
  return problems
}

/**
 * The guestTemplate's references, each by name only: KubeSwift's `imageRef`, `guestClassRef` and
 * `dataDiskRef` take nothing else, and `interfaces[].networkRef` could name a network of another
 * namespace. What a cell's machine refers to is made or read with the controller's or the agent's
 * rights, never the pool author's, so a namespace or a kind beside the name is refused.
 */
function refProblems(template: Record<string, unknown>): PoolProblem[] {
  const base = 'spec.cell.guestTemplate'
  const refs: Array<[string, unknown]> = (['imageRef', 'guestClassRef', 'dataDiskRef'] as const).map((f) => [
    f,
    Object.hasOwn(template, f) ? template[f] : undefined
  ])
  if (Array.isArray(template.interfaces))
    template.interfaces.forEach((i, n) => refs.push([`interfaces[${n}].networkRef`, asRecord(i).networkRef]))
  const problems: PoolProblem[] = []
  for (const [path, ref] of refs) {
    if (!isRecord(ref)) continue
    for (const key of Object.keys(ref).filter((k) => k !== 'name')) {
      const field = `${base}.${path}.${clip(key)}`
      problems.push({
        field,
        message: `${field} is not allowed: ${path.replace(/^interfaces\[\d+\]\./, '')} takes only a name, of an object in the pool's namespace`
      })
    }
    // imageRef and guestClassRef have their own rule: a name is required.
    if (path !== 'imageRef' && path !== 'guestClassRef' && Object.hasOwn(ref, 'name') && typeof ref.name !== 'string') {
      problems.push({ field: `${base}.${path}.name`, message: `${base}.${path}.name ${describe(ref.name)} is not a name` })
    }
  }
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

export function gpuProblems(spec: Record<string, unknown>, gpu: Record<string, unknown>): PoolProblem[] {
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
    const profile = asRecord(asRecord(gpu.native).gpuProfileRef).name
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
    const autoscaling = asRecord(spec.autoscaling)
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

export function nodeIPFromProblems(nodeIPFrom: unknown, template: unknown): PoolProblem[] {
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

function isSet(object: Record<string, unknown>, field: string): boolean {
  return Object.hasOwn(object, field) && object[field] !== undefined && object[field] !== null
}

function nonEmpty(value: unknown): boolean {
  return typeof value === 'string' && value !== ''
}
