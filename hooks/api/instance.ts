/**
 * Instance (`worker.gpustack.ai/v1alpha1`, namespaced): a container workspace backed by one Pod,
 * with a whole, shared, sliced or partitioned accelerator, optional SSH, and a NodePort Service
 * whose node ports survive stop and start.
 *
 * The schema states every rule that needs no other object, as CEL where it spans fields, so the
 * API server refuses a bad Instance even with the admission webhook off. The hooks check the same
 * rules again (`hooks/instance/validate.ts`) to explain them in status.
 */
import { Type, type Static } from '@sinclair/typebox'
import {
  conditionSchema,
  CustomResource,
  NON_NEGATIVE_QUANTITY_RULE,
  Quantity,
  StringEnum,
  StringMap,
  cel,
  listMap,
  nameRule
} from './kit.ts'
import { STOP_REASONS } from './instanceactivity.ts'
import { DNS1035_LABEL_PATTERN, DNS_LABEL_PATTERN, DNS_SUBDOMAIN_PATTERN } from '../k8s/names.ts'

/** API group and version of Instance and InstanceType. */
export const WORKER_API_VERSION = 'worker.gpustack.ai/v1alpha1'
/**
 * Type key of Instances (kind Instance) in a v2 hook request, named like `POD_KEY`. Not to be
 * confused with `INSTANCE_TYPE_TYPE_KEY`, the type key of InstanceTypes.
 */
export const INSTANCE_KEY = 'Instance.worker.gpustack.ai/v1alpha1'
/**
 * The former name of {@link INSTANCE_KEY}; it read as "the InstanceType key".
 * @deprecated Use INSTANCE_KEY.
 */
export const INSTANCE_TYPE_KEY = INSTANCE_KEY

/** Accelerator families (docs/instance.md, "Accelerator requests"). */
export const ACCELERATOR_FAMILIES = ['Whole', 'Shared', 'Sliced', 'Partitioned'] as const
export type AcceleratorFamily = (typeof ACCELERATOR_FAMILIES)[number]

/** Port protocols a Service port may use. */
export const PORT_PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const
export type PortProtocol = (typeof PORT_PROTOCOLS)[number]

/** Phases of an Instance (docs/instance.md, "Status"). */
export const INSTANCE_PHASES = ['Pending', 'Queued', 'Starting', 'Running', 'Stopping', 'Stopped', 'Failed', 'Deleting'] as const
export type InstancePhase = (typeof INSTANCE_PHASES)[number]

/** The port name the SSH sidecar's 22/TCP takes, on the container and on the Service. */
export const SSH_PORT_NAME = 'ssh'

const IANA_SVC_NAME_RULE = `self.matches('${DNS_LABEL_PATTERN}') && self.matches('[a-z]') && !self.contains('--')`

/** One exposed port. */
export const InstancePortSchema = Type.Object(
  {
    port: Type.Integer({ minimum: 1, maximum: 65535, description: 'Port the workload listens on; also the Service port.' }),
    protocol: Type.Optional(StringEnum(PORT_PROTOCOLS, { default: 'TCP', description: 'TCP (default), UDP or SCTP.' })),
    name: Type.Optional(
      Type.String({
        maxLength: 15,
        description:
          'Optional IANA service name (at most 15 lower-case letters, digits and -, with a letter) for the ' +
          'container port and the status entry. The Service port is always named <protocol>-<port>. ' +
          'ssh is reserved for the SSH sidecar.',
        ...cel(
          {
            rule: IANA_SVC_NAME_RULE,
            message: 'must be an IANA service name: lower-case letters, digits and -, with a letter, no -- and no - at either end'
          },
          { rule: "self != 'ssh'", message: 'ssh is reserved for the SSH sidecar' }
        )
      })
    )
  },
  { description: 'A port exposed through the Instance NodePort Service.' }
)
export type InstancePort = Static<typeof InstancePortSchema>

