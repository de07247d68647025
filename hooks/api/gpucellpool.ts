/**
 * GPUCellPool (`cells.kubeswift.io/v1alpha1`, namespaced): a pool of GPU cells, each a KubeSwift
 * VM with one whole GPU passed through that joins a workload cluster as a node (docs/cellpool.md).
 *
 * Field names follow gpucellpool v0.1.1 (its `config/crd/bases/cells.kubeswift.io_gpucellpools.yaml`
 * and `api/v1alpha1/gpucellpool_types.go`), so that pools written for it apply under kubectl's
 * strict field validation, which refuses a field the schema does not declare. Fields this version
 * does not act on are declared anyway and say so in their description; where such a field asks
 * for behaviour this version lacks, the admission webhook and the sync hook refuse it
 * (hooks/cellpool/rules/validate.ts) rather than ignore it.
 *
 * The schema states every rule that needs no other object, as CEL where it spans fields; the hooks
 * check them again to explain them in status.
 */
import { Type, type Static } from '@sinclair/typebox'
import { TaintSchema } from './cellnodeset.ts'
import { CustomResource, OpenObject, StringEnum, StringMap, cel, conditionSchema, listMap, nameRule, type CelRule } from './kit.ts'
import { DNS_LABEL_PATTERN } from '../k8s/names.ts'

/** Type key of GPUCellPools in a v2 hook request. */
export const GPU_CELL_POOL_TYPE_KEY = 'GPUCellPool.cells.kubeswift.io/v1alpha1'
/** API version of KubeSwift's SwiftSeedProfile (cloud-init seed of a guest). */
export const SEED_API_VERSION = 'seed.kubeswift.io/v1alpha1'
/** API version of KubeSwift's SwiftGuest (the VM). */
export const SWIFT_API_VERSION = 'swift.kubeswift.io/v1alpha1'
/** Type key of SwiftSeedProfiles in a v2 hook request. */
export const SEED_PROFILE_TYPE_KEY = 'SwiftSeedProfile.seed.kubeswift.io/v1alpha1'
/** Type key of SwiftGuests in a v2 hook request. */
export const SWIFT_GUEST_TYPE_KEY = 'SwiftGuest.swift.kubeswift.io/v1alpha1'
/**
 * Annotation on a cell's machine (and a Cluster API cell's KubeSwiftMachine): the hash of what
 * the cell was built from (its provisioner's `templateHash`).
 */
export const TEMPLATE_HASH_ANNOTATION = 'cells.kubeswift.io/template-hash'
/** Type key of Secrets (the bootstrap Secrets, children; the join Secret, related). */
export const SECRET_TYPE_KEY = 'Secret.v1'

/** Phases of a cell (docs/cellpool.md, "Phases"). */
export const CELL_PHASES = [
  'Pending',
  'AllocatingGPU',
  'GuestProvisioning',
  'Booting',
  'Joining',
  'AwaitingGPUCapacity',
  'Ready',
  'Draining',
  'Deleting',
  'Failed'
] as const
export type CellPhase = (typeof CELL_PHASES)[number]

/** Condition types of a pool. */
export const POOL_CONDITION_TYPES = [
  'Ready',
  'Progressing',
  'Updated',
  'WorkloadClusterReachable',
  'ScalingActive',
  'PhysicalGPUsAvailable'
] as const

/** The longest pool name: a cell name `<pool>-<i>` (i up to five digits) must stay a 63-character DNS label. */
export const POOL_NAME_MAX = 57
/** The most cells a pool may ask for: cell indices then keep to five digits (0 to 99999). */
export const MAX_CELLS = 100000

/**
 * A Go duration as gpucellpool's `metav1.Duration` fields take it (`90s`, `15m`, `1h30m`, `0`),
 * without a sign. The CEL rule checks the form first, so that `duration()` never meets a string
 * it cannot parse (CEL's `&&` yields false when its left side is false, whatever the right). No
 * backslashes (`[.]` for a dot): a CEL string literal would read `\\.` as an invalid escape.
 */
export const DURATION_PATTERN = '^(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$'

