/**
 * The product's CustomResourceDefinitions, built from the TypeBox schemas (api.md). `npm run crds`
 * writes them to `crds/`; a unit test fails when the committed files differ.
 */
import { CELLS_API_VERSION, CellNodeSetSchema } from './cellnodeset.ts'
import { crdFor, type CustomResourceDefinition, type PrinterColumn } from './crd.ts'
import { GPUCellPoolSchema } from './gpucellpool.ts'
import { InstanceSchema, WORKER_API_VERSION } from './instance.ts'
import { InstanceTypeSchema } from './instancetype.ts'
import { SETTING_API_VERSION, SettingSchema } from './setting.ts'

function groupAndVersion(apiVersion: string): { group: string; version: string } {
  const [group, version] = apiVersion.split('/')
  if (group === undefined || version === undefined) throw new Error(`not a group/version: ${apiVersion}`)
  return { group, version }
}

const AGE: PrinterColumn = {
  name: 'Age',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: 'Time since the object was created.'
}

/**
 * Instance: namespaced, the parent of the Instance CompositeController, so it has the status
 * subresource (Metacontroller ignores a parent without it and writes status through it).
 */
export const INSTANCE_CRD: CustomResourceDefinition = crdFor({
  ...groupAndVersion(WORKER_API_VERSION),
  kind: 'Instance',
  plural: 'instances',
  singular: 'instance',
  shortNames: ['inst'],
  categories: ['gpustack'],
  scope: 'Namespaced',
  schema: InstanceSchema,
  statusSubresource: true,
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type', description: 'The InstanceType.' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase', description: 'Where the workspace is in its life.' },
    {
      name: 'Ports',
      type: 'string',
      jsonPath: '.status.nodePorts',
      description: 'Allocated node ports, <port>:<nodePort>/<protocol>.'
    },
    { name: 'Node', type: 'string', jsonPath: '.status.nodeName', description: 'Node of the observed Pod.' },
    AGE
  ]
})

/**
 * InstanceType: cluster-scoped, written by the admin and only read by the hooks (as a related
 * object). It has no status and nothing writes one, so it gets no status subresource: that
 * subresource would only make the main endpoint drop status writes nobody makes.
 */
export const INSTANCE_TYPE_CRD: CustomResourceDefinition = crdFor({
  ...groupAndVersion(WORKER_API_VERSION),
  kind: 'InstanceType',
  plural: 'instancetypes',
  singular: 'instancetype',
  categories: ['gpustack'],
  scope: 'Cluster',
  schema: InstanceTypeSchema,
  statusSubresource: false,
  printerColumns: [
    { name: 'Plugin', type: 'string', jsonPath: '.spec.devicePlugin', description: 'Device plugin on the nodes of this type.' },
    { name: 'Families', type: 'string', jsonPath: '.spec.families', description: 'Accelerator families Instances of this type may use.' },
    AGE
  ]
})

/** Setting: cluster-scoped, one object per knob; its value is the top-level field `value`. */
export const SETTING_CRD: CustomResourceDefinition = crdFor({
  ...groupAndVersion(SETTING_API_VERSION),
  kind: 'Setting',
  plural: 'settings',
  singular: 'setting',
  shortNames: ['set'],
  categories: ['gpustack'],
  scope: 'Cluster',
  schema: SettingSchema,
  statusSubresource: false,
  printerColumns: [{ name: 'Value', type: 'string', jsonPath: '.value', description: 'The value of the setting.' }, AGE]
})

/**
 * CellNodeSet: namespaced, a child of a GPUCellPool (spec by the cellpool hook) whose status the
 * workload agent writes through the status subresource, so neither side overwrites the other.
 */
export const CELL_NODE_SET_CRD: CustomResourceDefinition = crdFor({
  ...groupAndVersion(CELLS_API_VERSION),
  kind: 'CellNodeSet',
  plural: 'cellnodesets',
  singular: 'cellnodeset',
  shortNames: ['cns'],
  categories: ['kubeswift'],
  scope: 'Namespaced',
  schema: CellNodeSetSchema,
  statusSubresource: true,
  printerColumns: [
    {
      name: 'Reachable',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Reachable")].status',
      description: 'The workload cluster answered the agent.'
    },
    { name: 'Nodes', type: 'integer', jsonPath: '.status.nodeCount', description: 'Nodes carrying the pool uid label.' },
    { name: 'Observed', type: 'date', jsonPath: '.status.observedTime', description: 'The agent last complete observation.' },
    AGE
  ]
})

/**
 * GPUCellPool: namespaced, the parent of the cellpool CompositeController, so it has the status
 * subresource; and the scale subresource, so `kubectl scale`, an HPA or KEDA can set
 * `spec.replicas` and read the cell count and the cells' selector.
 */
export const GPU_CELL_POOL_CRD: CustomResourceDefinition = crdFor({
  ...groupAndVersion(CELLS_API_VERSION),
  kind: 'GPUCellPool',
  plural: 'gpucellpools',
  singular: 'gpucellpool',
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
    { name: 'Desired', type: 'integer', jsonPath: '.spec.replicas', description: 'Cells asked for in spec.replicas.' },
    { name: 'Ready', type: 'integer', jsonPath: '.status.readyCells', description: 'Cells in phase Ready.' },
    {
      name: 'Available',
      type: 'string',
      jsonPath: '.status.conditions[?(@.type=="Ready")].status',
      description: 'The Ready condition: enough cells are Ready.'
    },
    AGE
  ]
})

/** Every CRD of the product, in a fixed order. */
export const CRDS: readonly CustomResourceDefinition[] = [
  INSTANCE_CRD,
  INSTANCE_TYPE_CRD,
  SETTING_CRD,
  CELL_NODE_SET_CRD,
  GPU_CELL_POOL_CRD
]
