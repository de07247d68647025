/**
 * Finalize hook of the Instance controller: ordered teardown (docs/instance.md, "finalize").
 *
 * First the Pod goes (answered without it, Metacontroller deletes it) while the Service is kept
 * as it is; once no Pod is observed the answer has no children, so the Service goes; and only
 * when nothing is observed does the hook answer `finalized: true`, which removes the finalizer.
 * A DRA Instance's ResourceClaimTemplate goes at once: it holds no device, and the Pod's claim
 * was made from it already; so does the InstanceActivity (docs/lifecycle.md). A persistent
 * workspace's claim goes at once too (the API server's pvc-protection finalizer keeps it while the
 * Pod still mounts it), and the Instance is finalized once it is gone.
 * The status says `Deleting` throughout; spec problems are still reported but never hold the
 * teardown up.
 */
import { asChildren, type CompositeResponse } from '../metacontroller/schemas.ts'
import { keepAsIs } from '../metacontroller/keep.ts'
import { observedOfType } from '../metacontroller/observed.ts'
import { instanceStatus } from './status.ts'
import {
  ACTIVITY_KEY,
  CLAIM_TEMPLATE_KEY,
  POD_KEY,
  SERVICE_KEY,
  WORKSPACE_CLAIM_KEY,
  readView,
  type InstanceSyncRequest
} from './request.ts'
import { instanceProblems } from './view-problems.ts'

/** The finalize hook. */
export function finalize(request: InstanceSyncRequest, now: Date): CompositeResponse {
  const view = readView(request)
  const pods = observedOfType(request.children, POD_KEY)
  const services = observedOfType(request.children, SERVICE_KEY)
  const templates = observedOfType(request.children, CLAIM_TEMPLATE_KEY)
  const claims = observedOfType(request.children, WORKSPACE_CLAIM_KEY)
  const activities = observedOfType(request.children, ACTIVITY_KEY)
  // Only the Service named after the Instance is kept; any other observed one goes at once.
  const children = pods.length > 0 && view.service !== undefined ? [keepAsIs(view.service)] : []
  const status = instanceStatus({
    spec: view.spec,
    generation: view.observedGeneration,
    previousConditions: view.previousConditions,
    now,
    finalizing: true,
    problems: instanceProblems(view).problems,
    pod: view.pod ?? pods[0],
    service: view.service ?? services[0],
    drift: { kind: 'Deleting' }
  })
  return {
    children: asChildren(children),
    status,
    finalized: [pods, services, templates, claims, activities].every((observed) => observed.length === 0)
  }
}