/**
 * An optional duration field: it always has a default, which the API server fills in, so no pool
 * has to state it. `positive` refuses 0 (a budget); otherwise 0 turns the wait off.
 */
function DefaultedDuration(defaultValue: string, description: string, positive: boolean) {
  const rule: CelRule = positive
    ? {
        rule: `self.matches('${DURATION_PATTERN}') && duration(self) > duration('0s')`,
        message: 'must be a positive duration such as 90s, 15m or 1h30m'
      }
    : {
        rule: `self.matches('${DURATION_PATTERN}') && duration(self) >= duration('0s')`,
        message: 'must be a duration such as 0s, 90s, 15m or 1h30m'
      }
  return Type.Optional(Type.String({ maxLength: 64, default: defaultValue, description, ...cel(rule) }))
}

const LocalRef = (description: string) =>
  Type.Object(
    { name: Type.String({ maxLength: 253, description: 'Name of the referent, in the pool namespace.' }) },
    { description, 'x-kubernetes-map-type': 'atomic' }
  )

/** The DRA claim wiring of a cell's GPU (KubeSwift `spec.gpuResourceClaim`). */
export const CellGpuDraSchema = Type.Object(
  {
    resourceClaimTemplateName: Type.Optional(
      Type.String({ maxLength: 253, description: 'A ResourceClaimTemplate: each cell gets its own claim. Recommended.' })
    ),
    resourceClaimName: Type.Optional(
      Type.String({
        maxLength: 253,
        description:
          'One pre-created ResourceClaim shared by the cells. A VFIO device backs one running VM, so only for a pool of at most one cell.'
      })
    ),
    requestName: Type.Optional(
      Type.String({ default: 'gpu', maxLength: 63, description: 'The device request inside the claim whose allocation the VM gets.' })
    ),
    tier: Type.Optional(
      StringEnum(['pcie'], {
        default: 'pcie',
        description: 'KubeSwift hypervisor and firmware tier; pcie (Cloud Hypervisor) is the only one a cell supports.'
      })
    ),
    hugepages: Type.Optional(
      StringEnum(['', '1Gi', '2Mi'], { description: 'Hugepage size backing the GPU memory of the VM: 1Gi, 2Mi or empty (none).' })
    )
  },
  {
    description: 'DRA backend: the claim the cell launcher pod carries. Exactly one of resourceClaimTemplateName and resourceClaimName.',
    ...cel({
      rule:
        "(has(self.resourceClaimTemplateName) && self.resourceClaimTemplateName != '') != " +
        "(has(self.resourceClaimName) && self.resourceClaimName != '')",
      message: 'set exactly one of resourceClaimTemplateName and resourceClaimName'
    })
  }
)

/** The GPU of one cell. */
export const CellGpuSchema = Type.Object(
  {
    count: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1,
        default: 1,
        description: 'Whole GPUs per cell; 1 is the only value (HAMi shares it inside the cell).'
      })
    ),
    backend: Type.Optional(
      StringEnum(['DRA', 'Native'], {
        default: 'DRA',
        description: 'DRA: the scheduler allocates the GPU through a ResourceClaim. Native: KubeSwift allocates it from a SwiftGPUProfile.'
      })
    ),
    dra: Type.Optional(CellGpuDraSchema),
    native: Type.Optional(
      Type.Object(
        { gpuProfileRef: LocalRef('The SwiftGPUProfile in the pool namespace.') },
        { description: 'Native backend: the SwiftGPUProfile the VM takes its GPU from.' }
      )
    )
  },
  {
    description: 'The one whole GPU passed into each cell VM.',
    ...cel({
      rule: "(has(self.backend) && self.backend == 'Native') ? (has(self.native) && !has(self.dra)) : (has(self.dra) && !has(self.native))",
      message: 'backend DRA needs dra and no native; backend Native needs native and no dra'
    })
  }
)

