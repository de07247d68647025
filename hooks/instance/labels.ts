/**
 * The names by which an Instance's objects are found: labels, annotations, and the fixed names
 * of the Pod's containers and volumes (docs/instance.md, "The Pod").
 *
 * The part-of label is what the Instance's Service selects (together with the resource type), the
 * type label what the isolation policy selects; the annotations record what a Pod was built from,
 * so the sync hook can tell an outdated Pod from a current one without re-reading anything.
 * On an Instance's Pod and Service, `app.kubernetes.io/part-of` names the Instance (as GPUStack
 * labels workload Pods), while the product's manifests use it for the product;
 * `hooks/k8s/labels.ts` says why that is safe.
 */
import { MANAGED_BY, MANAGED_BY_LABEL, PART_OF_LABEL, RESOURCE_TYPE_INSTANCES, RESOURCE_TYPE_LABEL } from '../k8s/labels.ts'

/** Label naming the InstanceType the Pod was placed by (`spec.type`). */
export const INSTANCE_TYPE_LABEL = 'worker.gpustack.ai/instance-type'

/** Annotation: the Instance's `metadata.generation` the Pod was built from. */
export const GENERATION_ANNOTATION = 'worker.gpustack.ai/instance-generation'
/** Annotation: content hash of the Pod as rendered, without this annotation itself. */
export const POD_HASH_ANNOTATION = 'worker.gpustack.ai/pod-hash'

/** Annotation: content hash of the ResourceClaimTemplate as rendered, without this annotation itself. */
export const CLAIM_TEMPLATE_HASH_ANNOTATION = 'worker.gpustack.ai/claim-template-hash'

/** The Pod's claim of a DRA accelerator, listed in `main`'s `resources.claims` only. */
export const ACCELERATOR_CLAIM = 'accelerator'

/** The ResourceClaimTemplate of a DRA Instance: `<instance>-accelerator`. */
export function claimTemplateName(instanceName: string): string {
  return `${instanceName}-${ACCELERATOR_CLAIM}`
}

/** The suffix of a persistent workspace's claim. */
export const WORKSPACE_CLAIM_SUFFIX = 'workspace'

/** The PersistentVolumeClaim of a persistent workspace: `<instance>-workspace`. */
export function workspaceClaimName(instanceName: string): string {
  return `${instanceName}-${WORKSPACE_CLAIM_SUFFIX}`
}

/** The workload container; it holds the accelerator request. */
export const MAIN_CONTAINER = 'main'
/** The SSH sidecar container, listed after {@link MAIN_CONTAINER}. */
export const SSHD_CONTAINER = 'sshd'
/** The workspace volume of the main container. */
export const WORKSPACE_VOLUME = 'workspace'
/** The volume of the SSH key Secret, mounted into the sidecar. */
export const SSH_KEYS_VOLUME = 'ssh-authorized-keys'
/** The port sshd listens on, declared on the sidecar and exposed by the Service as `ssh`. */
export const SSH_PORT = 22

/**
 * The selector of an Instance's Pod: part-of plus resource type. The Service uses exactly this,
 * so it routes to whatever Pod the Instance currently has, across replacement and a type change.
 */
export function instanceSelector(instanceName: string): Record<string, string> {
  return { [PART_OF_LABEL]: instanceName, [RESOURCE_TYPE_LABEL]: RESOURCE_TYPE_INSTANCES }
}

/** Kueue's label naming the LocalQueue a Pod joins (sigs.k8s.io/kueue pkg/controller/constants). */
export const KUEUE_QUEUE_LABEL = 'kueue.x-k8s.io/queue-name'
/** Kueue's label naming the WorkloadPriorityClass of a Pod's Workload. */
export const KUEUE_PRIORITY_CLASS_LABEL = 'kueue.x-k8s.io/priority-class'
/** The scheduling gate Kueue's Pod webhook adds and lifts once the Pod's Workload is admitted. */
export const KUEUE_ADMISSION_GATE = 'kueue.x-k8s.io/admission'
/** The finalizer Kueue's Pod webhook adds to a Pod it manages; Kueue removes it once the Pod is done. */
export const KUEUE_POD_FINALIZER = 'kueue.x-k8s.io/managed'
/** The Pod condition Kueue sets before it deletes a Pod whose Workload it evicts. */
export const KUEUE_TERMINATION_TARGET = 'TerminationTarget'

/** The queue of an InstanceType (`spec.queue`), as the Pod's labels carry it. */
export interface PodQueue {
  localQueueName: string
  workloadPriorityClassName?: string
}

/**
 * The labels of an Instance's Pod, keys in a fixed order (the order written here, which is not
 * alphabetical; the API server and every hash here sort keys anyway): four of its own, and with a
 * queue, Kueue's queue name and priority class (docs/access.md).
 */
export function podLabels(instanceName: string, typeName: string, queue?: PodQueue): Record<string, string> {
  return {
    [PART_OF_LABEL]: instanceName,
    [MANAGED_BY_LABEL]: MANAGED_BY,
    [RESOURCE_TYPE_LABEL]: RESOURCE_TYPE_INSTANCES,
    [INSTANCE_TYPE_LABEL]: typeName,
    ...(queue !== undefined ? { [KUEUE_QUEUE_LABEL]: queue.localQueueName } : {}),
    ...(queue?.workloadPriorityClassName !== undefined ? { [KUEUE_PRIORITY_CLASS_LABEL]: queue.workloadPriorityClassName } : {})
  }
}
