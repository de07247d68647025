/**
 * The rules of an Instance spec that its CRD states in CEL, and the API server's own checks of the
 * Pod the spec becomes (Kubernetes 1.37), restated so that a spec that reaches the hooks without
 * the CRD's or the webhook's check (webhook off, CRD of an older release) still never makes a Pod
 * the API server refuses, and status says which field broke which rule. Every problem is
 * collected (docs/instance.md, "Using it").
 */
import {
  ACCELERATOR_FAMILIES,
  ENV_SOURCES,
  PERSISTENT_CLASS_MESSAGE,
  PERSISTENT_REMOVED_MESSAGE,
  PERSISTENT_SHRINK_MESSAGE
} from '../api/instance.ts'
import { isRecord } from '../k8s/objects.ts'
import { compareQuantities, isPositiveQuantity } from '../k8s/quantity.ts'
import { isIanaServiceName } from '../k8s/names.ts'
import { describe } from '../k8s/schema-messages.ts'
import { SSH_PORT } from './labels.ts'
import { portIdentity, protocolOf } from './ports.ts'
import { invalid, type SpecProblem } from './problems.ts'

/** The CEL rules of the CRD and the uniqueness of its list-map keys, restated. */
export function specRuleProblems(spec: Record<string, unknown>): SpecProblem[] {
  const resources = isRecord(spec.resources) ? spec.resources : {}
  return [
    ...portProblems(list(spec.ports), spec.sshPublicKey !== undefined),
    ...envProblems(list(spec.env)),
    ...quantityProblems(spec),
    ...uniqueNameProblems('spec.imagePullSecrets', list(spec.imagePullSecrets)),
    ...(isRecord(resources.accelerator) ? acceleratorProblems(resources.accelerator) : []),
    ...(isRecord(spec.workspace) ? workspaceProblems(spec.workspace) : [])
  ]
}

/**
 * The CRD's transition rules of a persistent workspace, restated for an update from `oldSpec`:
 * it is not removed, its class does not change, its size does not shrink.
 */
export function persistentChangeProblems(oldSpec: unknown, nextSpec: unknown): SpecProblem[] {
  const was = persistentOf(oldSpec)
  if (was === undefined) return []
  const now = persistentOf(nextSpec)
  if (now === undefined) return [invalid('spec.workspace.persistent', PERSISTENT_REMOVED_MESSAGE)]
  const problems: SpecProblem[] = []
  if (compareQuantities(now.size, was.size) === -1) {
    problems.push(
      invalid(
        'spec.workspace.persistent.size',
        `${PERSISTENT_SHRINK_MESSAGE}; it was ${describe(was.size)}, the update asks ${describe(now.size)}`
      )
    )
  }
  if (now.storageClassName !== was.storageClassName) {
    problems.push(
      invalid(
        'spec.workspace.persistent.storageClassName',
        `${PERSISTENT_CLASS_MESSAGE}; it was ${describe(was.storageClassName ?? 'absent (the default class)')}`
      )
    )
  }
  return problems
}

function persistentOf(spec: unknown): Record<string, unknown> | undefined {
  const workspace = isRecord(spec) ? spec.workspace : undefined
  return isRecord(workspace) && isRecord(workspace.persistent) ? workspace.persistent : undefined
}

/** The workspace's kinds exclude one another; a persistent size is above zero. */
function workspaceProblems(workspace: Record<string, unknown>): SpecProblem[] {
  const problems: SpecProblem[] = []
  const persistent = workspace.persistent
  if (workspace.size !== undefined && workspace.claimName !== undefined) {
    problems.push(
      invalid(
        'spec.workspace',
        'spec.workspace: size and claimName are exclusive; set size for an ephemeral workspace or claimName for an existing claim'
      )
    )
  }
  for (const other of ['size', 'claimName'].filter((key) => persistent !== undefined && workspace[key] !== undefined)) {
    problems.push(
      invalid(
        'spec.workspace.persistent',
        `spec.workspace.persistent and spec.workspace.${other} are exclusive; a persistent workspace takes its size in persistent.size`
      )
    )
  }
  const size = isRecord(persistent) ? persistent.size : undefined
  // A size that is no quantity at all is the schema's problem.
  if (compareQuantities(size, 0) !== undefined && !isPositiveQuantity(size)) {
    problems.push(invalid('spec.workspace.persistent.size', `spec.workspace.persistent.size ${describe(size)} must be above zero`))
  }
  return problems
}