/** A Node taint as the pool declares it; `timeAdded` is accepted for gpucellpool manifests and ignored. */
export const PoolTaintSchema = Type.Object(
  {
    ...TaintSchema.properties,
    timeAdded: Type.Optional(
      Type.String({ description: 'Accepted for compatibility with gpucellpool manifests (an RFC 3339 time); ignored.' })
    )
  },
  { description: 'A Node taint; taints are matched by key and effect.' }
)

/** How a cell VM is made. */
export const CellSpecSchema = Type.Object(
  {
    provisioner: Type.Optional(
      StringEnum(['SwiftGuest', 'ClusterAPI'], {
        default: 'SwiftGuest',
        description:
          'SwiftGuest: a KubeSwift SwiftGuest per cell. ClusterAPI: a Cluster API Machine per cell, of the Cluster ' +
          'clusterAPI.clusterName, with a KubeSwiftMachine the workload agent creates.'
      })
    ),
    guestTemplate: OpenObject({
      description:
        'A KubeSwift SwiftGuestSpec, copied verbatim into every cell guest, at most 64 KiB as JSON. A cell may set imageRef, ' +
        'guestClassRef (both required), dataDiskRef, dataDiskRefs, interfaces (names are DNS labels), network, storage, ' +
        'osType (linux), schedulerName, topologySpreadConstraints and guestAgent; any other field is refused. Set by the ' +
        'controller: seedProfileRef, gpuProfileRef, gpuResourceClaim, nodeName, migration, runPolicy. Not supported on the ' +
        'GPU path: kernelRef, kernelCmdline, cloneFromSnapshot, vhostUserDevices, filesystems, osType windows.'
    }),
    gpu: CellGpuSchema,
    spreadPolicy: Type.Optional(
      StringEnum(['Spread', 'Pack'], {
        default: 'Spread',
        description: 'Accepted for gpucellpool manifests, not acted on: KubeSwift GPU launcher pods ignore topology spread constraints.'
      })
    ),
    nodeIPFrom: Type.Optional(
      Type.String({
        maxLength: 63,
        pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$',
        description:
          'Name of a guestTemplate interface whose IP is the node address (the {{ nodeIPInterface }} token), a DNS label: it goes ' +
          'into the boot script. Empty: the primary interface.'
      })
    ),
    clusterAPI: Type.Optional(
      Type.Object(
        {
          clusterName: Type.String({
            minLength: 1,
            maxLength: 63,
            description:
              'The Cluster API Cluster, in the pool namespace, whose Machines the cells are. Required with provisioner ClusterAPI.'
          }),
          version: Type.Optional(Type.String({ description: 'Kubernetes version copied to each Machine spec.version.' })),
          bootstrapConfigTemplateRef: Type.Optional(
            Type.Object(
              {
                apiGroup: Type.String({ minLength: 1, description: 'API group of the bootstrap config template.' }),
                kind: Type.String({ minLength: 1, description: 'Kind of the bootstrap config template.' }),
                name: Type.String({ minLength: 1, description: 'Name of the template in the pool namespace.' })
              },
              {
                description:
                  'A Cluster API bootstrap config template (its kind ends in Template) in the pool namespace: each Machine gets a ' +
                  'config of the kind without Template, at v1beta2, copied from it. Absent: each Machine gets a data Secret rendered ' +
                  'from bootstrap.joinSecretRef. With it, joinSecretRef must not be set.'
              }
            )
          )
        },
        {
          description:
            'Settings of the ClusterAPI provisioner; required with it. The guestTemplate may then carry only imageRef, ' +
            'guestClassRef and interfaces.'
        }
      )
    )
  },
  { description: 'The shape of one cell: its VM and its GPU.' }
)

