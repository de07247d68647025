/**
 * Customize hook of the isolation decorator: which related objects a Namespace's sync needs.
 *
 * Metacontroller caches this answer per (parent uid, generation) for about 20 minutes, so it
 * depends on the Namespace's name and the label {@link HOLDS_INSTANCES_LABEL} only.
 */
import { type Static } from '@sinclair/typebox'
import { WORKER_API_VERSION } from '../api/instance.ts'
import { ISOLATION_POD_CIDRS_SETTING, SETTING_API_VERSION } from '../api/setting.ts'
import { customizeRequestSchema, type CustomizeResponse } from '../metacontroller/schemas.ts'
import { NamespaceSchema, type Namespace } from './namespace.ts'

/** Customize request of the isolation decorator: the parent is a Namespace. */
export const IsolationCustomizeRequestSchema = customizeRequestSchema(NamespaceSchema)
export type IsolationCustomizeRequest = Static<typeof IsolationCustomizeRequestSchema>

/**
 * Namespace label the isolation sync answers once it has seen an Instance there (docs/isolation.md,
 * "Inputs"). It stands for the namespace's Instances from then on, so a namespace's syncs stop
 * carrying every Instance and stop running on every Instance change: without it the isolation
 * cost grows with the square of the namespace's size. The hook never removes it.
 */
export const HOLDS_INSTANCES_LABEL = 'gpustack.ai/holds-instances'

/** True when the Namespace carries `gpustack.ai/holds-instances: "true"` (exactly that value). */
export function carriesHoldsInstances(namespace: Namespace): boolean {
  const labels = namespace.metadata.labels
  return labels !== undefined && Object.hasOwn(labels, HOLDS_INSTANCES_LABEL) && labels[HOLDS_INSTANCES_LABEL] === 'true'
}

/**
 * Relates the Setting `instance-isolation-pod-cidrs` (cluster-scoped, so by name alone) and, until
 * the Namespace carries {@link HOLDS_INSTANCES_LABEL}, its Instances (`namespace` set explicitly:
 * docs/metacontroller.md rule 6). Metacontroller re-syncs the Namespace whenever one of them changes.
 */
export function customize(request: IsolationCustomizeRequest): CustomizeResponse {
  const setting = { apiVersion: SETTING_API_VERSION, resource: 'settings', names: [ISOLATION_POD_CIDRS_SETTING] }
  if (carriesHoldsInstances(request.parent)) return { relatedResources: [setting] }
  return {
    relatedResources: [{ apiVersion: WORKER_API_VERSION, resource: 'instances', namespace: request.parent.metadata.name }, setting]
  }
}
