/**
 * The hooks of the GPUCellPool controller (docs/cellpool.md), the entry points its descriptor (descriptor.ts) binds:
 * `sync` and `finalize` of the CompositeController, `customize`, and the admission check. Each is a
 * pure function of its request (and the time it arrived, and the service's context: the Node keys
 * an admin permits beyond hooks/k8s/node-keys.ts's rule).
 *
 * Sync and finalize go the same way: the request is read once (request/), its cells once
 * (cells/cell.ts), a plan says what the answer does (plan/sync-plan.ts, plan/blocking.ts for a
 * pool that may not create cells, plan/teardown.ts), and one renderer makes the answer
 * (answer/render.ts). Per cell the answer carries a bootstrap Secret and the provisioner's children
 * (SwiftGuest: a SwiftSeedProfile and a SwiftGuest; Cluster API: a Machine); per pool a
 * CellNodeSet, the pool's request to the workload cluster, and the provisioner's own child.
 */
import type { AdmissionRequest, Verdict } from '../admission/review.ts'
import { canonicalJson } from '../k8s/hash.ts'
import { isRecord } from '../k8s/objects.ts'
import { DEFAULT_CONTEXT, type HookContext } from '../metacontroller/descriptor.ts'
import type { CompositeResponse, CustomizeResponse, RelatedResourceRule } from '../metacontroller/schemas.ts'
import { renderAnswer } from './answer/render.ts'
import { readCells } from './cells/cell.ts'
import { phaseConfig } from './cells/phases.ts'
import type { CellPoolCustomizeRequest, CellPoolSyncRequest } from './model/request.ts'
import { blockedPlan, blockingProblem } from './plan/blocking.ts'
import { syncPlan } from './plan/sync-plan.ts'
import { teardownPlan, teardownView } from './plan/teardown.ts'
import { provisionerOf } from './provisioners/choose.ts'
import { DRA_API_VERSION } from './request/inventory.ts'
import { joinSecretName, readPool } from './request/request.ts'
import { resolvePool } from './request/resolve.ts'
import { workloadOf } from './request/workload.ts'
import { nameOf, notActedOn, provisionerChangeProblems } from './rules/admission.ts'
import { poolProblems } from './rules/validate.ts'

/** The sync hook. */
export function sync(request: CellPoolSyncRequest, now: Date, context: HookContext = DEFAULT_CONTEXT): CompositeResponse {
  const provisioner = provisionerOf(request.parent.spec)
  const view = readPool(request, provisioner)
  const pool = resolvePool(view.spec)
  const workload = workloadOf(view, now)
  const templateHash = provisioner.templateHash(pool)
  const cells = readCells(view, workload, phaseConfig(pool), templateHash, now)
  const { blocking, template } = blockingProblem(view, pool, provisioner, context.permittedNodeKeys)
  const plan =
    blocking !== undefined
      ? blockedPlan(view, pool, cells, blocking)
      : syncPlan({ view, pool, provisioner, cells, workload, templateHash, related: request.related, now })
  return renderAnswer(plan, { view, pool, provisioner, workload, template, now })
}

/** The finalize hook: the pool's ordered teardown (plan/teardown.ts). */
export function finalize(request: CellPoolSyncRequest, now: Date, context: HookContext = DEFAULT_CONTEXT): CompositeResponse {
  const { provisioner, view } = teardownView(request)
  const pool = resolvePool(view.spec)
  const workload = workloadOf(view, now)
  const cells = readCells(view, workload, phaseConfig(pool), '', now)
  const plan = teardownPlan({ view, pool, provisioner, cells, workload, now, permittedNodeKeys: context.permittedNodeKeys })
  return renderAnswer(plan, { view, pool, provisioner, workload, template: '', now })
}

/**
 * The customize hook (docs/cellpool.md, "customize"): the related objects sync reads, the join
 * Secret named by `spec.bootstrap.joinSecretRef.name` in the pool's namespace and, for a DRA pool,
 * the claim its cells ask with (its ResourceClaimTemplate, or its shared ResourceClaim), by name:
 * the free-GPU check reads whether it narrows its request with selectors (request/inventory.ts).
 * The infrastructure cluster's devices and claims are not related: the workload agent summarizes
 * them into the CellNodeSet status, so that a sync carries four counts, not every claim of the
 * cluster, and a claim changing elsewhere does not resync the pool.
 *
 * DRA types are related only for DRA pools: Metacontroller fails the whole sync of a parent one of
 * whose related types the cluster does not serve, and a DRA pool cannot run where
 * resource.k8s.io/v1 is not served anyway.
 *
 * Metacontroller caches this answer per (parent uid, generation) for about 20 minutes, so it
 * depends on the parent's namespace and spec only. The rule names its namespace (docs/metacontroller.md
 * rule 6: under v2 a `names` rule without one matches that name in every namespace, which would
 * hand the sync another namespace's Secret).
 *
 * Choice where the spec is silent: a spec without a usable `bootstrap.joinSecretRef.name` relates
 * no Secret, and one without a DRA claim or template name no DRA inventory (an empty `names` list
 * is not a rule worth sending); the sync hook reports the spec error.
 */
export function customize(request: CellPoolCustomizeRequest): CustomizeResponse {
  const { namespace } = request.parent.metadata
  const name = joinSecretName(request.parent.spec)
  const rules: RelatedResourceRule[] = []
  if (name !== undefined) rules.push({ apiVersion: 'v1', resource: 'secrets', namespace, names: [name] })
  const dra = resolvePool(request.parent.spec).gpu.dra
  if (dra !== undefined && dra.claim.name !== '') {
    const resource = dra.claim.kind === 'resourceClaimTemplateName' ? 'resourceclaimtemplates' : 'resourceclaims'
    rules.push({ apiVersion: DRA_API_VERSION, resource, namespace, names: [dra.claim.name] })
  }
  return { relatedResources: rules }
}

/**
 * The admission check (`POST /admission/cellpool`, docs/cellpool.md "Admission"): CREATE and
 * UPDATE are checked with every rule of {@link poolProblems}, all problems at once, each naming
 * the field, and an UPDATE with the rules of rules/admission.ts. The guestTemplate denylist among
 * them is a security control: a cell's launcher pod is privileged in the infrastructure cluster.
 *
 * Choice where the spec is silent: an UPDATE that leaves the spec and name as stored is not checked
 * against the spec rules, so metadata writes (Metacontroller removing its finalizer from a deleted
 * pool, a label) are never blocked by a rule the object was admitted without (webhook off, an older
 * release). Spec equality is canonical JSON (key order does not count).
 */
export function reviewCellPool(request: AdmissionRequest, context: HookContext = DEFAULT_CONTEXT): Verdict {
  if (request.operation !== 'CREATE' && request.operation !== 'UPDATE') return { problems: [] }
  const object: unknown = request.object
  if (!isRecord(object)) return { problems: [`object: ${request.operation} carries no GPUCellPool object to check`] }
  const name = nameOf(object) ?? request.name ?? ''
  const old: unknown = request.oldObject
  if (
    request.operation === 'UPDATE' &&
    isRecord(old) &&
    canonicalJson(old.spec) === canonicalJson(object.spec) &&
    nameOf(old) === nameOf(object)
  ) {
    return { problems: [] }
  }
  const problems = poolProblems(name, object.spec, context.permittedNodeKeys).map((p) => p.message)
  if (request.operation === 'UPDATE' && isRecord(old)) problems.push(...provisionerChangeProblems(old, object))
  return { problems, warnings: notActedOn(object.spec) }
}