/** How a cell joins the workload cluster. */
export const BootstrapSpecSchema = Type.Object(
  {
    provider: Type.Optional(
      StringEnum(['Opaque'], {
        default: 'Opaque',
        description: 'Opaque: the join template is used as written, with the tokens replaced. The only value.'
      })
    ),
    joinSecretRef: Type.Optional(
      LocalRef(
        'Secret in the pool namespace holding the cloud-init join template. Required. Tokens: {{ cellName }}, {{ poolName }}, ' +
          '{{ nodeLabels }} (required), {{ nodeIPInterface }}, {{ expectedGPUs }}, {{ nodeName }}, {{ cellIndex }}, {{ nodeTaints }}.'
      )
    ),
    joinSecretKey: Type.Optional(
      Type.String({ default: 'user-data', maxLength: 253, description: 'Key of the template in the join Secret.' })
    ),
    hostname: Type.Optional(
      StringEnum(['CellName', 'None'], {
        default: 'CellName',
        description:
          'CellName: the guest hostname, and so the Node name, is the cell name (through the seed metadata). None: the image decides.'
      })
    ),
    readyTimeout: DefaultedDuration(
      '15m',
      'Budget of each phase up to Joining before a cell first becomes Ready; past it the cell fails.',
      true
    )
  },
  { description: 'How a cell joins the workload cluster.' }
)

/** The workload cluster the cells join. */
export const WorkloadClusterSpecSchema = Type.Object(
  {
    kubeconfigSecretRef: Type.Object(
      { name: Type.String({ maxLength: 253, description: 'Name of the Secret, in the pool namespace.' }) },
      {
        description:
          'Secret with a kubeconfig for the workload cluster, read by the workload agent. It must carry the label ' +
          'cells.kubeswift.io/workload-kubeconfig: "true".',
        'x-kubernetes-map-type': 'atomic'
      }
    ),
    key: Type.Optional(Type.String({ default: 'value', maxLength: 253, description: 'Key of the kubeconfig in that Secret.' })),
    node: Type.Optional(
      Type.Object(
        {
          labels: Type.Optional(
            StringMap(
              'Labels of each cell Node, at most 64. Labels a kubelet may set on itself are set at registration ({{ nodeLabels }}); ' +
                'the others (node-role.kubernetes.io/...) by the workload agent after the Node joins. Refused: ' +
                'node-restriction.kubernetes.io/ labels, the control-plane and etcd roles (control-plane, master, controlplane, etcd), ' +
                'and other kubernetes.io and k8s.io labels NodeRestriction forbids a kubelet. Labels and annotations together take at most 16 KiB.',
              { maxProperties: 64 }
            )
          ),
          annotations: Type.Optional(
            StringMap('Annotations of each cell Node, at most 64, set by the workload agent after the Node joins.', { maxProperties: 64 })
          ),
          taints: Type.Optional(
            Type.Array(PoolTaintSchema, {
              maxItems: 64,
              description:
                'Taints of each cell Node: at registration ({{ nodeTaints }}) and ensured by the workload agent. Refused: ' +
                'node.kubernetes.io/ and node.cloudprovider.kubernetes.io/ taints and taints on the control-plane and etcd role keys.'
            })
          )
        },
        { description: 'What each cell Node carries.' }
      )
    )
  },
  { description: 'The cluster the cells join as nodes.' }
)

/** How the pool recognises a cell GPU capacity. */
export const CapacitySpecSchema = Type.Object(
  {
    provider: Type.Optional(
      StringEnum(['HAMi'], { default: 'HAMi', description: 'The GPU sharing layer inside the cells; HAMi is the only value.' })
    ),
    readyTimeout: DefaultedDuration(
      '5m',
      'Budget of AwaitingGPUCapacity (Node Ready, GPU not yet registered by HAMi) before a cell first becomes Ready.',
      true
    ),
    hami: Type.Optional(
      Type.Object(
        {
          mode: Type.Optional(
            StringEnum(['DevicePlugin', 'DRA'], {
              default: 'DevicePlugin',
              description:
                "DevicePlugin: HAMi Node registration and Pod annotations. DRA: HAMi's DRA driver; the workload agent reads devices from " +
                "its ResourceSlices, allocations from ResourceClaims and demand from pending Pods' unallocated claims on deviceClassName."
            })
          ),
          expectedDevicesPerCell: Type.Optional(
            Type.Integer({
              minimum: 1,
              description: 'Healthy HAMi devices a cell Node must register before it counts Ready. Default: cell.gpu.count.'
            })
          ),
          deviceClassName: Type.Optional(
            Type.String({
              maxLength: 253,
              description: 'HAMi DeviceClass of DRA mode (e.g. hami-core-gpu.project-hami.io); required with mode DRA.'
            })
          ),
          resourceName: Type.Optional(
            Type.String({
              default: 'nvidia.com/gpu',
              maxLength: 253,
              description:
                'HAMi whole-device resource name; demand is read for it and its gpumem and gpucores siblings. Not in gpucellpool: ' +
                'added because a HAMi installation may rename its resources.'
            })
          )
        },
        {
          description: 'HAMi settings.',
          ...cel({
            rule: "!has(self.mode) || self.mode != 'DRA' || (has(self.deviceClassName) && size(self.deviceClassName) > 0)",
            message:
              "spec.capacity.hami.deviceClassName is required with mode DRA: it names the DeviceClass of HAMi's DRA driver in the workload cluster"
          })
        }
      )
    )
  },
  { description: 'How a cell GPU capacity is recognised in the workload cluster.' }
)

