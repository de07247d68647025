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
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors'
import type { TSchema } from '@sinclair/typebox'
import { DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN, matchesDns1035Label } from '../k8s/names.ts'
import {
  CONFIG_KEY_PATTERN,
  ENV_NAME_PATTERN,
  InstanceSpecSchema,
  type AcceleratorFamily,
  type InstanceSpec,
  type PersistentWorkspace
} from '../api/instance.ts'
import type { InstanceTypeSpec } from '../api/instancetype.ts'
import { cloneJson, isRecord } from '../k8s/objects.ts'
import { describe } from '../k8s/schema-messages.ts'
import { schemaProblems } from '../k8s/schema-problems.ts'
import type { ResolvedPort } from './ports.ts'
import { INSTANCE_TYPE_NOT_FOUND, invalid, notOffered, type SpecProblem } from './problems.ts'
import { specRuleProblems } from './spec-rules.ts'

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
  /** A claim of the Instance's own, `<instance>-workspace`. */
  persistent?: PersistentWorkspace
}

/** An Instance spec with every default the hooks rely on filled in. */
export interface ResolvedSpec extends Omit<InstanceSpec, 'imagePullPolicy' | 'ports' | 'resources' | 'workspace' | 'stop'> {
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never'
  ports: ResolvedPort[]
  resources: { cpu?: number | string; memory?: number | string; accelerator?: ResolvedAccelerator }
  workspace: ResolvedWorkspace
  stop: boolean
}

/**
 * The CRD schema compiled once: a well-formed spec (every resync, every admission) costs one
 * compiled check; only a spec that fails it is walked again for the errors to report.
 */
const SPEC_CHECK = TypeCompiler.Compile(InstanceSpecSchema)

/** The longest label value; `spec.type` and the Instance name become label values on the Pod. */
const LABEL_VALUE_MAX = 63

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
 * (`spec.ports[1].port`), the value and the rule (the walk is hooks/k8s/schema-problems.ts).
 */
export function schemaMessages(schema: TSchema, value: unknown, root: string): { field: string; message: string }[] {
  return schemaProblems(schema, value, { root, quote: describe, own: instanceSchemaMessage })
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
  if (name.length <= LABEL_VALUE_MAX && !matchesDns1035Label(name)) {
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
  if (plugin === 'DRA') problems.push(...draProblems(accel, typeName, type))
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

/** The InstanceType field that names the device class a family is allocated from. */
export function deviceClassField(
  family: ResolvedAccelerator['family']
): 'deviceClassName' | 'sharedDeviceClassName' | 'partitionDeviceClassName' {
  if (family === 'Sliced') return 'sharedDeviceClassName'
  if (family === 'Partitioned') return 'partitionDeviceClassName'
  return 'deviceClassName'
}

/**
 * What a DRA type cannot serve: a family whose DeviceClass field the type leaves unset, and a
 * Sliced memory share as a percentage (the capacity a DRA driver publishes is in bytes).
 */
function draProblems(accel: ResolvedAccelerator, typeName: string, type: InstanceTypeSpec): SpecProblem[] {
  const field = 'spec.resources.accelerator'
  const problems: SpecProblem[] = []
  const classField = deviceClassField(accel.family)
  if (type.dra?.[classField] === undefined) {
    problems.push(
      notOffered(
        `${field}.family`,
        `${field}.family ${accel.family} cannot be served by InstanceType ${typeName}: it has devicePlugin DRA and no ` +
          `spec.dra.${classField}, the DeviceClass ${accel.family} is allocated from; an admin must set it`
      )
    )
  }
  if (accel.family === 'Sliced' && accel.memoryPercentage !== undefined) {
    problems.push(
      notOffered(
        `${field}.memoryPercentage`,
        `${field}.memoryPercentage is not offered by InstanceType ${typeName}: with devicePlugin DRA a device's memory is a ` +
          'capacity in bytes, not a percentage; set memoryMiB'
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
  const { imagePullPolicy, ports, resources, workspace, stop, ...rest } = cloneJson(spec)
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

/** The sentences only the Instance and InstanceType schemas need; undefined for TypeBox's own. */
function instanceSchemaMessage(error: ValueError, field: string, value: string): string | undefined {
  const pattern = (error.schema as { pattern?: string }).pattern
  switch (error.type) {
    case ValueErrorType.Kind:
      // A Kind error with a pattern is the Quantity int-or-string (api/kit.ts).
      return pattern !== undefined ? `${field} ${value} is not a quantity (such as 500m, 4Gi or 2)` : `${field} ${value} must be an object`
    case ValueErrorType.StringPattern:
      return `${field} ${value} ${PATTERN_RULES.get(pattern ?? '') ?? `does not match ${pattern}`}`
    default:
      return undefined
  }
}
