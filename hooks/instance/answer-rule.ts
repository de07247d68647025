/**
 * What the Instance controller may answer (metacontroller.md rule 10, checked on every answer by
 * hooks/metacontroller/answer-guard.ts): the two child types metacontroller/instance.yaml
 * declares, each child named after the Instance, in its namespace (instance.md, "The Pod" and
 * "The Service").
 */
import type { ChildRule } from '../metacontroller/answer-guard.ts'

/** The Instance controller's rule. */
export const INSTANCE_CHILD_RULE: ChildRule = {
  controller: 'gpuhooks-instance',
  shape: 'composite',
  types: [
    { apiVersion: 'v1', resource: 'pods', kind: 'Pod' },
    { apiVersion: 'v1', resource: 'services', kind: 'Service' }
  ],
  isChildName: (scope, _type, name) => name === scope.parentName
}
