/**
 * What the isolation decorator may answer (metacontroller.md rule 10, checked on every answer by
 * hooks/metacontroller/answer-guard.ts): the one attachment type metacontroller/isolation.yaml
 * declares, only the policy `gpustack-instance-isolation` in the decorated Namespace, and on the
 * Namespace itself only the label and the annotation isolation.md names.
 */
import type { ChildRule } from '../metacontroller/answer-guard.ts'
import { HOLDS_INSTANCES_LABEL } from './customize.ts'
import { NETWORK_POLICY_API_VERSION, POLICY_NAME } from './policy.ts'
import { ISOLATION_ANNOTATION } from './sync.ts'

/** The isolation decorator's rule. */
export const ISOLATION_ATTACHMENT_RULE: ChildRule = {
  controller: 'gpuhooks-instance-isolation',
  shape: 'decorator',
  types: [{ apiVersion: NETWORK_POLICY_API_VERSION, resource: 'networkpolicies', kind: 'NetworkPolicy' }],
  isChildName: (_scope, _type, name) => name === POLICY_NAME,
  objectLabels: [HOLDS_INSTANCES_LABEL],
  objectAnnotations: [ISOLATION_ANNOTATION]
}
