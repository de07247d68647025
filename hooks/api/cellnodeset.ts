/**
 * CellNodeSet (`cells.kubeswift.io/v1alpha1`, namespaced): a cell pool's request to, and view of,
 * the workload cluster its cells join (docs/workload.md).
 *
 * One per GPUCellPool, named after it, a child of the pool. The cellpool sync hook writes its spec
 * (which Nodes the pool expects and what they must carry); the workload agent carries the spec out
 * in the workload cluster and writes the status (what it saw there). This module is the contract
 * between the two: the schema, the label and annotation keys both sides use, and the type keys.
 */
import { Type, type Static } from '@sinclair/typebox'
import { CustomResource, StringEnum, StringMap, TAINT_EFFECTS, conditionSchema, listMap } from './kit.ts'

/** API group and version of GPUCellPool and CellNodeSet. */
export const CELLS_API_VERSION = 'cells.kubeswift.io/v1alpha1'
/** Type key of CellNodeSets in a v2 hook request. */
export const CELL_NODE_SET_TYPE_KEY = 'CellNodeSet.cells.kubeswift.io/v1alpha1'

/** Label on every child of a pool and on its Nodes: the pool's name. */
export const POOL_LABEL = 'cells.kubeswift.io/pool'
/** Label on every child of a pool and on its Nodes: the pool's uid. The agent writes only Nodes carrying it. */
export const POOL_UID_LABEL = 'cells.kubeswift.io/pool-uid'
/** Label on a cell's children and Node: the cell name (`<pool>-<i>`). */
export const CELL_LABEL = 'cells.kubeswift.io/cell'
/** Label on a cell's children and Node: the cell index, as a decimal string. */
export const CELL_INDEX_LABEL = 'cells.kubeswift.io/cell-index'
/** The name of cell `index` of `pool`: `<pool>-<index>`, also its SwiftGuest, hostname and Node name. */
export function cellName(pool: string, index: number): string {
  return `${pool}-${index}`
}

/**
 * A cell index as names and the index label write it: decimal without leading zeros, at most five
 * digits (below the 100,000 cells a pool may have), so that each index has exactly one spelling.
 */
export const CELL_INDEX = /^(0|[1-9][0-9]{0,4})$/

/** The index in a cell's name, the inverse of {@link cellName}; undefined for any other name. */
export function cellIndexOf(pool: string, name: string): number | undefined {
  const prefix = `${pool}-`
  if (!name.startsWith(prefix)) return undefined
  const rest = name.slice(prefix.length)
  return CELL_INDEX.test(rest) ? Number(rest) : undefined
}

/** Label on a cell's Node: the uid of the SwiftGuest (VM) whose kubelet registered it. */
export const INSTANCE_LABEL = 'cells.kubeswift.io/instance'
/**
 * Node annotation in which releases before the record in `status.nodes[].applied` kept what the
 * agent set. A Node's kubelet may write it, so nothing in it is read; the agent drops it whenever
 * it writes the Node (docs/workload.md, "The record").
 */
export const MANAGED_ANNOTATION = 'cells.kubeswift.io/managed'
/** Label an admin puts on a kubeconfig Secret to let the agent use it (the opt-in). */
export const WORKLOAD_KUBECONFIG_LABEL = 'cells.kubeswift.io/workload-kubeconfig'
/** Finalizer the agent puts on every CellNodeSet it serves, so it can sweep the pool's Nodes. */
export const WORKLOAD_NODES_FINALIZER = 'cells.kubeswift.io/workload-nodes'
/** HAMi's Node annotation listing the devices it registered. */
export const HAMI_REGISTER_ANNOTATION = 'hami.io/node-nvidia-register'
/**
 * The driver of HAMi's DRA mode (Project-HAMi/k8s-dra-driver): one device per GPU, named
 * `hami-gpu-<minor>`, in a ResourceSlice whose pool and `nodeName` are the Node's name, with
 * consumable capacities `cores` (100) and `memory` (bytes) and `allowMultipleAllocations: true`.
 */