/** The accelerator request. */
export const AcceleratorSchema = Type.Object(
  {
    family: Type.Optional(
      StringEnum(ACCELERATOR_FAMILIES, {
        default: 'Whole',
        description:
          'Whole: dedicated devices. Shared: time-sliced devices. Sliced: a share of one device memory and ' +
          'compute (HAMi, GPUStack). Partitioned: a hardware (MIG) partition of one device.'
      })
    ),
    count: Type.Optional(
      Type.Integer({
        minimum: 0,
        default: 1,
        description: 'Number of accelerators; 1 for Sliced and Partitioned. 0 means a CPU-only workspace.'
      })
    ),
    memoryPercentage: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, description: 'Sliced: share of device memory in percent (exclusive with memoryMiB).' })
    ),
    memoryMiB: Type.Optional(Type.Integer({ minimum: 1, description: 'Sliced: device memory in MiB (exclusive with memoryPercentage).' })),
    coresPercentage: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 100, description: 'Sliced: share of compute in percent; absent means 100.' })
    ),
    profile: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$',
        maxLength: 40,
        description: 'Partitioned: the partition profile, one the InstanceType offers, such as 1g.10gb.'
      })
    )
  },
  {
    description: 'Accelerators for the workload container; absent means a CPU-only workspace.',
    ...cel(
      {
        rule: '!(has(self.memoryPercentage) && has(self.memoryMiB))',
        message: 'memoryMiB and memoryPercentage are exclusive: set one'
      },
      {
        rule: "!has(self.count) || self.count != 0 || (!has(self.memoryPercentage) && !has(self.memoryMiB) && !has(self.coresPercentage) && !has(self.profile) && (!has(self.family) || self.family == 'Whole'))",
        message: 'count 0 means a CPU-only workspace: no other accelerator field may be set'
      },
      {
        rule: "!has(self.family) || !(self.family in ['Sliced', 'Partitioned']) || !has(self.count) || self.count == 1",
        message: 'Sliced and Partitioned take count 1'
      },
      {
        rule: "(has(self.family) && self.family == 'Sliced') || (!has(self.memoryPercentage) && !has(self.memoryMiB) && !has(self.coresPercentage))",
        message: 'memoryMiB, memoryPercentage and coresPercentage apply to the Sliced family only'
      },
      {
        rule: "!has(self.family) || self.family != 'Sliced' || has(self.memoryMiB) || has(self.memoryPercentage)",
        message: 'Sliced needs memoryMiB or memoryPercentage'
      },
      {
        rule: "(has(self.family) && self.family == 'Partitioned') == has(self.profile)",
        message: 'profile is required for the Partitioned family and allowed for it only'
      }
    )
  }
)
export type Accelerator = Static<typeof AcceleratorSchema>

/**
 * An environment variable name as the API server checks it since Kubernetes 1.34 (the relaxed
 * rule, `RelaxedEnvironmentVariableValidation`, GA and locked on): printable ASCII other than `=`.
 * Before it, a C identifier-like name (`[-._a-zA-Z][-._a-zA-Z0-9]*`) was asked.
 */
export const ENV_NAME_PATTERN = '^[ -<>-~]+$'

/** A ConfigMap or Secret key (`[-._a-zA-Z0-9]+`, at most 253), as a key selector names it. */
export const CONFIG_KEY_PATTERN = '^[-._a-zA-Z0-9]+$'

/** The env sources a container takes (Kubernetes v1.37 `validateEnvVarValueFrom`). */
export const ENV_SOURCES = ['fieldRef', 'resourceFieldRef', 'configMapKeyRef', 'secretKeyRef', 'fileKeyRef'] as const

function keySelector(what: string) {
  return Type.Object(
    {
      name: Type.String({ maxLength: 253, pattern: DNS_SUBDOMAIN_PATTERN, description: `Name of the ${what} in the Instance namespace.` }),
      key: Type.String({ minLength: 1, maxLength: 253, pattern: CONFIG_KEY_PATTERN, description: `Key in the ${what}.` }),
      optional: Type.Optional(
        Type.Boolean({ description: `true: the container starts without the variable when the ${what} or key is missing.` })
      )
    },
    { description: `A key of a ${what}.` }
  )
}

