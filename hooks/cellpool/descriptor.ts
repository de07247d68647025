/**
 * The GPUCellPool controller as one record (hooks/metacontroller/descriptor.ts): the
 * CompositeController `gpuhooks-cellpool` of metacontroller/cellpool.yaml (with the Machines of
 * Cluster API cells where the cluster serves them), its hooks, the admission webhook of
 * GPUCellPools, what it may create and what it relates. The package exports it as
 * `gpuhooks/cellpool`. The only file of the controller that the rest of the service imports.
 */
import { CLUSTER_API_VERSION } from '../api/cellinfrastructure.ts'
import { CELLS_API_VERSION } from '../api/cellnodeset.ts'
import { admissionHook, type ControllerDescriptor } from '../metacontroller/descriptor.ts'
import { CompositeResponseSchema, CustomizeResponseSchema, type CompositeResponse } from '../metacontroller/schemas.ts'
import { customize, finalize, reviewCellPool, sync } from './hooks.ts'
import { CellPoolCustomizeRequestSchema, CellPoolSyncRequestSchema } from './model/request.ts'
import { CELL_POOL_CHILD_RULE } from './request/answer-rule.ts'
import { DRA_API_VERSION as DRA } from './request/inventory.ts'

/** The GPUCellPool controller. */
export const cellpool: ControllerDescriptor<typeof CellPoolCustomizeRequestSchema, typeof CellPoolSyncRequestSchema, CompositeResponse> = {
  name: 'cellpool',
  parent: { apiVersion: CELLS_API_VERSION, resource: 'gpucellpools', kind: 'GPUCellPool' },
  rule: CELL_POOL_CHILD_RULE,
  optionalChildren: [{ option: 'clusterAPI', types: CELL_POOL_CHILD_RULE.types.filter((t) => t.apiVersion === CLUSTER_API_VERSION) }],
  related: [
    { apiVersion: 'v1', resource: 'secrets', kind: 'Secret' },
    { apiVersion: DRA, resource: 'resourceclaims', kind: 'ResourceClaim' },
    { apiVersion: DRA, resource: 'resourceclaimtemplates', kind: 'ResourceClaimTemplate' }
  ],
  customize: { request: CellPoolCustomizeRequestSchema, answer: CustomizeResponseSchema, run: (request) => customize(request) },
  sync: { request: CellPoolSyncRequestSchema, answer: CompositeResponseSchema, run: sync },
  finalize: { request: CellPoolSyncRequestSchema, answer: CompositeResponseSchema, run: finalize },
  admission: admissionHook(reviewCellPool)
}