export const HAMI_DRA_DRIVER = 'hami-core-gpu.project-hami.io'
/** The DRA driver of KubeSwift's VFIO GPUs in the infrastructure cluster (the cells' physical GPUs). */
export const PHYSICAL_GPU_DRIVER = 'gpu.kubeswift.io'

/** Reasons of the CellNodeSet's `Reachable` condition. */
export const REACHABLE_REASONS = ['Reachable', 'CredentialInvalid', 'Forbidden', 'Unreachable'] as const
export type ReachableReason = (typeof REACHABLE_REASONS)[number]

/** A taint as a Node carries it (`key`, optional `value`, `effect`). */
export const TaintSchema = Type.Object(
  {
    key: Type.String({ minLength: 1, description: 'The taint key.' }),
    value: Type.Optional(Type.String({ description: 'The taint value (may be empty).' })),
    effect: StringEnum(TAINT_EFFECTS, {
      description: 'NoSchedule, PreferNoSchedule or NoExecute.'
    })
  },
  { description: 'A Node taint; taints are matched by key and effect.' }
)
export type Taint = Static<typeof TaintSchema>

/** The longest Machine providerID a CellNodeSet entry takes; the cellpool hook copies none longer. */
export const PROVIDER_ID_MAX = 512

/** One Node the pool expects: one per cell the pool holds, draining ones included. */
export const CellNodeSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 63, description: 'The Node name: the cell name.' }),
    instance: Type.Optional(
      Type.String({
        description:
          'The uid of the cell SwiftGuest, the value of the label cells.kubeswift.io/instance its kubelet registers; ' +
          'empty until the guest exists.'
      })
    ),
    providerID: Type.Optional(
      Type.String({
        maxLength: PROVIDER_ID_MAX,
        description:
          'Cluster API cells: the Machine providerID (kubeswift://<namespace>/<machine>). A Node with this spec.providerID and no ' +
          'cells.kubeswift.io/pool-uid label is the cell own registration (a bootstrap config template gives its kubelet no pool ' +
          'labels), and the agent writes the pool labels onto it.'
      })
    ),
    labels: Type.Optional(StringMap('Labels the Node must carry.')),
    annotations: Type.Optional(StringMap('Annotations the Node must carry.')),
    taints: Type.Optional(Type.Array(TaintSchema, { description: 'Taints the Node must carry (matched by key and effect).' })),
    cordon: Type.Optional(
      Type.Boolean({
        description: 'true: the Node must be unschedulable (the cell drains). false: the agent clears unschedulable only if it set it.'
      })
    ),
    readyOnce: Type.Optional(
      Type.Boolean({
        description:
          "true: the cell's machine named by instance was Ready once. The cellpool controller's own record, read back on its next " +
          'sync so that a pool status older than this spec cannot forget it; the agent ignores it.'
      })
    )
  },
  { description: 'A Node the pool expects in the workload cluster and what it must carry.' }
)
export type CellNode = Static<typeof CellNodeSchema>

