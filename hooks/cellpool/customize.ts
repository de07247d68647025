/**
 * Customize hook of the cellpool controller (docs/cellpool.md, "customize"): the related objects its
 * sync reads, the join Secret and, for a DRA pool, the infrastructure cluster's DRA inventory
 * (inventory.ts): every ResourceSlice, the ResourceClaims of every namespace and the pool's
 * ResourceClaimTemplate.
 *
 * Under hook version v2 Metacontroller lists a rule without `namespace` in every namespace, also
 * for a namespaced parent (only v1 confines it to the parent's namespace), and a cluster-scoped
 * type such as ResourceSlice in full. DRA types are related only for DRA pools: Metacontroller
 * fails the whole sync of a parent one of whose related types the cluster does not serve, and a
 * DRA pool cannot run where resource.k8s.io/v1 is not served anyway.
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
import type { CustomizeResponse, RelatedResourceRule } from '../metacontroller/schemas.ts'
import { joinSecretName } from './request/request.ts'
import { DRA_API_VERSION } from './request/inventory.ts'
import { resolvePool } from './request/resolve.ts'
import type { CellPoolCustomizeRequest } from './model/request.ts'

/**
 * Relates the join Secret named by `spec.bootstrap.joinSecretRef.name`, in the pool's namespace,
 * and a DRA pool's inventory.
 */
export function customize(request: CellPoolCustomizeRequest): CustomizeResponse {
  const { namespace } = request.parent.metadata
  const name = joinSecretName(request.parent.spec)
  const rules: RelatedResourceRule[] = []
  if (name !== undefined) rules.push({ apiVersion: 'v1', resource: 'secrets', namespace, names: [name] })
  const dra = resolvePool(request.parent.spec).gpu.dra
  if (dra !== undefined && dra.claim.name !== '') {
    rules.push({ apiVersion: DRA_API_VERSION, resource: 'resourceslices' }, { apiVersion: DRA_API_VERSION, resource: 'resourceclaims' })
    if (dra.claim.kind === 'resourceClaimTemplateName') {
      rules.push({ apiVersion: DRA_API_VERSION, resource: 'resourceclaimtemplates', namespace, names: [dra.claim.name] })
    }
  }
  return { relatedResources: rules }
}
