/**
 * What the Instance controller may answer (docs/metacontroller.md rule 10, checked on every answer by
 * hooks/metacontroller/answer-guard.ts): the child types metacontroller/instance.yaml
 * declares, in the Instance's namespace: the Pod, the Service and the InstanceActivity named after
 * the Instance, the ResourceClaimTemplate `<instance>-accelerator` and the PersistentVolumeClaim
 * `<instance>-workspace` (docs/instance.md, "The Pod", "The Service", "DRA" and "The persistent
 * workspace"; docs/lifecycle.md).
 */
import type { ChildRule } from '../metacontroller/answer-guard.ts'
import { claimTemplateName, workspaceClaimName } from './labels.ts'
import { CLAIM_TEMPLATE_KEY, WORKSPACE_CLAIM_KEY } from './request.ts'

/** The Instance controller's rule. */
export const INSTANCE_CHILD_RULE: ChildRule = {
  controller: 'gpuhooks-instance',
  shape: 'composite',
  types: [
    { apiVersion: 'v1', resource: 'pods', kind: 'Pod' },
    { apiVersion: 'v1', resource: 'services', kind: 'Service' },
    { apiVersion: 'resource.k8s.io/v1', resource: 'resourceclaimtemplates', kind: 'ResourceClaimTemplate' },
    { apiVersion: 'v1', resource: 'persistentvolumeclaims', kind: 'PersistentVolumeClaim' },
    { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instanceactivities', kind: 'InstanceActivity' }
  ],
  isChildName: (scope, type, name) =>
    name ===
    (type === CLAIM_TEMPLATE_KEY
      ? claimTemplateName(scope.parentName)
      : type === WORKSPACE_CLAIM_KEY
        ? workspaceClaimName(scope.parentName)
        : scope.parentName)
}