/** What the cellpool hook asks of the workload cluster. */
export const CellNodeSetSpecSchema = Type.Object(
  {
    kubeconfigSecretRef: Type.Object(
      {
        name: Type.String({ minLength: 1, description: 'Secret in this namespace holding the workload cluster kubeconfig.' }),
        key: Type.String({ minLength: 1, description: 'Key of the kubeconfig in that Secret.' })
      },
      {
        description:
          'The workload cluster kubeconfig. The Secret must carry the label cells.kubeswift.io/workload-kubeconfig: "true", ' +
          'and the kubeconfig may use only server, certificate-authority-data, tls-server-name, token, ' +
          'client-certificate-data and client-key-data.'
      }
    ),
    poolUID: Type.String({ minLength: 1, description: 'The pool uid: the value of the label cells.kubeswift.io/pool-uid on its Nodes.' }),
    nodes: Type.Optional(
      Type.Array(CellNodeSchema, { ...listMap('name'), description: 'One entry per cell the pool holds (draining ones too).' })
    ),
    demand: Type.Optional(
      Type.Object(
        {
          resources: Type.Array(Type.String(), {
            description: 'Resource names whose pending requests count as demand (nvidia.com/gpu, nvidia.com/gpumem, nvidia.com/gpucores).'
          }),
          nodeLabels: Type.Optional(
            StringMap('Labels a pool Node carries: a Pod counts only if its node selector and required affinity match them.')
          ),
          taints: Type.Optional(
            Type.Array(TaintSchema, { description: 'Taints a pool Node carries: a Pod counts only if it tolerates them.' })
          )
        },
        { description: 'Which pending Pods count as demand for this pool; absent: no demand is read.' }
      )
    ),
    dra: Type.Optional(
      Type.Object(
        {
          deviceClassName: Type.String({
            minLength: 1,
            maxLength: 253,
            description: "The pool's HAMi DeviceClass (spec.capacity.hami.deviceClassName)."
          })
        },
        {
          description:
            "HAMi's DRA mode: the agent reads the Nodes' devices from ResourceSlices of driver hami-core-gpu.project-hami.io, " +
            "their allocations from ResourceClaims, and demand from pending Pods' unallocated claims on this class, instead of " +
            "HAMi's Node and Pod annotations. Absent: HAMi's device plugin mode."
        }
      )
    ),
    physicalGPUs: Type.Optional(
      Type.Object(
        {
          driver: Type.String({
            minLength: 1,
            maxLength: 63,
            description: "The DRA driver of the cells' physical GPUs in the infrastructure cluster (gpu.kubeswift.io)."
          }),
          claimName: Type.Optional(
            Type.String({
              maxLength: 253,
              description:
                "The pool's shared ResourceClaim (cell.gpu.dra.resourceClaimName), in this namespace: the devices it holds are the pool's."
            })
          )
        },
        {
          description:
            "A DRA pool: the agent summarizes the infrastructure cluster's devices of this driver into status.physicalGPUs, " +
            'from which the pool decides whether a free GPU is left for a new cell.'
        }
      )
    )
  },
  { description: 'Written by the cellpool controller only.' }
)
export type CellNodeSetSpec = Static<typeof CellNodeSetSpecSchema>

/**
 * The most devices a status row lists: a cell's VM holds one GPU, so a longer registration is
 * garbage (Unparseable), and what a compromised cell can make the agent copy stays small.
 */
export const MAX_CELL_DEVICES = 64
/** The longest device id (a longer one makes the registration Unparseable) or type (clipped). */
export const MAX_DEVICE_TEXT = 128

/** A HAMi device as the agent read it from the Node's registration annotation. */
export const CellDeviceSchema = Type.Object(
  {
    id: Type.String({
      maxLength: 128,
      description: 'Device id (UUID), at most 128 characters (a longer one makes the registration Unparseable).'
    }),
    type: Type.String({ maxLength: 128, description: 'Device type, e.g. NVIDIA-NVIDIA A100-SXM4-80GB; clipped to 128 characters.' }),
    memoryMiB: Type.Integer({ description: 'Device memory in MiB.' }),
    cores: Type.Integer({ description: 'Device compute, in percent (HAMi devcore).' }),
    healthy: Type.Boolean({ description: 'HAMi reports the device healthy.' }),
    allocatedMemoryMiB: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'DRA mode: device memory the allocated ResourceClaims consume on this device (consumedCapacity), MiB.'
      })
    ),
    allocatedCores: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'DRA mode: device compute the allocated ResourceClaims consume on this device (consumedCapacity), percent.'
      })
    )
  },
  { description: 'One GPU device HAMi registered on the Node.' }
)
export type CellDevice = Static<typeof CellDeviceSchema>

/** At most this many labels, and as many annotations, the agent writes onto one Node; more are refused, named. */
export const MAX_WRITTEN_KEYS = 128
/** At most this many taints the agent writes onto one Node. */
export const MAX_WRITTEN_TAINTS = 32
/** The longest label, annotation or taint key the record holds: a qualified name, prefix 253, `/`, name 63. */
export const MAX_KEY_LENGTH = 317
/** The longest instance the agent adopts a Node for: a label value. */
export const MAX_INSTANCE_LENGTH = 63
/** The longest Node uid the record holds (the API server's are 36 characters). */
export const MAX_UID_LENGTH = 128

