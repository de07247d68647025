/**
 * Customize hook of the isolation decorator: which related objects a Namespace's sync needs.
 *
 * Metacontroller caches this answer per (parent uid, generation) for about 20 minutes, so it
 * depends on the Namespace's name only.
 */
import { type Static } from '@sinclair/typebox'
import { WORKER_API_VERSION } from '../api/instance.ts'
import { ISOLATION_POD_CIDRS_SETTING, SETTING_API_VERSION } from '../api/setting.ts'
import { customizeRequestSchema, type CustomizeResponse } from '../metacontroller/schemas.ts'
import { NamespaceSchema } from './namespace.ts'

/** Customize request of the isolation decorator: the parent is a Namespace. */
export const IsolationCustomizeRequestSchema = customizeRequestSchema(NamespaceSchema)
export type IsolationCustomizeRequest = Static<typeof IsolationCustomizeRequestSchema>

/**
 * Relates the Instances of the decorated namespace (`namespace` set explicitly: metacontroller.md
 * rule 6) and the Setting `instance-isolation-pod-cidrs` (cluster-scoped, so by name alone).
 * Metacontroller re-syncs the Namespace whenever one of them changes.
 */
export function customize(request: IsolationCustomizeRequest): CustomizeResponse {
  return {
    relatedResources: [
      { apiVersion: WORKER_API_VERSION, resource: 'instances', namespace: request.parent.metadata.name },
      { apiVersion: SETTING_API_VERSION, resource: 'settings', names: [ISOLATION_POD_CIDRS_SETTING] }
    ]
  }
}
