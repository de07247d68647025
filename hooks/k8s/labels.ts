/**
 * Labels shared by every controller of the product, defined once below all of them.
 *
 * `app.kubernetes.io/part-of` means two things, on purpose:
 * - on the objects an Instance owns (its Pod and Service), it names the Instance, as GPUStack
 *   labels its workload Pods; the Instance's Service selects its Pod by it;
 * - on the product's own manifests (CRDs, Metacontroller controllers, the examples), it names the
 *   product, `gpuhooks`, as the Kubernetes recommended labels describe it.
 * A selector on part-of therefore always adds a second label (the resource type, or the
 * managed-by label) so that the two uses never match each other.
 */

/** The label every object the product writes carries. */
export const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by'
/** The value of {@link MANAGED_BY_LABEL}. */
export const MANAGED_BY = 'gpuhooks'

/** On an Instance's Pod and Service: the Instance's name. On manifests: the product (see above). */
export const PART_OF_LABEL = 'app.kubernetes.io/part-of'

/** Label naming the kind of GPUStack resource a Pod runs; the isolation policy selects on it. */
export const RESOURCE_TYPE_LABEL = 'resource.gpustack.ai/type'
/** The value of {@link RESOURCE_TYPE_LABEL} on Instance Pods. */
export const RESOURCE_TYPE_INSTANCES = 'instances'