function portProblems(ports: unknown[], ssh: boolean): SpecProblem[] {
  const problems: SpecProblem[] = []
  const byIdentity = new Map<string, number>()
  const byNumber = new Map<number, string>()
  ports.forEach((entry, i) => {
    if (!isRecord(entry) || typeof entry.port !== 'number') return
    const at = `spec.ports[${i}]`
    const protocol = protocolOf(entry)
    const id = portIdentity(entry.port, protocol)
    const twin = byIdentity.get(id)
    if (twin !== undefined) problems.push(invalid(at, `${at}: port ${id} is listed twice (also spec.ports[${twin}]); list each port once`))
    else byIdentity.set(id, i)
    const sibling = byNumber.get(entry.port)
    if (sibling === undefined) byNumber.set(entry.port, protocol)
    else if (sibling !== protocol) {
      problems.push(
        invalid(
          at,
          `${at}: port ${id} shares port ${entry.port} with ${entry.port}/${sibling}; the Service merges ports by number, use distinct port numbers`
        )
      )
    }
    if (ssh && entry.port === SSH_PORT && protocol !== 'TCP') {
      problems.push(
        invalid(
          at,
          `${at}: port ${id} is not allowed with spec.sshPublicKey set; port ${SSH_PORT} is the SSH port, only ${SSH_PORT}/TCP may be listed`
        )
      )
    }
  })
  problems.push(...uniqueNameProblems('spec.ports', ports))
  ports.forEach((entry, i) => {
    if (!isRecord(entry) || typeof entry.name !== 'string') return
    const at = `spec.ports[${i}].name`
    if (entry.name === 'ssh') problems.push(invalid(at, `${at} ssh is reserved for the SSH sidecar; choose another name`))
    else if (!isIanaServiceName(entry.name)) {
      problems.push(
        invalid(
          at,
          `${at} ${entry.name} is not an IANA service name: lower-case letters, digits and -, with a letter, no -- and no - at either end`
        )
      )
    }
  })
  return problems
}

function envProblems(env: unknown[]): SpecProblem[] {
  const problems = uniqueNameProblems('spec.env', env)
  env.forEach((entry, i) => {
    if (isRecord(entry) && entry.value !== undefined && entry.valueFrom !== undefined) {
      problems.push(invalid(`spec.env[${i}]`, `spec.env[${i}] (${describe(entry.name)}): value and valueFrom are exclusive; set one`))
    }
    if (isRecord(entry) && isRecord(entry.valueFrom)) problems.push(...valueFromProblems(`spec.env[${i}].valueFrom`, entry.valueFrom))
  })
  return problems
}

/** The Pod fields an env `fieldRef` may read (Kubernetes v1.37 `validEnvDownwardAPIFieldPathExpressions`). */
const ENV_FIELD_PATHS = [
  'metadata.name',
  'metadata.namespace',
  'metadata.uid',
  'spec.nodeName',
  'spec.serviceAccountName',
  'status.hostIP',
  'status.hostIPs',
  'status.podIP',
  'status.podIPs'
]
/** A label or annotation of the Pod, by key, as a `fieldRef` subscript. */
const SUBSCRIPTED_FIELD_PATH = /^metadata\.(labels|annotations)\['[^']+'\]$/
/** The container resources an env `resourceFieldRef` may read, and the hugepages ones. */
const ENV_RESOURCES = /^(limits|requests)\.(cpu|memory|ephemeral-storage|hugepages-.+)$/

/**
 * `valueFrom` as the API server checks it in a container (v1.37 `validateEnvVarValueFrom`):
 * exactly one known source, and for `fieldRef` and `resourceFieldRef` a field the downward API
 * offers. Any other key is refused too: the API server would drop it, and with it the source the
 * author meant. The names and keys of the other sources are the schema's patterns.
 */
function valueFromProblems(at: string, from: Record<string, unknown>): SpecProblem[] {
  const problems: SpecProblem[] = []
  const known = ENV_SOURCES as readonly string[]
  const keys = Object.keys(from)
  for (const key of keys.filter((k) => !known.includes(k))) {
    problems.push(invalid(`${at}.${cutKey(key)}`, `${at}.${cutKey(key)} is not a source; valueFrom takes one of ${ENV_SOURCES.join(', ')}`))
  }
  const sources = ENV_SOURCES.filter((source) => Object.hasOwn(from, source))
  if (sources.length !== 1) {
    problems.push(
      invalid(
        at,
        `${at} ${sources.length === 0 ? 'sets no source' : `sets ${sources.length} sources (${sources.join(', ')})`}; set exactly one of ${ENV_SOURCES.join(', ')}`
      )
    )
  }
  const fieldRef = from.fieldRef
  if (isRecord(fieldRef)) {
    if (fieldRef.apiVersion !== undefined && fieldRef.apiVersion !== 'v1') {
      problems.push(invalid(`${at}.fieldRef.apiVersion`, `${at}.fieldRef.apiVersion ${describe(fieldRef.apiVersion)} is not v1`))
    }
    const path = fieldRef.fieldPath
    if (typeof path === 'string' && path !== '' && !ENV_FIELD_PATHS.includes(path) && !SUBSCRIPTED_FIELD_PATH.test(path)) {
      problems.push(
        invalid(
          `${at}.fieldRef.fieldPath`,
          `${at}.fieldRef.fieldPath ${describe(path)} is not a field the downward API offers: ${ENV_FIELD_PATHS.join(', ')}, metadata.labels['<key>'] or metadata.annotations['<key>']`
        )
      )
    }
  }
  const resourceRef = from.resourceFieldRef
  if (
    isRecord(resourceRef) &&
    typeof resourceRef.resource === 'string' &&
    resourceRef.resource !== '' &&
    !ENV_RESOURCES.test(resourceRef.resource)
  ) {
    problems.push(
      invalid(
        `${at}.resourceFieldRef.resource`,
        `${at}.resourceFieldRef.resource ${describe(resourceRef.resource)} is not one of limits.cpu, limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory, requests.ephemeral-storage or a hugepages resource`
      )
    )
  }
  return problems
}

