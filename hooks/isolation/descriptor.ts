/**
 * The isolation controller as one record (hooks/metacontroller/descriptor.ts): the
 * DecoratorController `gpuhooks-instance-isolation` of metacontroller/isolation.yaml, which
 * decorates every Namespace with its NetworkPolicy. The package exports it as `gpuhooks/isolation`.
 */
import { WORKER_API_VERSION } from '../api/instance.ts'
import { SETTING_API_VERSION } from '../api/setting.ts'
import type { ControllerDescriptor } from '../metacontroller/descriptor.ts'
import { CustomizeResponseSchema, DecoratorResponseSchema, type DecoratorResponse } from '../metacontroller/schemas.ts'
import { ISOLATION_ATTACHMENT_RULE } from './answer-rule.ts'
import { IsolationCustomizeRequestSchema, customize } from './customize.ts'
import { IsolationSyncRequestSchema, sync } from './sync.ts'

/** The isolation controller. */
export const isolation: ControllerDescriptor<typeof IsolationCustomizeRequestSchema, typeof IsolationSyncRequestSchema, DecoratorResponse> =
  {
    name: 'isolation',
    parent: { apiVersion: 'v1', resource: 'namespaces', kind: 'Namespace' },
    rule: ISOLATION_ATTACHMENT_RULE,
    optionalChildren: [],
    related: [
      { apiVersion: SETTING_API_VERSION, resource: 'settings', kind: 'Setting' },
      { apiVersion: WORKER_API_VERSION, resource: 'instances', kind: 'Instance' }
    ],
    customize: { request: IsolationCustomizeRequestSchema, answer: CustomizeResponseSchema, run: (request) => customize(request) },
    // The policy depends on the Namespace, its Instances and the Setting only: no clock.
    sync: { request: IsolationSyncRequestSchema, answer: DecoratorResponseSchema, run: (request) => sync(request) }
  }
