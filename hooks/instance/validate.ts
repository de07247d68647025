/**
 * Spec checks of an Instance, and the defaults the hooks rely on.
 *
 * The CRD already refuses most of these (schema plus CEL in `hooks/api/instance.ts`), and the
 * admission webhook refuses them again; the hooks check once more because an object can reach
 * them without either (webhook off, CRD installed from an older release) and because status must
 * say, in a sentence a person can act on, what is wrong. Every check here collects all problems:
 * a user fixes a manifest in one round.
 *
 * Choices where the spec is silent:
 * - The `ssh` port name is reserved whether or not SSH is on, as the CRD's CEL rule has it.
 * - Names that end up in other objects are checked where they would break those objects:
 *   `spec.type` becomes a label value (at most 63 characters, the schema's maxLength), the
 *   Instance name becomes a label value and the Service name (a DNS-1035 label), whether or not
 *   ports are listed today ({@link instanceNameProblems}).
 * - {@link withDefaults} folds an accelerator with count 0 into "no accelerator": the CRD allows no
 *   other accelerator field with count 0, so the two mean the same CPU-only workspace, and every
 *   consumer tests one shape. A spec without `workspace` still gets one: an emptyDir at
 *   `/workspace` without a size limit (an Instance is a workspace; the mount path default says
 *   where it lives).
 */
import { TypeCompiler } from '@sinclair/typebox/compiler'
import { ValueErrorType } from '@sinclair/typebox/errors'
import type { TSchema } from '@sinclair/typebox'
import { DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN } from '../api/kit.ts'
import {
  ACCELERATOR_FAMILIES,
  CONFIG_KEY_PATTERN,
  ENV_NAME_PATTERN,
  ENV_SOURCES,
  InstanceSpecSchema,
  type AcceleratorFamily,
  type InstanceSpec
} from '../api/instance.ts'
import type { InstanceTypeSpec } from '../api/instancetype.ts'
import { isRecord } from '../k8s/objects.ts'
import { canonicalJson } from '../k8s/hash.ts'
import { schemaProblems, type SchemaWording } from '../k8s/schema-problems.ts'
import { SSH_PORT } from './labels.ts'
import { isSshPort, portIdentity, protocolOf, type ResolvedPort } from './ports.ts'

/** One problem with a spec: the field, a CamelCase reason for the condition, and a message. */
export interface SpecProblem {
  field: string
  reason: string
  message: string
}

export type { ResolvedPort }

/** An accelerator request with family and count filled in; only present when count ≥ 1. */
export interface ResolvedAccelerator {
  family: AcceleratorFamily
  count: number
  memoryPercentage?: number
  memoryMiB?: number
  coresPercentage?: number
  profile?: string
}

/** The workspace volume: always present, at `mountPath`. */
export interface ResolvedWorkspace {
  mountPath: string
  size?: number | string
  claimName?: string
}

/** An Instance spec with every default the hooks rely on filled in. */
export interface ResolvedSpec extends Omit<InstanceSpec, 'imagePullPolicy' | 'ports' | 'resources' | 'workspace' | 'stop'> {
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never'
  ports: ResolvedPort[]
  resources: { cpu?: number | string; memory?: number | string; accelerator?: ResolvedAccelerator }
  workspace: ResolvedWorkspace
  stop: boolean
}

/** The reason of a problem no more precise reason fits. */
export const INVALID_SPEC = 'InvalidSpec'
/** The reason when `spec.type` names no InstanceType. */
export const INSTANCE_TYPE_NOT_FOUND = 'InstanceTypeNotFound'
/** The reason when the InstanceType `spec.type` names is stored in a shape the hooks cannot use. */
export const INSTANCE_TYPE_INVALID = 'InstanceTypeInvalid'
/** The reason when a Setting the Instance needs is stored in a shape the hooks cannot use. */
export const SETTING_INVALID = 'SettingInvalid'
/** The reason when the InstanceType cannot serve the accelerator request. */
export const ACCELERATOR_NOT_OFFERED = 'AcceleratorNotOffered'

/**
 * The CRD schema compiled once: a well-formed spec (every resync, every admission) costs one
 * compiled check; only a spec that fails it is walked again for the errors to report.
 */
const SPEC_CHECK = TypeCompiler.Compile(InstanceSpecSchema)

/** The longest label value; `spec.type` and the Instance name become label values on the Pod. */
const LABEL_VALUE_MAX = 63
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/

/**
 * Every problem of `spec` that needs no other object: the CRD schema (types, enums, ranges,
 * patterns, lengths) and each CEL rule, restated so that they explain themselves in status.
 */
export function specProblems(spec: unknown): SpecProblem[] {
  if (!isRecord(spec)) return [invalid('spec', `spec must be an object, not ${describe(spec)}`)]
  // The compiled check is cheap; the error walk runs only for a spec that fails it.
  const problems = SPEC_CHECK.Check(spec) ? [] : schemaMessages(InstanceSpecSchema, spec, 'spec').map((m) => invalid(m.field, m.message))
  // spec.type's 63-character limit (it becomes a label value) is the schema's maxLength.
  return [...problems, ...specRuleProblems(spec)]
}

