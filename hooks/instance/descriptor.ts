/**
 * The Instance controller as one record (hooks/metacontroller/descriptor.ts): the CompositeController
 * `gpuhooks-instance` of metacontroller/instance.yaml, its hooks, the admission webhook of
 * Instances, what it may create and what it relates. The package exports it as `gpuhooks/instance`.
 */
import { WORKER_API_VERSION } from '../api/instance.ts'
import { SETTING_API_VERSION } from '../api/setting.ts'
import { admissionHook, type ControllerDescriptor } from '../metacontroller/descriptor.ts'
import { CompositeResponseSchema, CustomizeResponseSchema, type CompositeResponse } from '../metacontroller/schemas.ts'
import { reviewInstance } from './admission.ts'
import { INSTANCE_CHILD_RULE } from './answer-rule.ts'
import { InstanceCustomizeRequestSchema, customize } from './customize.ts'
import { finalize } from './finalize.ts'
import { InstanceSyncRequestSchema } from './request.ts'
import { sync } from './sync.ts'

/** The Instance controller. */
export const instance: ControllerDescriptor<typeof InstanceCustomizeRequestSchema, typeof InstanceSyncRequestSchema, CompositeResponse> = {
  name: 'instance',
  parent: { apiVersion: WORKER_API_VERSION, resource: 'instances', kind: 'Instance' },
  rule: INSTANCE_CHILD_RULE,
  optionalChildren: [],
  related: [
    { apiVersion: WORKER_API_VERSION, resource: 'instancetypes', kind: 'InstanceType' },
    { apiVersion: SETTING_API_VERSION, resource: 'settings', kind: 'Setting' },
    { apiVersion: 'v1', resource: 'namespaces', kind: 'Namespace' },
    { apiVersion: 'v1', resource: 'services', kind: 'Service' },
    { apiVersion: 'node.k8s.io/v1', resource: 'runtimeclasses', kind: 'RuntimeClass' },
    { apiVersion: 'v1', resource: 'secrets', kind: 'Secret' },
    { apiVersion: 'storage.k8s.io/v1', resource: 'storageclasses', kind: 'StorageClass' }
  ],
  customize: { request: InstanceCustomizeRequestSchema, answer: CustomizeResponseSchema, run: (request) => customize(request) },
  sync: { request: InstanceSyncRequestSchema, answer: CompositeResponseSchema, run: sync },
  finalize: { request: InstanceSyncRequestSchema, answer: CompositeResponseSchema, run: finalize },
  admission: admissionHook(reviewInstance)
}
