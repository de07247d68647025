/**
 * AdmissionReview requests for the admission tests of each kind: the API server sends the same
 * envelope for every kind, with the old object on UPDATE and DELETE only.
 */
import type { AdmissionRequest } from '../../hooks/admission/review.ts'

/** What an admission request is about: the kind, and the object's namespace and name. */
export interface AdmissionTarget {
  kind: AdmissionRequest['kind']
  namespace: string
  name: string
}

/**
 * A builder of requests about `target` (uid `u-1`): `object` and `oldObject` are sent as given,
 * left out when undefined (`null` is sent as null, as a hostile or broken client might).
 */
export function admissionRequests(
  target: AdmissionTarget
): (operation: AdmissionRequest['operation'], object: unknown, oldObject?: unknown) => AdmissionRequest {
  return (operation, object, oldObject) => ({
    uid: 'u-1',
    kind: target.kind,
    operation,
    namespace: target.namespace,
    name: target.name,
    ...(object !== undefined ? { object: object as Record<string, unknown> | null } : {}),
    ...(oldObject !== undefined ? { oldObject: oldObject as Record<string, unknown> | null } : {})
  })
}