/** Where an environment variable's value comes from: exactly one of the sources. */
export const EnvVarSourceSchema = Type.Object(
  {
    fieldRef: Type.Optional(
      Type.Object(
        {
          apiVersion: Type.Optional(Type.String({ description: 'Version of the schema fieldPath is written in; v1.' })),
          fieldPath: Type.String({
            minLength: 1,
            description:
              "A field of the Pod: metadata.name, metadata.namespace, metadata.uid, metadata.labels['<key>'], " +
              "metadata.annotations['<key>'], spec.nodeName, spec.serviceAccountName, status.hostIP(s), status.podIP(s)."
          })
        },
        { description: 'A field of the Pod.' }
      )
    ),
    resourceFieldRef: Type.Optional(
      Type.Object(
        {
          containerName: Type.Optional(
            Type.String({ description: 'Container whose resource is read; the workload container when absent.' })
          ),
          resource: Type.String({
            minLength: 1,
            description:
              'limits.cpu, limits.memory, limits.ephemeral-storage, requests.cpu, requests.memory, requests.ephemeral-storage, or a hugepages one.'
          }),
          // Typed as kubernetes-types declares a Quantity (a string); the API server takes an integer too.
          divisor: Type.Optional(Type.Unsafe<string>(Quantity({ description: 'Unit of the value; 1 when absent.' })))
        },
        { description: 'A resource of a container.' }
      )
    ),
    configMapKeyRef: Type.Optional(keySelector('ConfigMap')),
    secretKeyRef: Type.Optional(keySelector('Secret')),
    fileKeyRef: Type.Optional(
      Type.Object(
        {
          volumeName: Type.String({
            minLength: 1,
            maxLength: 63,
            pattern: DNS_LABEL_PATTERN,
            description: 'An emptyDir volume of the Pod.'
          }),
          path: Type.String({ minLength: 1, description: 'The env file, relative to the volume.' }),
          key: Type.String({ minLength: 1, pattern: ENV_NAME_PATTERN, description: 'The variable in the file.' }),
          optional: Type.Optional(Type.Boolean({ description: 'true: the container starts without the variable when it is missing.' }))
        },
        { description: 'A variable of an env file in a volume (Kubernetes 1.35 and later).' }
      )
    )
  },
  {
    description:
      'Source of the value, as in a container env entry: exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef, fileKeyRef.',
    ...cel({
      rule: `[${ENV_SOURCES.map((source) => `has(self.${source})`).join(', ')}].filter(x, x).size() == 1`,
      message: 'set exactly one of fieldRef, resourceFieldRef, configMapKeyRef, secretKeyRef and fileKeyRef'
    })
  }
)

/** An environment variable of the workload container. */
export const EnvVarSchema = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      pattern: ENV_NAME_PATTERN,
      description: 'Variable name: printable ASCII characters other than =.'
    }),
    value: Type.Optional(Type.String({ description: 'Literal value.' })),
    valueFrom: Type.Optional(EnvVarSourceSchema)
  },
  {
    description: 'An environment variable, as in a container.',
    ...cel({ rule: '!(has(self.value) && has(self.valueFrom))', message: 'value and valueFrom are exclusive' })
  }
)
export type EnvVar = Static<typeof EnvVarSchema>

/** A persistent workspace quantity as CEL reads an int-or-string: its text. */
const SIZE_TEXT = (of: string) => `quantity(string(${of}))`

/** What admission and CEL say when a persistent workspace's claim would shrink. */
export const PERSISTENT_SHRINK_MESSAGE =
  'spec.workspace.persistent.size may only grow: a PersistentVolumeClaim cannot shrink (delete the Instance to start over)'
/** What admission and CEL say when a persistent workspace's class would change. */
export const PERSISTENT_CLASS_MESSAGE =
  'spec.workspace.persistent.storageClassName cannot change: the claim keeps the class it was made with'
/** What admission and CEL say when a persistent workspace would be dropped from the spec. */
export const PERSISTENT_REMOVED_MESSAGE =
  'spec.workspace.persistent cannot be removed: the claim holds the workspace files (delete the Instance to delete its claim)'

/**
 * A workspace claim of the Instance's own (`<instance>-workspace`, ReadWriteOnce): kept across
 * stop and start, deleted with the Instance. `storageClassName` is fixed once set; `size` may grow.
 */
export const PersistentWorkspaceSchema = Type.Object(
  {
    size: Quantity({
      description: 'Storage the claim requests, above zero; may grow (the claim is updated in place), never shrink.',
      ...cel({
        rule: `type(self) == int ? self > 0 : (!isQuantity(self) || ${SIZE_TEXT('self')}.isGreaterThan(quantity('0')))`,
        message: 'must be above zero'
      })
    }),
    storageClassName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: DNS_SUBDOMAIN_PATTERN,
        description: "StorageClass of the claim; absent: the cluster's default class. Cannot change."
      })
    )
  },
  {
    description: 'A PersistentVolumeClaim of the Instance, <instance>-workspace, kept while the Instance exists.',
    ...cel(
      {
        rule:
          `!isQuantity(string(self.size)) || !isQuantity(string(oldSelf.size)) || ` +
          `${SIZE_TEXT('self.size')}.compareTo(${SIZE_TEXT('oldSelf.size')}) >= 0`,
        message: PERSISTENT_SHRINK_MESSAGE,
        fieldPath: '.size'
      },
      {
        rule:
          'has(self.storageClassName) == has(oldSelf.storageClassName) && ' +
          '(!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)',
        message: PERSISTENT_CLASS_MESSAGE,
        fieldPath: '.storageClassName'
      }
    )
  }
)
export type PersistentWorkspace = Static<typeof PersistentWorkspaceSchema>

