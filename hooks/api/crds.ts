/**
 * The product's CustomResourceDefinitions, built from the TypeBox schemas (docs/api.md). `npm run crds`
 * writes them to `crds/`; a unit test fails when the committed files differ.
 */
import { CellInfrastructureSchema } from './cellinfrastructure.ts'
import { CELLS_API_VERSION, CellNodeSetSchema } from './cellnodeset.ts'
import { column, crdFor, type CustomResourceDefinition } from './crd.ts'
import { GPUCellPoolSchema } from './gpucellpool.ts'
import { InstanceSchema, WORKER_API_VERSION } from './instance.ts'
import { InstanceActivitySchema } from './instanceactivity.ts'
import { InstanceTypeSchema } from './instancetype.ts'
import { SETTING_API_VERSION, SettingSchema } from './setting.ts'

const AGE = column('Age', 'date', '.metadata.creationTimestamp', 'Time since the object was created.')

/**
 * Instance: namespaced, the parent of the Instance CompositeController, so it has the status
 * subresource (Metacontroller ignores a parent without it and writes status through it).
 */
export const INSTANCE_CRD: CustomResourceDefinition = crdFor({
  apiVersion: WORKER_API_VERSION,
  kind: 'Instance',
  shortNames: ['inst'],
  categories: ['gpustack'],
  scope: 'Namespaced',
  schema: InstanceSchema,
  statusSubresource: true,
  printerColumns: [
    column('Type', 'string', '.spec.type', 'The InstanceType.'),
    column('Phase', 'string', '.status.phase', 'Where the workspace is in its life.'),
    column('Ports', 'string', '.status.nodePorts', 'Allocated node ports, <port>:<nodePort>/<protocol>.'),
    column('Node', 'string', '.status.nodeName', 'Node of the observed Pod.'),
    column('SSH', 'string', '.status.connect.ssh', 'The command that opens an SSH session while the Instance runs.'),
    AGE
  ]
})

/**
 * InstanceType: cluster-scoped, written by the admin and only read by the hooks (as a related
 * object). Its Access column prints the namespace selector as the API server stores it (a printer
 * column is a JSONPath, it cannot put a selector into words); an empty column means every namespace. It has no status and nothing writes one, so it gets no status subresource: that
 * subresource would only make the main endpoint drop status writes nobody makes.
 */
export const INSTANCE_TYPE_CRD: CustomResourceDefinition = crdFor({
  apiVersion: WORKER_API_VERSION,
  kind: 'InstanceType',
  categories: ['gpustack'],
  scope: 'Cluster',
  schema: InstanceTypeSchema,
  statusSubresource: false,
  printerColumns: [
    column('Plugin', 'string', '.spec.devicePlugin', 'Device plugin on the nodes of this type.'),
    column('Families', 'string', '.spec.families', 'Accelerator families Instances of this type may use.'),
    column(
      'Access',
      'string',
      '.spec.access.namespaceSelector',
      'The namespaces that may use this type, by their labels; empty: every namespace.'
    ),
    column('Queue', 'string', '.spec.queue.localQueueName', 'The Kueue LocalQueue the Pods of this type join; empty: none.'),
    AGE
  ]
})

/**
 * InstanceActivity: namespaced, a child of an Instance (spec by the Instance hook) whose status the
 * agent's activity controller writes through the status subresource (docs/lifecycle.md).
 */
export const INSTANCE_ACTIVITY_CRD: CustomResourceDefinition = crdFor({
  apiVersion: WORKER_API_VERSION,
  kind: 'InstanceActivity',
  plural: 'instanceactivities',
  shortNames: ['instact'],
  categories: ['gpustack'],
  scope: 'Namespaced',
  schema: InstanceActivitySchema,
  statusSubresource: true,
  printerColumns: [
    column('Pod', 'string', '.spec.podName', 'The Pod observed.'),
    column('Active', 'date', '.status.lastActiveTime', 'The last time an accelerator was above the threshold.'),
    column('Observed', 'string', '.status.conditions[?(@.type=="Observed")].status', 'The agent has a current observation.'),
    column('Stop', 'string', '.spec.stop.reason', 'Why the hook asks for a stop; empty: none.'),
    AGE
  ]
})

