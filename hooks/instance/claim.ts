/**
 * The ResourceClaimTemplate of an Instance whose InstanceType has `devicePlugin: DRA`
 * (docs/instance.md, "DRA"; docs/dra.md, "Instances").
 *
 * A template, never a ResourceClaim: the claim the scheduler allocates is made from it for each
 * Pod and goes with the Pod, so a stopped Instance holds no device. The template holds one request
 * named `gpu`:
 *
 * | family      | device class                | request                                                        |
 * | ----------- | --------------------------- | -------------------------------------------------------------- |
 * | Whole N     | `dra.deviceClassName`       | ExactCount N                                                   |
 * | Shared N    | `dra.deviceClassName`       | ExactCount N, with NVIDIA's GpuConfig sharing (`dra.sharing`)   |
 * | Sliced      | `dra.sharedDeviceClassName` | ExactCount 1, capacity `cores` (coresPercentage, default 100) and `memory` (memoryMiB, canonical) |
 * | Partitioned | `dra.partitionDeviceClassName` | ExactCount 1, a CEL selector on the MIG device's `profile`  |
 *
 * Choices where the design is silent:
 * - `allocationMode: ExactCount` and `count` are written out although they are the API's
 *   defaults, so the template the API server stores is the one rendered here.
 * - The Shared config names NVIDIA's driver, `gpu.nvidia.com`, whatever the class is called:
 *   GpuConfig is that driver's opaque configuration, and the driver ignores a config that names
 *   another driver.
 * - The template carries a content hash, as the Pod does, so the sync hook can tell a template
 *   rendered from the current spec and InstanceType from an older one without reading what the
 *   API server defaulted into it.
 */
import type { InstanceTypeSpec } from '../api/instancetype.ts'
import { contentHash } from '../k8s/hash.ts'
import { MANAGED_BY, MANAGED_BY_LABEL, PART_OF_LABEL } from '../k8s/labels.ts'
import type { KubeObject } from '../k8s/objects.ts'
import { CLAIM_TEMPLATE_HASH_ANNOTATION, claimTemplateName } from './labels.ts'
import { deviceClassField, type ResolvedAccelerator } from './validate.ts'

/** The API version of ResourceClaimTemplates (resource.k8s.io, GA since Kubernetes 1.34). */
export const RESOURCE_API_VERSION = 'resource.k8s.io/v1'
/** The one request of the template, as a container's claim may name it. */
export const DEVICE_REQUEST = 'gpu'
/** The driver name of NVIDIA's DRA driver, whose attributes a MIG selector reads. */
export const NVIDIA_DRA_DRIVER = 'gpu.nvidia.com'

/** `spec.devices` of a claim: the requests and, for Shared, the driver's config. */
export interface ClaimDevices {
  requests: Record<string, unknown>[]
  config?: Record<string, unknown>[]
}

/**
 * The devices a DRA Instance asks for. Throws when the type names no class for the family, or for
 * Sliced by memoryPercentage: `typeProblems` reports both as spec errors first, so reaching it here
 * is a bug.
 */
export function claimDevices(accel: ResolvedAccelerator, type: InstanceTypeSpec): ClaimDevices {
  const field = deviceClassField(accel.family)
  const deviceClassName = type.dra?.[field]
  if (deviceClassName === undefined)
    throw new Error(`claimDevices: the InstanceType has no spec.dra.${field} (typeProblems reports it first)`)
  const exactly: Record<string, unknown> = { allocationMode: 'ExactCount', count: accel.count, deviceClassName }
  switch (accel.family) {
    case 'Whole':
      return { requests: [{ name: DEVICE_REQUEST, exactly }] }
    case 'Shared':
      return {
        requests: [{ name: DEVICE_REQUEST, exactly }],
        config: [
          {
            opaque: {
              driver: NVIDIA_DRA_DRIVER,
              parameters: {
                apiVersion: 'resource.nvidia.com/v1beta1',
                kind: 'GpuConfig',
                sharing: { strategy: type.dra?.sharing ?? 'TimeSlicing' }
              }
            },
            requests: [DEVICE_REQUEST]
          }
        ]
      }
    case 'Sliced': {
      if (accel.memoryMiB === undefined) throw new Error('claimDevices: Sliced on DRA needs memoryMiB (typeProblems reports it first)')
      const capacity = { requests: { cores: String(accel.coresPercentage ?? 100), memory: mebibytes(accel.memoryMiB) } }
      return { requests: [{ name: DEVICE_REQUEST, exactly: { ...exactly, capacity } }] }
    }
    case 'Partitioned':
      return {
        requests: [
          {
            name: DEVICE_REQUEST,
            exactly: { ...exactly, selectors: [{ cel: { expression: migProfileSelector(accel.profile ?? '') } }] }
          }
        ]
      }
  }
}

const BINARY_SUFFIXES = ['Mi', 'Gi', 'Ti', 'Pi', 'Ei'] as const

/**
 * `mib` MiB as the API server writes the quantity back: the largest binary suffix that keeps the
 * number whole (8192 → `8Gi`, 1536 → `1536Mi`). The template is replaced whenever what is
 * stored differs from what is answered (update method Recreate), so a form the API server
 * rewrites (`8192Mi`) would replace it on every sync.
 */
export function mebibytes(mib: number): string {
  let value = mib
  let suffix = 0
  while (value % 1024 === 0 && value > 0 && suffix < BINARY_SUFFIXES.length - 1) {
    value /= 1024
    suffix++
  }
  return `${value}${BINARY_SUFFIXES[suffix] ?? 'Mi'}`
}

/**
 * The CEL selector of a MIG profile: NVIDIA's driver publishes each MIG device with the string
 * attribute `profile` (`1g.10gb`) in its own domain. The profile's pattern (lower-case letters,
 * digits, `.` and `-`) keeps it a plain CEL string literal.
 */
export function migProfileSelector(profile: string): string {
  return `device.attributes["${NVIDIA_DRA_DRIVER}"].profile == "${profile}"`
}

/** What a template is built from. */
export interface ClaimTemplateInput {
  /** The Instance's name; the template is `<name>-accelerator`. */
  name: string
  namespace: string
  accelerator: ResolvedAccelerator
  type: InstanceTypeSpec
}

/** The ResourceClaimTemplate of a DRA Instance, with its content hash. */
export function buildClaimTemplate(input: ClaimTemplateInput): KubeObject {
  const template: KubeObject = {
    apiVersion: RESOURCE_API_VERSION,
    kind: 'ResourceClaimTemplate',
    metadata: {
      name: claimTemplateName(input.name),
      namespace: input.namespace,
      labels: { [PART_OF_LABEL]: input.name, [MANAGED_BY_LABEL]: MANAGED_BY },
      annotations: {}
    },
    spec: { spec: { devices: claimDevices(input.accelerator, input.type) } }
  }
  const annotations = template.metadata.annotations as Record<string, string>
  annotations[CLAIM_TEMPLATE_HASH_ANNOTATION] = contentHash(template)
  return template
}

/** Whether `type` asks for accelerators through DRA. */
export function usesDra(type: InstanceTypeSpec): boolean {
  return type.devicePlugin === 'DRA'
}