/** Instance spec. */
export const InstanceSpecSchema = Type.Object(
  {
    type: Type.String({
      minLength: 1,
      maxLength: 63,
      description:
        'Name of the InstanceType: decides node placement and how accelerators are requested. At most 63 ' +
        'characters: the Pod carries it as a label value.'
    }),
    image: Type.String({ minLength: 1, description: 'Workload container image.' }),
    imagePullPolicy: Type.Optional(
      StringEnum(['Always', 'IfNotPresent', 'Never'], { default: 'IfNotPresent', description: 'When to pull image.' })
    ),
    command: Type.Optional(
      Type.Array(Type.String(), { description: 'Entrypoint of the workload container; the image default when absent.' })
    ),
    args: Type.Optional(Type.Array(Type.String(), { description: 'Arguments to the entrypoint.' })),
    env: Type.Optional(
      Type.Array(EnvVarSchema, { maxItems: 256, ...listMap('name'), description: 'Environment of the workload container, keyed by name.' })
    ),
    imagePullSecrets: Type.Optional(
      Type.Array(Type.Object({ name: Type.String({ minLength: 1, description: 'Secret name.' }) }), {
        maxItems: 16,
        ...listMap('name'),
        description: 'Secrets in the Instance namespace for pulling image.'
      })
    ),
    ports: Type.Optional(
      Type.Array(InstancePortSchema, {
        maxItems: 32,
        ...listMap('port', 'protocol'),
        description:
          'Ports exposed through the NodePort Service named after the Instance. An unchanged (port, protocol) ' +
          'keeps its node port across stop, edit and start; edits made while stopped apply at the next start.',
        ...cel(
          {
            rule: 'self.all(a, self.all(b, a.port != b.port || a.protocol == b.protocol))',
            message: 'two entries share a port number with different protocols; the Service cannot carry both (use distinct port numbers)'
          },
          {
            rule: 'self.all(a, !has(a.name) || self.exists_one(b, has(b.name) && b.name == a.name))',
            message: 'port names must be unique'
          }
        )
      })
    ),
    resources: Type.Optional(
      Type.Object(
        {
          cpu: Type.Optional(
            Quantity({
              description: 'CPU of the workload container (requests = limits), not negative; the InstanceType default when absent.',
              ...cel(NON_NEGATIVE_QUANTITY_RULE)
            })
          ),
          memory: Type.Optional(
            Quantity({
              description: 'Memory of the workload container (requests = limits), not negative; the InstanceType default when absent.',
              ...cel(NON_NEGATIVE_QUANTITY_RULE)
            })
          ),
          accelerator: Type.Optional(AcceleratorSchema)
        },
        { description: 'Resources of the workload container.' }
      )
    ),
    sshPublicKey: Type.Optional(
      Type.Object(
        { name: Type.String({ minLength: 1, maxLength: 253, description: 'Secret name.' }) },
        {
          description:
            'Secret in the Instance namespace with key authorized_keys. When set, an SSH sidecar on 22/TCP ' +
            '(Service port ssh) lets those keys enter the workload container.'
        }
      )
    ),
    workspace: Type.Optional(
      Type.Object(
        {
          mountPath: Type.Optional(
            Type.String({
              default: '/workspace',
              pattern: '^/',
              description: 'Absolute path of the workspace volume in the workload container.'
            })
          ),
          size: Type.Optional(
            Quantity({ description: 'Size limit of an ephemeral (emptyDir) workspace, not negative.', ...cel(NON_NEGATIVE_QUANTITY_RULE) })
          ),
          claimName: Type.Optional(
            Type.String({
              minLength: 1,
              maxLength: 253,
              description: 'Existing PersistentVolumeClaim to mount instead of an ephemeral workspace.'
            })
          ),
          persistent: Type.Optional(PersistentWorkspaceSchema)
        },
        {
          description:
            'The workspace volume: ephemeral (emptyDir) unless claimName names an existing claim or persistent asks for ' +
            'a claim of its own; size, claimName and persistent are exclusive.',
          ...cel(
            {
              rule: '!(has(self.size) && has(self.claimName))',
              message: 'size and claimName are exclusive: an ephemeral size or a claim'
            },
            {
              rule: '!(has(self.persistent) && has(self.size))',
              message: 'persistent and size are exclusive: a persistent workspace takes its size in persistent.size',
              fieldPath: '.persistent'
            },
            {
              rule: '!(has(self.persistent) && has(self.claimName))',
              message: 'persistent and claimName are exclusive: a claim of its own or an existing claim',
              fieldPath: '.persistent'
            }
          )
        }
      )
    ),
    nodeName: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 253,
        pattern: DNS_SUBDOMAIN_PATTERN,
        description:
          'Pin the Pod to this node, a Node name (a DNS subdomain), as required node affinity (the scheduler and device plugins still run).'
      })
    ),
    stop: Type.Optional(Type.Boolean({ default: false, description: 'true: no Pod; the Service and its node ports stay. false: run.' }))
  },
  {
    description: 'The desired workspace.',
    ...cel(
      {
        rule: "!has(self.sshPublicKey) || !has(self.ports) || self.ports.all(p, p.port != 22 || p.protocol == 'TCP')",
        message: 'with sshPublicKey set, port 22 is the SSH port: only 22/TCP may be listed',
        fieldPath: '.ports'
      },
      {
        rule: '!has(oldSelf.workspace) || !has(oldSelf.workspace.persistent) || (has(self.workspace) && has(self.workspace.persistent))',
        message: PERSISTENT_REMOVED_MESSAGE,
        fieldPath: '.workspace'
      }
    )
  }
)
export type InstanceSpec = Static<typeof InstanceSpecSchema>