/** Setting: cluster-scoped, one object per knob; its value is the top-level field `value`. */
export const SETTING_CRD: CustomResourceDefinition = crdFor({
  apiVersion: SETTING_API_VERSION,
  kind: 'Setting',
  shortNames: ['set'],
  categories: ['gpustack'],
  scope: 'Cluster',
  schema: SettingSchema,
  statusSubresource: false,
  printerColumns: [column('Value', 'string', '.value', 'The value of the setting.'), AGE]
})

/**
 * CellNodeSet: namespaced, a child of a GPUCellPool (spec by the cellpool hook) whose status the
 * workload agent writes through the status subresource, so neither side overwrites the other.
 */
export const CELL_NODE_SET_CRD: CustomResourceDefinition = crdFor({
  apiVersion: CELLS_API_VERSION,
  kind: 'CellNodeSet',
  shortNames: ['cns'],
  categories: ['kubeswift'],
  scope: 'Namespaced',
  schema: CellNodeSetSchema,
  statusSubresource: true,
  printerColumns: [
    column('Reachable', 'string', '.status.conditions[?(@.type=="Reachable")].status', 'The workload cluster answered the agent.'),
    column('Nodes', 'integer', '.status.nodeCount', 'Nodes carrying the pool uid label.'),
    column('Observed', 'date', '.status.observedTime', 'The agent last complete observation.'),
    AGE
  ]
})

/**
 * CellInfrastructure: namespaced, a child of a Cluster API GPUCellPool (spec by the cellpool
 * hook) whose status the workload agent writes, as for the CellNodeSet.
 */
export const CELL_INFRASTRUCTURE_CRD: CustomResourceDefinition = crdFor({
  apiVersion: CELLS_API_VERSION,
  kind: 'CellInfrastructure',
  shortNames: ['cinfra'],
  categories: ['kubeswift'],
  scope: 'Namespaced',
  schema: CellInfrastructureSchema,
  statusSubresource: true,
  printerColumns: [
    column('Machines', 'string', '.spec.machines[*].name', 'The Machines of the pool.'),
    column('Observed', 'integer', '.status.observedGeneration', 'The spec generation the agent carried out.'),
    AGE
  ]
})

/**
 * GPUCellPool: namespaced, the parent of the cellpool CompositeController, so it has the status
 * subresource; and the scale subresource, so `kubectl scale`, an HPA or KEDA can set
 * `spec.replicas` and read the cell count and the cells' selector.
 */
export const GPU_CELL_POOL_CRD: CustomResourceDefinition = crdFor({
  apiVersion: CELLS_API_VERSION,
  kind: 'GPUCellPool',
  shortNames: ['cellpool'],
  categories: ['kubeswift'],
  scope: 'Namespaced',
  schema: GPUCellPoolSchema,
  statusSubresource: true,
  scaleSubresource: {
    specReplicasPath: '.spec.replicas',
    statusReplicasPath: '.status.replicas',
    labelSelectorPath: '.status.selector'
  },
  printerColumns: [
    column('Desired', 'integer', '.spec.replicas', 'Cells asked for in spec.replicas.'),
    column('Ready', 'integer', '.status.readyCells', 'Cells in phase Ready.'),
    column('Available', 'string', '.status.conditions[?(@.type=="Ready")].status', 'The Ready condition: enough cells are Ready.'),
    AGE
  ]
})

/** Every CRD of the product, in a fixed order. */
export const CRDS: readonly CustomResourceDefinition[] = [
  INSTANCE_CRD,
  INSTANCE_TYPE_CRD,
  INSTANCE_ACTIVITY_CRD,
  SETTING_CRD,
  CELL_NODE_SET_CRD,
  CELL_INFRASTRUCTURE_CRD,
  GPU_CELL_POOL_CRD
]