const recordedKeys = (what: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: MAX_KEY_LENGTH }), {
    maxItems: 2 * MAX_WRITTEN_KEYS,
    description:
      `The ${what} keys the agent set on the Node or sets next, and those it set and has yet to see gone ` +
      `(at most ${MAX_WRITTEN_KEYS} wanted and as many to remove).`
  })

/**
 * What the agent wrote onto one Node object, kept in the status (which only the agent writes) and
 * not on the Node (whose kubelet may write its own annotations): only what is recorded here is
 * ever removed again, and only a Node object recorded here counts as the cell's.
 */
export const AppliedSchema = Type.Object(
  {
    uid: Type.String({
      minLength: 1,
      maxLength: MAX_UID_LENGTH,
      description: 'The uid of the Node object: a Node registered again under the name is another object, to which nothing here applies.'
    }),
    instance: Type.String({
      minLength: 1,
      maxLength: MAX_INSTANCE_LENGTH,
      description: 'The instance the agent adopted this Node object for (the label cells.kubeswift.io/instance it writes).'
    }),
    labels: recordedKeys('label'),
    annotations: recordedKeys('annotation'),
    taints: Type.Array(
      Type.Object(
        {
          key: Type.String({ minLength: 1, maxLength: MAX_KEY_LENGTH, description: 'The taint key.' }),
          effect: StringEnum(TAINT_EFFECTS, { description: 'The taint effect.' })
        },
        { description: 'A taint, by key and effect.' }
      ),
      {
        maxItems: 2 * MAX_WRITTEN_TAINTS,
        description: `The taints the agent set, or sets next, and those it set and has yet to see gone (at most ${MAX_WRITTEN_TAINTS} wanted).`
      }
    ),
    cordoned: Type.Boolean({ description: 'The agent made the Node unschedulable, or does next; it clears only a cordon it recorded.' })
  },
  {
    description:
      'What the agent wrote, or writes next, onto this Node object. It writes only what this record already held when its pass ' +
      'began, so that nothing it set goes unrecorded.'
  }
)
export type Applied = Static<typeof AppliedSchema>

/** What the agent saw of one listed Node. */
export const CellNodeStatusSchema = Type.Object(
  {
    name: Type.String({ description: 'The Node name (the spec entry).' }),
    present: Type.Boolean({ description: 'A Node of this name exists in the workload cluster.' }),
    instance: Type.Optional(
      Type.String({
        description:
          'The Node label cells.kubeswift.io/instance when the agent wrote it onto this Node object (applied.instance); empty otherwise.'
      })
    ),
    poolUID: Type.Optional(Type.String({ description: 'The Node label cells.kubeswift.io/pool-uid.' })),
    live: Type.Optional(Type.Boolean({ description: 'The kubelet still heartbeats (judged by the agent clock).' })),
    ready: Type.Optional(Type.Boolean({ description: 'The Node Ready condition is True.' })),
    unschedulable: Type.Optional(Type.Boolean({ description: 'The Node is cordoned.' })),
    devices: Type.Optional(
      Type.Array(CellDeviceSchema, {
        maxItems: MAX_CELL_DEVICES,
        description: 'Devices HAMi registered on the Node, at most 64 (a longer registration is Unparseable).'
      })
    ),
    registration: Type.Optional(
      StringEnum(['Missing', 'Parsed', 'Unparseable'], {
        description:
          'The HAMi registration annotation: Missing, Parsed or Unparseable. DRA mode: Parsed when a ResourceSlice of HAMi publishes a ' +
          'device for the Node, Missing when none does, Unparseable when the slices could not be listed.'
      })
    ),
    consumableCapacity: Type.Optional(
      StringEnum(['Enabled', 'Disabled', 'Unpublished'], {
        description:
          "DRA mode: Enabled when the Node's HAMi devices carry allowMultipleAllocations; Disabled when they do not " +
          '(the API server drops it while DRAConsumableCapacity is off: each GPU then goes whole to one claim); ' +
          'Unpublished when a device carries no cores or memory capacity (its share is unknown, never zero).'
      })
    ),
    allocations: Type.Optional(
      Type.Object(
        {
          read: Type.Boolean({ description: 'The Pods on the Node were listed.' }),
          pods: Type.Integer({ description: 'Non-terminal Pods holding a HAMi allocation on the Node.' }),
          inFlight: Type.Optional(Type.Boolean({ description: 'A Pod is being allocated a device on the Node.' }))
        },
        { description: 'HAMi allocations on the Node.' }
      )
    ),
    conflict: Type.Optional(Type.Boolean({ description: 'The Node belongs to another VM or pool; the agent writes nothing to it.' })),
    message: Type.Optional(Type.String({ description: 'What a person should know about this Node.' })),
    applied: Type.Optional(AppliedSchema)
  },
  { description: 'What the agent saw of one listed Node.' }
)
export type CellNodeStatus = Static<typeof CellNodeStatusSchema>