/** A port as status names it: name, port and protocol. */
function statusPortFields(name: string, port: string) {
  return {
    name: Type.String({ description: name }),
    port: Type.Integer({ description: port }),
    protocol: Type.String({ description: 'TCP, UDP or SCTP.' })
  }
}

/** Instance status, as the sync hook writes it. */
export const InstanceStatusSchema = Type.Object(
  {
    phase: Type.Optional(
      StringEnum(INSTANCE_PHASES, {
        description:
          'Pending, Queued (its Pod waits for quota in a Kueue LocalQueue), Starting, Running, Stopping, Stopped, Failed or Deleting.'
      })
    ),
    message: Type.Optional(Type.String({ description: 'One sentence about the phase.' })),
    podName: Type.Optional(Type.String({ description: 'The observed Pod.' })),
    nodeName: Type.Optional(Type.String({ description: 'Node of the observed Pod.' })),
    podIP: Type.Optional(Type.String({ description: 'IP of the observed Pod.' })),
    hostIP: Type.Optional(Type.String({ description: 'IP of the node hosting the observed Pod.' })),
    ports: Type.Optional(
      Type.Array(
        Type.Object({
          ...statusPortFields('The spec port name, or <protocol>-<port>, or ssh.', 'The Service port.'),
          nodePort: Type.Optional(Type.Integer({ description: 'The node port allocated on the observed Service.' }))
        }),
        { description: 'Ports of the observed Service with their node ports.' }
      )
    ),
    nodePorts: Type.Optional(
      Type.String({
        description:
          'Every allocated node port as <port>:<nodePort>/<protocol>, comma-separated (8888:31000/TCP,22:31022/TCP): ' +
          'status.ports on one line, for the Ports column of kubectl get.'
      })
    ),
    accessAddresses: Type.Optional(
      Type.Array(Type.String(), { description: '<hostIP>:<nodePort> per port while a Pod runs (externalTrafficPolicy Local).' })
    ),
    connect: Type.Optional(
      Type.Object(
        {
          address: Type.Optional(
            Type.String({
              description:
                "The host users reach the Instance at: the Setting instance-access-address when set, else the Pod's host IP " +
                '(an IP address, IPv6 without brackets, or a DNS name).'
            })
          ),
          ssh: Type.Optional(
            Type.String({
              description:
                'The command that opens an SSH session (ssh -p <ssh node port> root@<address>), while the Pod runs and ' +
                'spec.sshPublicKey is set.'
            })
          ),
          ports: Type.Optional(
            Type.Array(
              Type.Object({
                ...statusPortFields('The spec port name, or <protocol>-<port>.', 'The spec port (the container and Service port).'),
                endpoint: Type.String({ description: '<address>:<nodePort>, an IPv6 address in brackets.' })
              }),
              { description: "One entry per spec port with an allocated node port, in the Service's order." }
            )
          ),
          message: Type.Optional(
            Type.String({ description: 'Why no address is given although the Pod runs (the Setting instance-access-address is unusable).' })
          )
        },
        { description: 'How to reach the running Instance; present in phase Running only.' }
      )
    ),
    accelerator: Type.Optional(
      Type.Object(
        {
          family: Type.String({ description: 'The accelerator family.' }),
          count: Type.Integer({ description: 'Number of accelerators.' }),
          resources: StringMap('Extended resources requested by the main container.'),
          claim: Type.Optional(
            Type.String({
              description:
                "With a DRA InstanceType: the Pod's ResourceClaim, made from the Instance's ResourceClaimTemplate " +
                '(kubectl get resourceclaim <claim> shows the allocated devices).'
            })
          )
        },
        { description: 'What the observed Pod requests for the workload container.' }
      )
    ),
    workspace: Type.Optional(
      Type.Object(
        {
          claimName: Type.String({ description: 'The PersistentVolumeClaim of the workspace, <instance>-workspace.' }),
          phase: Type.Optional(Type.String({ description: "The claim's phase: Pending, Bound or Lost." })),
          capacity: Type.Optional(Type.String({ description: 'The storage of the bound volume, as the claim reports it.' })),
          requested: Type.Optional(Type.String({ description: 'The storage the claim requests.' })),
          storageClassName: Type.Optional(Type.String({ description: "The claim's StorageClass." })),
          message: Type.Optional(Type.String({ description: 'Why the claim waits, or why it differs from spec.workspace.persistent.' }))
        },
        { description: 'With spec.workspace.persistent: the observed claim.' }
      )
    ),
    lifecycle: Type.Optional(
      Type.Object(
        {
          idleSince: Type.Optional(
            Type.String({ format: 'date-time', description: "Since when no GPU activity was observed (the Pod's start at the earliest)." })
          ),
          stopAt: Type.Optional(Type.String({ format: 'date-time', description: 'When the Instance is stopped, as things stand.' })),
          stopReason: Type.Optional(StringEnum(STOP_REASONS, { description: 'Why it stops at stopAt.' })),
          postponedUntil: Type.Optional(
            Type.String({
              format: 'date-time',
              description: 'The postponement of an idle stop in force (gpustack.ai/keep-running-until, clamped to maxPostpone).'
            })
          ),
          stopRequested: Type.Optional(Type.Boolean({ description: 'The stop is due and was handed to the agent.' })),
          stoppedBy: Type.Optional(
            Type.Object(
              {
                reason: StringEnum(STOP_REASONS, { description: 'Why the lifecycle stopped it.' }),
                at: Type.String({ format: 'date-time', description: 'When.' })
              },
              { description: 'While spec.stop is true: the Instance was stopped by its lifecycle (annotation gpustack.ai/stopped-by).' }
            )
          )
        },
        { description: "When the Instance stops under its InstanceType's spec.lifecycle (docs/lifecycle.md)." }
      )
    ),
    conditions: Type.Optional(
      Type.Array(conditionSchema('Ready, SpecValid, UpToDate, Admitted, Evicted or StopScheduled.'), {
        ...listMap('type'),
        description:
          'Ready, SpecValid and UpToDate; with a queued InstanceType, Admitted, and Evicted once Kueue evicted its Pod; ' +
          'with a lifecycle, StopScheduled.'
      })
    ),
    observedGeneration: Type.Optional(Type.Integer({ description: 'The generation Metacontroller last synced.' }))
  },
  { description: 'What the controller observed.' }
)
export type InstanceStatus = Static<typeof InstanceStatusSchema>

/** Instance as stored. */
export const InstanceSchema = CustomResource(
  { spec: InstanceSpecSchema, status: Type.Optional(InstanceStatusSchema) },
  {
    description: 'A container workspace backed by a Pod with an accelerator, reached through a NodePort Service.',
    // The name becomes the part-of label value (at most 63) and the Service name (a DNS-1035
    // label); the API server itself only asks a DNS subdomain of custom resources.
    ...cel(
      nameRule(
        63,
        DNS1035_LABEL_PATTERN,
        'an Instance name must be a DNS-1035 label: at most 63 lower-case letters, digits and -, starting ' +
          'with a letter and ending with a letter or digit (it names the Pod label and the Service)'
      )
    )
  }
)
export type Instance = Static<typeof InstanceSchema>
