/**
 * Sync hook of the isolation decorator (isolation.md, "The rule"): per Namespace, the
 * NetworkPolicy `gpustack-instance-isolation`, and the Namespace annotation
 * `gpustack.ai/instance-isolation` that says why the hook changed nothing or what it cannot fix.
 *
 * The answer is always `{attachments, labels, annotations, status: null}` (metacontroller.md
 * rule 1): a Namespace's status belongs to the API server. The one label ever answered is
 * `gpustack.ai/holds-instances: "true"` (isolation.md supersedes rule 1's "never labels" for it),
 * set by a sync that sees an Instance and never removed.
 *
 * Chosen where the spec is silent:
 * - A namespace being deleted gets no annotation change at all (`annotations: {}`): writing to an
 *   object on its way out serves no reader, and its policy is kept as observed.
 * - With an unparseable Setting value, and while the namespace is being deleted, the decorator's
 *   own policy (`gpustack-instance-isolation` in that namespace) is kept as it is; an attachment
 *   of another name (none is ever made by this version) is never answered (answer-rule.ts), so it
 *   is collected, as it is with a valid value.
 * - "Kept as it is" is metacontroller.md rule 5 (`keepAsIs`: the observed policy in the shape of
 *   its last-applied record). The merge changes nothing: a rule someone edited by hand stays as
 *   edited until the Setting can be parsed again, and then goes back to the rendered shape. No
 *   rule is opened or dropped, and nothing the record says beyond the observed policy is written.
 * - "Holds an Instance" counts every Instance of the namespace, including one being deleted: its
 *   Pod may still be running.
 * - The label is answered whatever the Setting says (it is what stops the namespace's syncs from
 *   carrying every Instance, feature on or off), but not while the namespace is being deleted.
 * - A drift report lists the paths sorted, joined by `, `; an error report joins the problems of
 *   the first ten bad entries with `; ` and counts the rest, so that a pathological value cannot
 *   push the Namespace's annotations past the API server's size limit.
 */
import type { Static } from '@sinclair/typebox'
import { INSTANCE_KEY } from '../api/instance.ts'
import { ISOLATION_POD_CIDRS_SETTING, SETTING_TYPE_KEY } from '../api/setting.ts'
import type { KubeObject } from '../k8s/objects.ts'
import { keepAsIs } from '../metacontroller/keep.ts'
import { objectKey, observedObject, observedOfType, typeKey } from '../metacontroller/observed.ts'
import { decoratorRequestSchema, type DecoratorResponse } from '../metacontroller/schemas.ts'
import { parsePodCidrs, type PodCidrSetting } from './cidrs.ts'
import { carriesHoldsInstances, HOLDS_INSTANCES_LABEL } from './customize.ts'
import { isTerminating, NamespaceSchema } from './namespace.ts'
import { buildPolicy, NETWORK_POLICY_API_VERSION, POLICY_NAME, policyDrift } from './policy.ts'

/** The one attachment type the decorator declares (metacontroller/isolation.yaml). */
export const NETWORK_POLICY_TYPE_KEY = typeKey(NETWORK_POLICY_API_VERSION, 'NetworkPolicy')

/**
 * Namespace annotation reporting a problem: `error: <message>` when the Setting cannot be parsed,
 * `drift: <field paths>` when the observed policy carries fields the hook cannot revert. Removed
 * (answered as null) when all is well.
 */
export const ISOLATION_ANNOTATION = 'gpustack.ai/instance-isolation'

/**
 * DecoratorController sync request of the isolation decorator: the object is a Namespace. Related
 * objects stay open: a Setting stored in an unexpected shape is reported in the annotation, never
 * refused with a 400 that Metacontroller would retry forever.
 */
export const IsolationSyncRequestSchema = decoratorRequestSchema(NamespaceSchema)
export type IsolationSyncRequest = Static<typeof IsolationSyncRequestSchema>

/**
 * The desired policy and annotation of one Namespace.
 *
 * - Namespace being deleted: the decorator's observed policy kept as it is, none rendered.
 * - Setting absent or blank: no policy (the decorator's policies are collected), annotation removed.
 * - Setting unparseable: the decorator's observed policy kept as it is, none rendered where none exists,
 *   annotation `error: <message>`.
 * - Setting valid: the policy rendered when the namespace holds an Instance, carries the label
 *   `gpustack.ai/holds-instances: "true"`, or the decorator's policy is already there; annotation
 *   `drift: <paths>` for fields a merge cannot revert, removed otherwise.
 * - Label `gpustack.ai/holds-instances: "true"` answered whenever an Instance is seen (not while
 *   the namespace is being deleted); never removed.
 */
export function sync(request: IsolationSyncRequest): DecoratorResponse {
  const namespace = request.object.metadata.name
  const own = observedObject(request.attachments, NETWORK_POLICY_TYPE_KEY, objectKey(POLICY_NAME, namespace))
  const kept = own === undefined ? [] : [keepAsIs(own)]
  if (isTerminating(request.object)) return answer(kept, {}, {})

  const seesInstance = holdsInstance(request, namespace)
  const labels: Record<string, string> = seesInstance ? { [HOLDS_INSTANCES_LABEL]: 'true' } : {}
  const value = observedObject(request.related, SETTING_TYPE_KEY, ISOLATION_POD_CIDRS_SETTING)?.value
  const setting: PodCidrSetting =
    value === undefined || typeof value === 'string'
      ? parsePodCidrs(value)
      : { state: 'invalid', errors: [`the value must be a string of comma-separated CIDRs, not ${typeof value}`] }
  switch (setting.state) {
    case 'off':
      return answer([], labels, { [ISOLATION_ANNOTATION]: null })
    case 'invalid':
      return answer(kept, labels, { [ISOLATION_ANNOTATION]: errorReport(setting.errors) })
    case 'on': {
      if (own === undefined && !seesInstance && !carriesHoldsInstances(request.object)) {
        return answer([], labels, { [ISOLATION_ANNOTATION]: null })
      }
      const policy = buildPolicy(namespace, setting.cidrs)
      const drift = policyDrift(own, policy)
      return answer([policy], labels, { [ISOLATION_ANNOTATION]: drift.length > 0 ? `drift: ${drift.join(', ')}` : null })
    }
  }
}

/** At most this many bad entries are spelled out; annotations share a 256 KiB budget per object. */
const MAX_REPORTED_ERRORS = 10

function errorReport(errors: string[]): string {
  const shown = errors.slice(0, MAX_REPORTED_ERRORS)
  const more = errors.length - shown.length
  return (
    `error: Setting ${ISOLATION_POD_CIDRS_SETTING} has an invalid value, so no policy was changed: ` +
    shown.join('; ') +
    (more > 0 ? `; and ${more} more bad ${more === 1 ? 'entry' : 'entries'}` : '')
  )
}

function holdsInstance(request: IsolationSyncRequest, namespace: string): boolean {
  // The customize rule names the namespace; checking again keeps a stray match from counting.
  return observedOfType(request.related, INSTANCE_KEY).some((instance) => instance.metadata.namespace === namespace)
}

function answer(attachments: KubeObject[], labels: Record<string, string>, annotations: Record<string, string | null>): DecoratorResponse {
  return { attachments: attachments as DecoratorResponse['attachments'], labels, annotations, status: null }
}