/**
 * The largest figure of a demand count or request: the largest integer JavaScript holds exactly
 * (2^53 − 1), within the API server's int64. The agent reads every quantity to it and saturates
 * every sum at it, so no Pod of the workload cluster can make the status unwritable.
 */
export const DEMAND_MAX = Number.MAX_SAFE_INTEGER

/** A demand figure: a whole number from 0 to {@link DEMAND_MAX}. */
const DemandFigure = (description: string) => Type.Integer({ minimum: 0, maximum: DEMAND_MAX, description })

/** One group of pending Pods with the same request. */
export const DemandShapeSchema = Type.Object(
  {
    devices: DemandFigure('Devices requested per Pod.'),
    memoryMiB: DemandFigure('Device memory requested per Pod, MiB (0: not stated).'),
    cores: DemandFigure('Device compute requested per Pod, percent (0: not stated).'),
    pods: DemandFigure('Pending Pods with this request.')
  },
  { description: 'Pending Pods grouped by identical request; each figure at most 2^53 - 1 (a larger request is held there).' }
)
export type DemandShape = Static<typeof DemandShapeSchema>

/**
 * What one cell of the pool offers, as the agent last observed it: the smallest of each figure
 * among the pool's Ready Nodes (demand counts only Pods such a cell could run).
 */
export const CellSizeSchema = Type.Object(
  {
    cpuMillicores: DemandFigure('Allocatable CPU of a cell Node, millicores.'),
    memoryBytes: DemandFigure('Allocatable memory of a cell Node, bytes.'),
    devices: DemandFigure('Healthy HAMi devices of a cell Node.'),
    deviceMemoryMiB: DemandFigure('Memory of a device, MiB.'),
    deviceCores: DemandFigure('Compute of a device, percent.')
  },
  { description: 'What one cell offers: the smallest figures among the pool Nodes that are Ready and have a healthy device.' }
)
export type CellSize = Static<typeof CellSizeSchema>

/** A Node the agent deleted. */
export const SweptNodeSchema = Type.Object(
  {
    name: Type.String({ description: 'The Node name.' }),
    instance: Type.Optional(Type.String({ description: 'Its cells.kubeswift.io/instance label.' })),
    reason: StringEnum(['Stale', 'Orphan'], { description: 'Stale: an old VM under a listed name. Orphan: no longer listed.' }),
    time: Type.String({ format: 'date-time', description: 'When the agent deleted it.' })
  },
  { description: 'A Node the agent deleted because its kubelet stopped heartbeating.' }
)
export type SweptNode = Static<typeof SweptNodeSchema>