/**
 * Quantities the API server refuses when negative: the workload container's cpu and memory
 * (requests and limits) and the emptyDir size limit. Their form is the schema's.
 */
function quantityProblems(spec: Record<string, unknown>): SpecProblem[] {
  const resources = isRecord(spec.resources) ? spec.resources : {}
  const workspace = isRecord(spec.workspace) ? spec.workspace : {}
  const fields: Array<[string, unknown]> = [
    ['spec.resources.cpu', resources.cpu],
    ['spec.resources.memory', resources.memory],
    ['spec.workspace.size', workspace.size]
  ]
  return fields
    .filter(([, value]) => isNegativeQuantity(value))
    .map(([field, value]) => invalid(field, `${field} ${describe(value)} is negative; the API server takes no negative quantity`))
}

/** A quantity below zero: a negative number, or a quantity string with a minus sign and a digit other than 0 before its suffix. */
function isNegativeQuantity(value: unknown): boolean {
  if (typeof value === 'number') return value < 0
  if (typeof value !== 'string' || !value.startsWith('-')) return false
  const mantissa = /^-([0-9]*\.?[0-9]*)/.exec(value)?.[1] ?? ''
  return /[1-9]/.test(mantissa)
}

/** A key as a field path shows it: at most 63 characters. */
function cutKey(key: string): string {
  return key.length > 63 ? `${key.slice(0, 63)}…` : key
}

/** A list keyed by `name` (a list-map, or container port names) names each entry once. */
function uniqueNameProblems(field: string, entries: unknown[]): SpecProblem[] {
  const problems: SpecProblem[] = []
  const first = new Map<string, number>()
  entries.forEach((entry, i) => {
    if (!isRecord(entry) || typeof entry.name !== 'string') return
    const twin = first.get(entry.name)
    if (twin === undefined) first.set(entry.name, i)
    else
      problems.push(
        invalid(`${field}[${i}].name`, `${field}[${i}].name ${entry.name} is also the name of ${field}[${twin}]; names must be unique`)
      )
  })
  return problems
}

const SLICED_FIELDS = ['memoryMiB', 'memoryPercentage', 'coresPercentage'] as const

function acceleratorProblems(a: Record<string, unknown>): SpecProblem[] {
  const at = 'spec.resources.accelerator'
  const problems: SpecProblem[] = []
  const has = (key: string): boolean => a[key] !== undefined
  if (has('memoryMiB') && has('memoryPercentage')) {
    problems.push(invalid(`${at}.memoryMiB`, `${at}.memoryMiB and ${at}.memoryPercentage are exclusive; set one`))
  }
  const family = typeof a.family === 'string' ? a.family : 'Whole'
  const count = typeof a.count === 'number' ? a.count : 1
  if (count === 0) {
    // One message listing every extra field says more than the four CEL rules it would trip.
    const extra = [...(family === 'Whole' ? [] : ['family']), ...SLICED_FIELDS.filter(has), ...(has('profile') ? ['profile'] : [])]
    if (extra.length > 0) {
      problems.push(
        invalid(`${at}.count`, `${at}.count 0 means a CPU-only workspace; remove ${extra.join(', ')}, or set count to 1 or more`)
      )
    }
    return problems
  }
  if (!(ACCELERATOR_FAMILIES as readonly string[]).includes(family)) return problems
  if ((family === 'Sliced' || family === 'Partitioned') && count !== 1) {
    problems.push(invalid(`${at}.count`, `${at}.count ${count} is not allowed for family ${family}; Sliced and Partitioned take count 1`))
  }
  if (family !== 'Sliced') {
    for (const key of SLICED_FIELDS.filter(has)) {
      problems.push(invalid(`${at}.${key}`, `${at}.${key} applies to the Sliced family only; family is ${family}`))
    }
  } else if (!has('memoryMiB') && !has('memoryPercentage')) {
    problems.push(invalid(at, `${at}: family Sliced needs memoryMiB or memoryPercentage`))
  }
  if (family === 'Partitioned' && !has('profile')) {
    problems.push(invalid(`${at}.profile`, `${at}.profile is required for family Partitioned`))
  } else if (family !== 'Partitioned' && has('profile')) {
    problems.push(
      invalid(`${at}.profile`, `${at}.profile ${describe(a.profile)} applies to the Partitioned family only; family is ${family}`)
    )
  }
  return problems
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}
