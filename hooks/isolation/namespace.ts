/**
 * The decorated object: a Namespace, as the isolation hooks read it.
 */
import { Type, type Static } from '@sinclair/typebox'
import { isTerminatingNamespace } from '../k8s/objects.ts'
import { ObjectMetaSchema } from '../metacontroller/schemas.ts'

/**
 * A Namespace: cluster-scoped, so a name and nothing else is required. The hooks also read
 * `metadata.deletionTimestamp` and `status.phase` (a namespace being deleted); the other common
 * metadata fields are typed as everywhere else, and the rest passes through unvalidated.
 */
export const NamespaceSchema = Type.Object(
  {
    apiVersion: Type.Optional(Type.String()),
    kind: Type.Optional(Type.String()),
    metadata: ObjectMetaSchema,
    status: Type.Optional(Type.Object({ phase: Type.Optional(Type.String()) }, { additionalProperties: true }))
  },
  { additionalProperties: true }
)
export type Namespace = Static<typeof NamespaceSchema>

/**
 * True while the namespace is being deleted: its deletion timestamp is set, or the API server
 * already reports phase `Terminating`.
 */
export function isTerminating(namespace: Namespace): boolean {
  return isTerminatingNamespace(namespace)
}