/**
 * One message per field of `value` that `schema` refuses, each naming the field under `root`
 * (`spec.ports[1].port`), the value and the rule (hooks/k8s/schema-problems.ts).
 */
export function schemaMessages(schema: TSchema, value: unknown, root: string): { field: string; message: string }[] {
  return schemaProblems(schema, value, { ...WORDING, root })
}

/**
 * Problems of the Instance name: it names the Pod and becomes the part-of label value (at most
 * 63 characters), and it names the Service, which must be a DNS-1035 label (lower-case letters,
 * digits and `-`, starting with a letter). The rule holds whether or not ports are listed today,
 * as the CRD's CEL rule has it, so adding a port later never strands an Instance.
 */
export function instanceNameProblems(name: string): SpecProblem[] {
  const problems: SpecProblem[] = []
  if (name.length > LABEL_VALUE_MAX) {
    problems.push(
      invalid(
        'metadata.name',
        `metadata.name ${name} is ${name.length} characters long; at most ${LABEL_VALUE_MAX}, because the Pod carries it as a label value`
      )
    )
  }
  if (name.length <= LABEL_VALUE_MAX && !DNS1035_LABEL.test(name)) {
    problems.push(
      invalid(
        'metadata.name',
        `metadata.name ${name} cannot name the Instance's Service: a Service name must be a DNS-1035 label ` +
          '(lower-case letters, digits and -, starting with a letter and ending with a letter or digit)'
      )
    )
  }
  return problems
}

/**
 * Problems of `spec` against its InstanceType: the type missing (`InstanceTypeNotFound`), or an
 * accelerator request it cannot serve (`AcceleratorNotOffered`). Each message names the field
 * and what the type offers.
 */
export function typeProblems(spec: InstanceSpec, typeName: string, type: InstanceTypeSpec | undefined): SpecProblem[] {
  if (type === undefined) {
    return [
      {
        field: 'spec.type',
        reason: INSTANCE_TYPE_NOT_FOUND,
        message: `spec.type ${typeName} names no InstanceType; create InstanceType ${typeName} or name an existing one`
      }
    ]
  }
  const accel = resolvedAccelerator(spec)
  if (accel === undefined) return []
  const problems: SpecProblem[] = []
  const field = 'spec.resources.accelerator'
  const plugin = type.devicePlugin ?? 'HAMi'
  const families = type.families ?? ['Whole']
  const offered = (list: readonly string[]): string => (list.length === 0 ? 'none' : list.join(', '))
  if (accel.family === 'Sliced' && plugin === 'NVIDIA') {
    problems.push(
      notOffered(
        `${field}.family`,
        `${field}.family Sliced is not offered by InstanceType ${typeName}: the NVIDIA device plugin has no Sliced family; ` +
          `offered: ${offered(families.filter((f) => f !== 'Sliced'))}`
      )
    )
  } else if (!families.includes(accel.family)) {
    problems.push(
      notOffered(
        `${field}.family`,
        `${field}.family ${accel.family} is not offered by InstanceType ${typeName}; offered: ${offered(families)}`
      )
    )
  }
  if (accel.family === 'Partitioned' && accel.profile !== undefined && !(type.partitionProfiles ?? []).includes(accel.profile)) {
    problems.push(
      notOffered(
        `${field}.profile`,
        `${field}.profile ${accel.profile} is not offered by InstanceType ${typeName}; offered: ${offered(type.partitionProfiles ?? [])}`
      )
    )
  }
  if (type.maxCount !== undefined && accel.count > type.maxCount) {
    problems.push(
      notOffered(
        `${field}.count`,
        `${field}.count ${accel.count} is over the maxCount of InstanceType ${typeName}; at most ${type.maxCount}`
      )
    )
  }
  return problems
}

/**
 * `spec` with the CRD defaults filled in: imagePullPolicy, each port's protocol, the accelerator's
 * family and count, the workspace and its mountPath, stop. A deep copy; the input is not changed.
 * Meant for a spec without problems; it does not check.
 */
export function withDefaults(spec: InstanceSpec): ResolvedSpec {
  const { imagePullPolicy, ports, resources, workspace, stop, ...rest } = copyJson(spec)
  const resolved: ResolvedSpec = {
    ...rest,
    imagePullPolicy: imagePullPolicy ?? 'IfNotPresent',
    ports: (ports ?? []).map((p) => ({ ...p, protocol: p.protocol ?? 'TCP' })),
    resources: {},
    workspace: { ...workspace, mountPath: workspace?.mountPath ?? '/workspace' },
    stop: stop ?? false
  }
  if (resources?.cpu !== undefined) resolved.resources.cpu = resources.cpu
  if (resources?.memory !== undefined) resolved.resources.memory = resources.memory
  const accel = resolvedAccelerator({ resources })
  if (accel !== undefined) resolved.resources.accelerator = accel
  return resolved
}

