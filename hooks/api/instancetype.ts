/**
 * InstanceType (`worker.gpustack.ai/v1alpha1`, cluster-scoped): a class of GPU nodes Instances are
 * placed on, written by the cluster admin. It decides placement and how accelerators are requested.
 */
import { Type, type Static } from '@sinclair/typebox'
import { CustomResource, Quantity, StringEnum, StringMap, TAINT_EFFECTS, cel } from './kit.ts'
import { DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN } from '../k8s/names.ts'
import { ACCELERATOR_FAMILIES } from './instance.ts'
import { LabelSelectorSchema } from './label-selector.ts'
import { DURATION_PATTERN } from './gpucellpool.ts'

/** Type key of InstanceTypes in a v2 hook request. */
export const INSTANCE_TYPE_TYPE_KEY = 'InstanceType.worker.gpustack.ai/v1alpha1'

/**
 * How accelerators are asked for: the device plugins whose extended resource names gpuhooks knows,
 * or DRA, a ResourceClaimTemplate per Instance (docs/instance.md, "Accelerator requests").
 */
export const DEVICE_PLUGINS = ['HAMi', 'GPUStack', 'NVIDIA', 'DRA'] as const
export type DevicePlugin = (typeof DEVICE_PLUGINS)[number]

/** How NVIDIA's DRA driver shares one GPU among the containers of a claim, for the Shared family. */
export const DRA_SHARING_STRATEGIES = ['TimeSlicing', 'MPS'] as const
export type DraSharingStrategy = (typeof DRA_SHARING_STRATEGIES)[number]

/** A DeviceClass name: a DNS subdomain, as the API server asks of every object name. */
const DEVICE_CLASS_NAME = { pattern: DNS_SUBDOMAIN_PATTERN, maxLength: 253 }

/** The device classes of a DRA type (docs/dra.md, "Instances"). */
export const DraSchema = Type.Object(
  {
    deviceClassName: Type.Optional(
      Type.String({
        ...DEVICE_CLASS_NAME,
        description:
          "DeviceClass of whole devices, for the Whole and Shared families (gpu.nvidia.com for NVIDIA's DRA driver, " +
          "hami-core-gpu.project-hami.io for HAMi's)."
      })
    ),
    sharedDeviceClassName: Type.Optional(
      Type.String({
        ...DEVICE_CLASS_NAME,
        description:
          'DeviceClass of devices with consumable capacity (cores, memory), for the Sliced family ' +
          "(hami-core-gpu.project-hami.io for HAMi's DRA driver)."
      })
    ),
    partitionDeviceClassName: Type.Optional(
      Type.String({
        ...DEVICE_CLASS_NAME,
        description: "DeviceClass of MIG devices, for the Partitioned family (mig.nvidia.com for NVIDIA's DRA driver)."
      })
    ),
    sharing: Type.Optional(
      StringEnum(DRA_SHARING_STRATEGIES, {
        default: 'TimeSlicing',
        description: "Sharing strategy of the Shared family in NVIDIA's GpuConfig: TimeSlicing or MPS."
      })
    )
  },
  { description: 'With devicePlugin DRA: the DeviceClasses each family is allocated from.' }
)
export type DraSpec = Static<typeof DraSchema>

const QUALIFIED_RESOURCE_NAME =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$'

/** A Pod toleration, as copied onto the Instance's Pod. */
export const TolerationSchema = Type.Object(
  {
    key: Type.Optional(
      Type.String({ description: 'Taint key the toleration applies to; empty with operator Exists matches every taint.' })
    ),
    operator: Type.Optional(StringEnum(['Exists', 'Equal'], { description: 'Exists or Equal (the default when absent).' })),
    value: Type.Optional(Type.String({ description: 'Taint value to match with operator Equal.' })),
    effect: Type.Optional(
      StringEnum(TAINT_EFFECTS, {
        description: 'Taint effect to match; empty matches every effect.'
      })
    ),
    tolerationSeconds: Type.Optional(Type.Integer({ description: 'For NoExecute: how long the Pod stays bound after the taint appears.' }))
  },
  { description: 'A toleration copied onto the Pod of every Instance of this type.' }
)
export type Toleration = Static<typeof TolerationSchema>

