/**
 * Customize hook of the isolation decorator: which related objects a Namespace's sync needs.
 *
 * Metacontroller caches this answer per (parent uid, generation) for about 20 minutes, and a
 * label does not move a Namespace's generation; so the answer depends on the Namespace's name and
 * labels only, and the part that must follow the label as soon as it changes is left to a
 * `namespaceSelector`, which Metacontroller matches against the Namespace as it is at each sync
 * and at each Instance event (customize `manager.go`: `GetRelatedObjects` lists the Namespaces
 * the selector matches from its informer; `findRelatedParents` looks the event's Namespace up the
 * same way), never against the cached answer.
 */
import { type Static } from '@sinclair/typebox'
import { WORKER_API_VERSION } from '../api/instance.ts'
import { ISOLATION_POD_CIDRS_SETTING, SETTING_API_VERSION } from '../api/setting.ts'
import { ownValue } from '../k8s/objects.ts'
import { customizeRequestSchema, type CustomizeResponse, type RelatedResourceRule } from '../metacontroller/schemas.ts'
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

/**
 * The label the API server sets on every Namespace it creates or updates (Kubernetes 1.22 and
 * later), with the Namespace's name as its value: a Namespace selector for exactly one Namespace.
 */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name'

/** True when the Namespace carries `gpustack.ai/holds-instances: "true"` (exactly that value). */
export function carriesHoldsInstances(namespace: Namespace): boolean {
  return ownValue(namespace.metadata.labels, HOLDS_INSTANCES_LABEL) === 'true'
}

/**
 * Relates the Setting `instance-isolation-pod-cidrs` (cluster-scoped, so by name alone) and, until
 * the Namespace carries {@link HOLDS_INSTANCES_LABEL}, its Instances. Metacontroller re-syncs the
 * Namespace whenever one of them changes.
 *
 * The Instances are selected by Namespace: the one named like this Namespace, while it does not
 * carry the label with the value "true". The first sync that sees an Instance answers the label;
 * from the moment the label is on the Namespace, its syncs carry no Instance and no Instance event
 * re-syncs it, however long Metacontroller keeps this answer cached (a `namespace` rule would keep
 * relating every Instance for those 20 minutes, the cost that grew with the square of the
 * namespace's size). Should someone remove the label, the Instances are related again at once, and
 * the next sync sets it back.
 *
 * A Namespace without the name label (one stored before the API server set it, and not updated
 * since) is related by `namespace` instead, as before: a selector on that label would match
 * nothing, and the namespace would never learn that it holds Instances.
 */
export function customize(request: IsolationCustomizeRequest): CustomizeResponse {
  const setting = { apiVersion: SETTING_API_VERSION, resource: 'settings', names: [ISOLATION_POD_CIDRS_SETTING] }
  if (carriesHoldsInstances(request.parent)) return { relatedResources: [setting] }
  return { relatedResources: [instancesUntilLabelled(request.parent), setting] }
}

function instancesUntilLabelled(namespace: Namespace): RelatedResourceRule {
  const name = namespace.metadata.name
  const rule = { apiVersion: WORKER_API_VERSION, resource: 'instances' }
  // Every namespaced rule names its namespace (docs/metacontroller.md rule 6), here through the selector.
  if (ownValue(namespace.metadata.labels, NAMESPACE_NAME_LABEL) !== name) return { ...rule, namespace: name }
  return {
    ...rule,
    // An empty label selector selects every Instance; without one, Metacontroller logs on every
    // sync that a namespaceSelector alone may be expensive.
    labelSelector: {},
    namespaceSelector: {
      matchLabels: { [NAMESPACE_NAME_LABEL]: name },
      matchExpressions: [{ key: HOLDS_INSTANCES_LABEL, operator: 'NotIn', values: ['true'] }]
    }
  }
}