/** The accelerator request with family and count filled in, or undefined for none (count 0). */
function resolvedAccelerator(spec: Pick<InstanceSpec, 'resources'>): ResolvedAccelerator | undefined {
  const accel = spec.resources?.accelerator
  if (accel === undefined || (accel.count ?? 1) <= 0) return undefined
  return { ...accel, family: accel.family ?? 'Whole', count: accel.count ?? 1 }
}

/**
 * A deep copy of JSON data (a spec that passed the schema): several times cheaper than
 * structuredClone on objects of this size, which showed in the profile of every sync.
 */
function copyJson<T>(value: T): T {
  if (Array.isArray(value)) return value.map(copyJson) as T
  if (typeof value !== 'object' || value === null) return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value)) {
    const member = copyJson((value as Record<string, unknown>)[key])
    // An own `__proto__` key stays an own key; assigning it would replace the copy's prototype.
    if (key === '__proto__') Object.defineProperty(out, key, { value: member, enumerable: true, writable: true, configurable: true })
    else out[key] = member
  }
  return out as T
}

export { isSshPort }

/** The CEL rules of the CRD and the uniqueness of its list-map keys, restated. */
function specRuleProblems(spec: Record<string, unknown>): SpecProblem[] {
  const resources = isRecord(spec.resources) ? spec.resources : {}
  return [
    ...portProblems(list(spec.ports), spec.sshPublicKey !== undefined),
    ...envProblems(list(spec.env)),
    ...quantityProblems(spec),
    ...uniqueNameProblems('spec.imagePullSecrets', list(spec.imagePullSecrets)),
    ...(isRecord(resources.accelerator) ? acceleratorProblems(resources.accelerator) : []),
    ...(isRecord(spec.workspace) && spec.workspace.size !== undefined && spec.workspace.claimName !== undefined
      ? [
          invalid(
            'spec.workspace',
            'spec.workspace: size and claimName are exclusive; set size for an ephemeral workspace or claimName for an existing claim'
          )
        ]
      : [])
  ]
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

/** The IANA service name rule the CRD's CEL states for port names (length is the schema's). */
function isIanaServiceName(name: string): boolean {
  return /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(name) && /[a-z]/.test(name) && !name.includes('--')
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : []
}

/** A problem with reason `InvalidSpec`. */
export function invalid(field: string, message: string): SpecProblem {
  return { field, reason: INVALID_SPEC, message }
}

function notOffered(field: string, message: string): SpecProblem {
  return { field, reason: ACCELERATOR_NOT_OFFERED, message }
}

/** The longest value a message quotes; longer ones are cut, so status stays small whatever the input. */
const MAX_DESCRIBED = 120

/** A value as a message shows it: strings bare, everything else as JSON, cut to a readable length. */
export function describe(value: unknown): string {
  if (typeof value === 'string') return value === '' ? '""' : cut(value)
  if (value === undefined) return 'nothing'
  return cut(canonicalJson(value) ?? typeof value)
}

function cut(text: string): string {
  return text.length > MAX_DESCRIBED ? `${text.slice(0, MAX_DESCRIBED)}… (${text.length} characters)` : text
}

/** What each pattern of the schema asks, as a message says it. */
const PATTERN_RULES = new Map<string, string>([
  ['^/', 'must be an absolute path (start with /)'],
  [
    DNS_SUBDOMAIN_PATTERN,
    'is not a DNS subdomain (lower-case letters, digits, - and ., each part starting and ending with a letter or digit)'
  ],
  [ENV_NAME_PATTERN, 'is not an environment variable name: printable ASCII characters other than ='],
  [CONFIG_KEY_PATTERN, 'is not a ConfigMap or Secret key (letters, digits, -, _ and .)'],
  [DNS_LABEL_PATTERN, 'is not a DNS label (lower-case letters, digits and -, starting and ending with a letter or digit)']
])

/**
 * How the Instance's schema problems name fields and quote values: a segment that is not an
 * identifier (a label key) is quoted as JSON, and a long one cut at 63 characters.
 */
const WORDING: Omit<SchemaWording, 'root'> = {
  segment: (whole) => {
    const part = whole.length > 63 ? `${whole.slice(0, 63)}…` : whole
    return /^[A-Za-z_][A-Za-z0-9_]*$/.test(part) ? `.${part}` : `[${JSON.stringify(part)}]`
  },
  quote: describe,
  own: (error, field, value) => {
    const pattern = (error.schema as { pattern?: string }).pattern
    switch (error.type) {
      case ValueErrorType.Kind:
        // A Kind error with a pattern is the Quantity int-or-string (api/kit.ts).
        return pattern !== undefined
          ? `${field} ${value} is not a quantity (such as 500m, 4Gi or 2)`
          : `${field} ${value} must be an object`
      case ValueErrorType.StringPattern:
        return `${field} ${value} ${PATTERN_RULES.get(pattern ?? '') ?? `does not match ${pattern}`}`
      default:
        return undefined
    }
  }
}