/** A name that goes into a label value: a DNS subdomain of at most 63 characters. */
const LABEL_VALUE_NAME = { pattern: DNS_SUBDOMAIN_PATTERN, maxLength: 63 }

/** Who may use the type (docs/access.md, "Entitlement"). */
export const AccessSchema = Type.Object(
  {
    namespaceSelector: Type.Optional(
      LabelSelectorSchema("The namespaces whose Instances may use this type, by the namespace's labels; absent or empty: every namespace.")
    )
  },
  { description: 'Which namespaces may use this type; absent: every namespace.' }
)
export type AccessSpec = Static<typeof AccessSchema>

/** The Kueue LocalQueue the type's Pods join (docs/access.md, "Quota and queueing"). */
export const QueueSchema = Type.Object(
  {
    localQueueName: Type.String({
      ...LABEL_VALUE_NAME,
      description:
        "Kueue LocalQueue, by name, in each Instance's namespace, that the Instance's Pod joins (label kueue.x-k8s.io/queue-name): " +
        'a DNS subdomain of at most 63 characters, as a label value must be.'
    }),
    workloadPriorityClassName: Type.Optional(
      Type.String({
        ...LABEL_VALUE_NAME,
        description: "Kueue WorkloadPriorityClass of the Pod's Workload (label kueue.x-k8s.io/priority-class)."
      })
    )
  },
  { description: "Quota and queueing by Kueue: the Pods of this type's Instances wait in a LocalQueue until Kueue admits them." }
)
export type QueueSpec = Static<typeof QueueSchema>

/**
 * A lifecycle duration, in the form the CRDs already take (`90s`, `15m`, `2h`, `1h30m`). The rule
 * names the field, as a type's author reads it back from `kubectl apply`.
 */
function LifecycleDuration(field: string, description: string, options: { positive: boolean; default?: string }) {
  const rule = options.positive
    ? {
        rule: `self.matches('${DURATION_PATTERN}') && duration(self) > duration('0s')`,
        message: `spec.lifecycle.${field} must be a positive duration such as 90s, 15m or 2h`
      }
    : {
        rule: `self.matches('${DURATION_PATTERN}') && duration(self) >= duration('0s')`,
        message: `spec.lifecycle.${field} must be a duration such as 0s, 90s, 15m or 8h`
      }
  return Type.Optional(
    Type.String({ maxLength: 64, ...(options.default !== undefined ? { default: options.default } : {}), description, ...cel(rule) })
  )
}

/** The defaults of `spec.lifecycle` (docs/lifecycle.md). */
export const LIFECYCLE_DEFAULTS = { idleThreshold: 5, stopNotice: '15m', maxPostpone: '8h' } as const

/** When Instances of the type are stopped (docs/lifecycle.md). */
export const LifecycleSchema = Type.Object(
  {
    idleStopAfter: LifecycleDuration(
      'idleStopAfter',
      'No GPU activity above idleThreshold for this long stops the Instance (spec.stop: true); absent: never for idleness.',
      { positive: true }
    ),
    idleThreshold: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        default: LIFECYCLE_DEFAULTS.idleThreshold,
        description: 'Percent of GPU cores at or below which an accelerator counts as idle.'
      })
    ),
    stopNotice: LifecycleDuration(
      'stopNotice',
      "How long before a stop the Instance's condition StopScheduled says when it stops; no stop comes sooner after it first says so.",
      { positive: false, default: LIFECYCLE_DEFAULTS.stopNotice }
    ),
    maxRunDuration: LifecycleDuration(
      'maxRunDuration',
      'The Instance is stopped this long after its Pod started, whatever it does; absent: never. Not postponable.',
      { positive: true }
    ),
    maxPostpone: LifecycleDuration(
      'maxPostpone',
      'The furthest the annotation gpustack.ai/keep-running-until may postpone an idle stop, from when it is first seen; 0: not at all.',
      { positive: false, default: LIFECYCLE_DEFAULTS.maxPostpone }
    )
  },
  {
    description:
      'Idle stop and maximum run time (docs/lifecycle.md): with it, every running Instance of this type has an InstanceActivity ' +
      'the agent fills from Prometheus, and its status says when it stops.'
  }
)
export type LifecycleSpec = Static<typeof LifecycleSchema>