/** Demand-driven sizing. */
export const AutoscalingSpecSchema = Type.Object(
  {
    enabled: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'true: the pool sizes itself from pending GPU Pods in the workload cluster (status.desiredReplicas).'
      })
    ),
    minReplicas: Type.Optional(
      Type.Integer({ minimum: 0, maximum: MAX_CELLS, description: 'Floor; default spec.replicas. Required with scaleDown Auto.' })
    ),
    maxReplicas: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_CELLS, description: 'Ceiling; required when enabled.' })),
    stabilizationWindow: DefaultedDuration('10m', 'Time after a scale-up before the next scale-up.', false),
    scaleDown: Type.Optional(
      StringEnum(['Manual', 'Auto'], {
        default: 'Manual',
        description: 'Manual: only spec changes shrink the pool. Auto: an idle cell drains once demand is gone.'
      })
    ),
    scaleDownStabilizationWindow: DefaultedDuration(
      '30m',
      'How long demand must stay absent, and the time since the last scale action, before a scale-down.',
      false
    )
  },
  {
    description: 'Demand-driven desired size; the hook never writes spec.replicas.',
    ...cel(
      {
        rule: '!(has(self.enabled) && self.enabled) || has(self.maxReplicas)',
        message: 'maxReplicas is required when autoscaling is enabled'
      },
      {
        rule: '!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas',
        message: 'minReplicas must not exceed maxReplicas'
      },
      { rule: "!has(self.scaleDown) || self.scaleDown != 'Auto' || has(self.minReplicas)", message: 'scaleDown Auto needs minReplicas' }
    )
  }
)

/** GPUCellPool spec. */
export const GPUCellPoolSpecSchema = Type.Object(
  {
    replicas: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: MAX_CELLS,
        default: 1,
        description: 'Number of cells (the scale subresource); with autoscaling, the default floor.'
      })
    ),
    cell: CellSpecSchema,
    bootstrap: Type.Optional(BootstrapSpecSchema),
    workloadCluster: WorkloadClusterSpecSchema,
    capacity: Type.Optional(CapacitySpecSchema),
    autoscaling: Type.Optional(AutoscalingSpecSchema),
    deletion: Type.Optional(
      Type.Object(
        {
          policy: Type.Optional(
            StringEnum(['Drain', 'Force'], {
              default: 'Drain',
              description: 'Drain: deleting the pool waits for each cell GPU Pods to end (up to drainTimeout). Force: cells go at once.'
            })
          ),
          drainTimeout: DefaultedDuration(
            '10m',
            'Longest wait for draining after the pool deletion, measured from its deletionTimestamp.',
            false
          )
        },
        { description: 'What deleting the pool does to cells still in use.' }
      )
    ),
    updatePolicy: Type.Optional(
      Type.Object(
        {
          type: Type.Optional(
            StringEnum(['Manual', 'RollingUpdate'], {
              default: 'Manual',
              description: 'Manual: existing cells keep their template. RollingUpdate: outdated cells drain and are rebuilt one at a time.'
            })
          )
        },
        { description: 'What a change of guestTemplate, gpu, nodeIPFrom or bootstrap.hostname does to existing cells.' }
      )
    )
  },
  {
    description: 'The desired pool.',
    ...cel({
      rule:
        "!has(self.cell.gpu.dra) || !has(self.cell.gpu.dra.resourceClaimName) || self.cell.gpu.dra.resourceClaimName == '' || " +
        '((!has(self.replicas) || self.replicas <= 1) && (!has(self.autoscaling) || !has(self.autoscaling.enabled) || !self.autoscaling.enabled || ' +
        '!has(self.autoscaling.maxReplicas) || self.autoscaling.maxReplicas <= 1))',
      message: 'cell.gpu.dra.resourceClaimName backs one VM: only for a pool of at most one cell; use resourceClaimTemplateName',
      fieldPath: '.cell.gpu.dra.resourceClaimName'
    })
  }
)
export type GPUCellPoolSpec = Static<typeof GPUCellPoolSpecSchema>

