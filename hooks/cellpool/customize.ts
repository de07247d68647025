/**
 * Customize hook of the cellpool controller (docs/cellpool.md, "customize"): the related object its
 * sync reads, the join Secret.
 *
 * Metacontroller caches this answer per (parent uid, generation) for about 20 minutes, so it
 * depends on the parent's namespace and spec only. The rule names its namespace (docs/metacontroller.md
 * rule 6: under v2 a `names` rule without one matches that name in every namespace, which would
 * hand the sync another namespace's Secret).
 *
 * Choice where the spec is silent: a spec without a usable `bootstrap.joinSecretRef.name` relates
 * nothing (an empty `names` list is not a rule worth sending); the sync hook reports the spec
 * error.
 */
import type { Static } from '@sinclair/typebox'
import { customizeRequestSchema, type CustomizeResponse, type RelatedResourceRule } from '../metacontroller/schemas.ts'
import { CellPoolParentSchema, joinSecretName } from './request.ts'

/** Customize request of the cellpool controller: the pool as sync reads it (a namespace and an open spec). */
export const CellPoolCustomizeRequestSchema = customizeRequestSchema(CellPoolParentSchema)
export type CellPoolCustomizeRequest = Static<typeof CellPoolCustomizeRequestSchema>

/** Relates the join Secret named by `spec.bootstrap.joinSecretRef.name`, in the pool's namespace. */
export function customize(request: CellPoolCustomizeRequest): CustomizeResponse {
  const { namespace } = request.parent.metadata
  const name = joinSecretName(request.parent.spec)
  const rules: RelatedResourceRule[] = []
  if (name !== undefined) rules.push({ apiVersion: 'v1', resource: 'secrets', namespace, names: [name] })
  return { relatedResources: rules }
}