/** InstanceType spec. */
export const InstanceTypeSpecSchema = Type.Object(
  {
    devicePlugin: Type.Optional(
      StringEnum(DEVICE_PLUGINS, {
        default: 'HAMi',
        description:
          'Device plugin on the nodes of this type, which decides the resource names requested: HAMi, ' +
          'GPUStack or NVIDIA (the NVIDIA device plugin offers no Sliced family); or DRA, a ResourceClaimTemplate ' +
          'per Instance on the DeviceClasses of spec.dra.'
      })
    ),
    resourceName: Type.Optional(
      Type.String({
        default: 'nvidia.com/gpu',
        pattern: QUALIFIED_RESOURCE_NAME,
        maxLength: 253,
        description:
          'The whole-accelerator extended resource name; the other names derive from it and from its ' +
          'domain part (nvidia.com/gpu → nvidia.com/gpumem, nvidia.com/gpu.shared).'
      })
    ),
    manufacturer: Type.Optional(
      Type.String({
        default: 'nvidia',
        pattern: DNS_LABEL_PATTERN,
        maxLength: 63,
        description: 'Accelerator manufacturer, used in the GPUStack visibility resource name.'
      })
    ),
    families: Type.Optional(
      Type.Array(StringEnum(ACCELERATOR_FAMILIES), {
        default: ['Whole'],
        minItems: 1,
        'x-kubernetes-list-type': 'set',
        description: 'Accelerator families Instances of this type may use: Whole, Shared, Sliced, Partitioned.'
      })
    ),
    partitionProfiles: Type.Optional(
      Type.Array(Type.String({ pattern: '^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$', maxLength: 40 }), {
        'x-kubernetes-list-type': 'set',
        maxItems: 64,
        description: 'Hardware partition (MIG) profiles offered to Partitioned Instances, such as 1g.10gb.'
      })
    ),
    dra: Type.Optional(DraSchema),
    access: Type.Optional(AccessSchema),
    queue: Type.Optional(QueueSchema),
    lifecycle: Type.Optional(LifecycleSchema),
    maxCount: Type.Optional(
      Type.Integer({ minimum: 1, description: 'Most accelerators one Instance of this type may take; absent means no limit.' })
    ),
    nodeSelector: Type.Optional(StringMap('Node labels an Instance Pod of this type must match.')),
    tolerations: Type.Optional(
      Type.Array(TolerationSchema, { maxItems: 64, description: 'Tolerations copied onto every Instance Pod of this type.' })
    ),
    runtimeClassName: Type.Optional(
      Type.String({ maxLength: 253, description: 'RuntimeClass of the Instance Pods (for example nvidia).' })
    ),
    visibilityResource: Type.Optional(
      Type.String({
        pattern: QUALIFIED_RESOURCE_NAME,
        maxLength: 253,
        description:
          "Overrides the resource the SSH sidecar requests to see the workload's devices without taking " +
          'capacity; empty uses the device plugin default (GPUStack: device.gpustack.ai/<manufacturer>.visibility).'
      })
    ),
    defaults: Type.Optional(
      Type.Object(
        {
          cpu: Type.Optional(Quantity({ description: 'CPU of an Instance that sets none (requests = limits).' })),
          memory: Type.Optional(Quantity({ description: 'Memory of an Instance that sets none (requests = limits).' }))
        },
        { description: 'Resources for Instances that set none.' }
      )
    )
  },
  {
    description: 'What the admin offers on this class of nodes.',
    ...cel({
      rule: "!has(self.partitionProfiles) || size(self.partitionProfiles) == 0 || (has(self.families) && 'Partitioned' in self.families)",
      message: 'spec.partitionProfiles needs Partitioned in spec.families',
      fieldPath: '.partitionProfiles'
    })
  }
)
export type InstanceTypeSpec = Static<typeof InstanceTypeSpecSchema>

/** InstanceType as stored. */
export const InstanceTypeSchema = CustomResource(
  { spec: InstanceTypeSpecSchema },
  { description: 'A class of GPU nodes that Instances can be placed on.' }
)
export type InstanceType = Static<typeof InstanceTypeSchema>