/** Why a cell failed, kept as data while its index waits for its rebuild: the shown message is rendered from it. */
export const CellFailureSchema = Type.Object(
  {
    reason: Type.String({ description: 'Why the cell failed: ReadyTimeout or CapacityTimeout (a phase outlived its budget).' }),
    phase: Type.Optional(StringEnum(CELL_PHASES, { description: 'The phase the cell stayed in too long.' })),
    since: Type.String({ format: 'date-time', description: 'When the cell failed.' }),
    message: Type.String({ description: 'What failed, as it was observed when the cell failed.' })
  },
  { description: 'Why a Failed cell failed.' }
)
export type CellFailure = Static<typeof CellFailureSchema>

/** One cell, as the pool status records it. */
export const CellStatusSchema = Type.Object(
  {
    name: Type.String({ description: 'The cell name <pool>-<index>: also the SwiftGuest name and the Node name.' }),
    index: Type.Optional(Type.Integer({ minimum: 0, description: 'The cell index.' })),
    phase: Type.Optional(
      StringEnum(CELL_PHASES, {
        description:
          'Pending, AllocatingGPU, GuestProvisioning, Booting, Joining, AwaitingGPUCapacity, Ready, Draining, Deleting or Failed.'
      })
    ),
    reason: Type.Optional(
      Type.String({ description: 'One CamelCase word on why the cell is in its phase; at most 128 characters (clipped).' })
    ),
    message: Type.Optional(
      Type.String({ description: 'What a person should know about the cell; at most 1024 characters (clipped, ending in …).' })
    ),
    guestUID: Type.Optional(Type.String({ description: 'The uid of the SwiftGuest: this incarnation of the cell.' })),
    hostNode: Type.Optional(
      Type.String({
        description: 'Infrastructure node whose GPU the cell holds; absent when the guest reports a name past 253 characters.'
      })
    ),
    devices: Type.Optional(
      Type.Array(Type.String(), { description: 'PCI addresses of the GPUs passed into the VM: at most 16, each at most 253 characters.' })
    ),
    nodeIP: Type.Optional(
      Type.String({
        description: 'The node address: the nodeIPFrom interface IP, else the primary IP (an address past 64 characters is not read).'
      })
    ),
    nodeName: Type.Optional(Type.String({ description: 'The cell Node in the workload cluster, once present.' })),
    templateHash: Type.Optional(
      Type.String({ description: 'Hash of what the cell was built from (guestTemplate, gpu, nodeIPFrom, hostname).' })
    ),
    failureCount: Type.Optional(Type.Integer({ minimum: 0, description: 'Failures of this index since the spec last changed.' })),
    failure: Type.Optional(CellFailureSchema),
    readyOnce: Type.Optional(Type.Boolean({ description: 'The cell has been Ready since it was built; phase budgets stop applying.' })),
    lastTransitionTime: Type.Optional(Type.String({ format: 'date-time', description: 'When the phase last changed.' }))
  },
  { description: 'One cell of the pool.' }
)
export type CellStatus = Static<typeof CellStatusSchema>