/** What the agent saw in the workload cluster. */
export const CellNodeSetStatusSchema = Type.Object(
  {
    observedGeneration: Type.Optional(Type.Integer({ description: 'The spec generation whose actions were carried out.' })),
    observedTime: Type.Optional(
      Type.String({ format: 'date-time', description: 'The agent last complete observation, taken after those actions.' })
    ),
    conditions: Type.Optional(
      Type.Array(conditionSchema('Reachable.'), {
        ...listMap('type'),
        description: 'Reachable (reasons Reachable, CredentialInvalid, Forbidden, Unreachable).'
      })
    ),
    nodeCount: Type.Optional(
      Type.Integer({
        description: 'Nodes in the workload cluster named as cells of the pool (<pool>-<index>) and carrying the pool uid label.'
      })
    ),
    foreignNodes: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          'Nodes carrying the pool uid label under a name no cell of the pool has (a kubelet may set that label on itself): ' +
          'never written, counted or deleted by the agent.'
      })
    ),
    nodes: Type.Optional(Type.Array(CellNodeStatusSchema, { ...listMap('name'), description: 'One row per spec.nodes entry.' })),
    demand: Type.Optional(
      Type.Object(
        {
          read: Type.Boolean({ description: 'Pending Pods were listed.' }),
          pendingPods: DemandFigure('Pending Pods that count as demand for this pool.'),
          unreadablePods: Type.Optional(
            DemandFigure(
              'Pending Pods that would count but whose request does not read (a quantity that does not parse, is negative or is ' +
                'past 2^53 - 1); they are not demand. Absent: none.'
            )
          ),
          unrunnablePods: Type.Optional(
            DemandFigure(
              'Pending Pods that would count but ask for more than one cell offers (CPU, memory, devices, device memory or ' +
                'compute against cell); they are not demand. Absent: none.'
            )
          ),
          cell: Type.Optional(CellSizeSchema),
          shapes: Type.Optional(
            Type.Array(DemandShapeSchema, { maxItems: 50, description: 'Grouped by request, largest first, at most 50.' })
          ),
          truncated: Type.Optional(
            Type.Boolean({
              description:
                'True when the list of pending Pods stopped at the agent bound (AGENT_MAX_PENDING_PODS, or the bytes a pass may read): only the Pods listed were counted.'
            })
          )
        },
        { description: 'Pods pending for lack of GPU that could run on a pool Node.' }
      )
    ),
    swept: Type.Optional(Type.Array(SweptNodeSchema, { maxItems: 20, description: 'The last 20 Nodes the agent deleted.' })),
    dra: Type.Optional(
      Type.Object(
        {
          deviceClass: StringEnum(['Found', 'Missing', 'Unread'], {
            description: 'Whether the DeviceClass spec.dra.deviceClassName exists in the workload cluster (Unread: the get failed).'
          }),
          claimsRead: Type.Boolean({
            description: "The workload cluster's ResourceClaims were listed (false: allocations and demand are unread)."
          }),
          claimsTruncated: Type.Optional(
            Type.Boolean({
              description: 'The claim list stopped at the agent bound: allocations are unread, demand counts what was listed.'
            })
          ),
          message: Type.Optional(Type.String({ description: 'What a person should know about the DRA reading.' }))
        },
        { description: 'HAMi DRA mode (spec.dra): what the agent could read of DRA in the workload cluster.' }
      )
    ),
    physicalGPUs: Type.Optional(
      Type.Object(
        {
          observedTime: Type.String({ format: 'date-time', description: 'When the agent computed this summary from its informers.' }),
          published: Type.Integer({ minimum: 0, description: 'Devices of spec.physicalGPUs.driver the ResourceSlices publish.' }),
          ready: Type.Integer({ minimum: 0, description: 'Of those, devices not reporting vfioReady false.' }),
          held: Type.Integer({ minimum: 0, description: 'Ready devices an allocated ResourceClaim of any namespace holds.' }),
          own: Type.Integer({ minimum: 0, description: "Ready devices the pool's own shared claim (spec.physicalGPUs.claimName) holds." })
        },
        {
          description:
            "The infrastructure cluster's physical GPUs of the pool's driver, summarized by the agent (spec.physicalGPUs); " +
            'absent or older than 2 minutes: the pool waits before building a cell.'
        }
      )
    )
  },
  { description: 'Written by the workload agent only.' }
)
export type CellNodeSetStatus = Static<typeof CellNodeSetStatusSchema>

/** CellNodeSet as stored. */
export const CellNodeSetSchema = CustomResource(
  { spec: CellNodeSetSpecSchema, status: Type.Optional(CellNodeSetStatusSchema) },
  {
    description:
      'A GPU cell pool request to its workload cluster (spec, written by the cellpool controller) and what the ' +
      'workload agent saw there (status).'
  }
)
export type CellNodeSet = Static<typeof CellNodeSetSchema>