/** GPUCellPool status, as the sync hook writes it. */
export const GPUCellPoolStatusSchema = Type.Object(
  {
    observedGeneration: Type.Optional(Type.Integer({ description: 'The generation Metacontroller last synced.' })),
    replicas: Type.Optional(Type.Integer({ description: 'Cells the pool owns (the scale subresource).' })),
    readyCells: Type.Optional(Type.Integer({ description: 'Cells in phase Ready.' })),
    creatingCells: Type.Optional(
      Type.Integer({ description: 'Cells being created (Pending through AwaitingGPUCapacity, before their first Ready).' })
    ),
    drainingCells: Type.Optional(Type.Integer({ description: 'Cells draining.' })),
    failedCells: Type.Optional(Type.Integer({ description: 'Cells in phase Failed.' })),
    desiredReplicas: Type.Optional(
      Type.Integer({ description: 'The size the pool is heading for: spec.replicas, or the autoscaler decision.' })
    ),
    selector: Type.Optional(
      Type.String({ description: 'Label selector of the cells (cells.kubeswift.io/pool=<pool>), for the scale subresource.' })
    ),
    demand: Type.Optional(
      Type.Object(
        {
          pendingPods: Type.Integer({ description: 'Pending GPU Pods that could run on a pool Node.' }),
          satisfiable: Type.Integer({ description: 'Of those, Pods one cell could run.' }),
          lastObserved: Type.Optional(Type.String({ format: 'date-time', description: 'When the workload agent read them.' }))
        },
        { description: 'The autoscaler input: demand in the workload cluster.' }
      )
    ),
    cellDeviceShape: Type.Optional(
      Type.Object(
        {
          memoryMiB: Type.Integer({ description: 'Device memory of one cell GPU, MiB.' }),
          cores: Type.Integer({ description: 'Compute of one cell GPU, percent (HAMi devcore).' }),
          type: Type.Optional(Type.String({ description: 'The device type HAMi reported.' }))
        },
        { description: 'The GPU of a Ready cell, remembered so a pool scaled to zero can still judge demand.' }
      )
    ),
    lastScaleUpTime: Type.Optional(Type.String({ format: 'date-time', description: 'When the autoscaler last scaled up.' })),
    lastScaleDownTime: Type.Optional(Type.String({ format: 'date-time', description: 'When the autoscaler last scaled down.' })),
    demandFreeSince: Type.Optional(Type.String({ format: 'date-time', description: 'Since when no satisfiable Pod has been pending.' })),
    cells: Type.Optional(Type.Array(CellStatusSchema, { ...listMap('name'), description: 'One row per cell the pool owns.' })),
    conditions: Type.Optional(
      Type.Array(conditionSchema('Ready, Progressing, Updated, WorkloadClusterReachable, ScalingActive or PhysicalGPUsAvailable.'), {
        ...listMap('type'),
        description:
          'Ready, Progressing, Updated, WorkloadClusterReachable, (autoscaling only) ScalingActive and PhysicalGPUsAvailable (free physical GPUs for a scale-up).'
      })
    )
  },
  { description: 'What the controller observed.' }
)
export type GPUCellPoolStatus = Static<typeof GPUCellPoolStatusSchema>

/** GPUCellPool as stored. */
export const GPUCellPoolSchema = CustomResource(
  { spec: GPUCellPoolSpecSchema, status: Type.Optional(GPUCellPoolStatusSchema) },
  {
    description: 'A pool of GPU cells: KubeSwift VMs with one whole GPU each, joined to a workload cluster as nodes that HAMi shares.',
    // Cell names <pool>-<index> are VM hostnames and Node names: DNS labels of at most 63.
    ...cel(
      nameRule(
        POOL_NAME_MAX,
        DNS_LABEL_PATTERN,
        `a GPUCellPool name must be a DNS label of at most ${POOL_NAME_MAX} characters (lower-case letters, digits and -, ` +
          'starting and ending with a letter or digit), so that its cell names <pool>-<index> stay Node names'
      )
    )
  }
)
export type GPUCellPool = Static<typeof GPUCellPoolSchema>
