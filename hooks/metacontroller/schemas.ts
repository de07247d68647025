/**
 * Metacontroller hook payloads (hook `version: v2`), one TypeBox schema per payload with its type
 * beside it.
 *
 * Requests are validated only in the fields the hooks read; Kubernetes objects stay open
 * (`additionalProperties: true`) so validation never strips or coerces a field we pass back, and
 * unknown top-level fields (Metacontroller may add some) are ignored. Responses carry only the
 * documented fields, because v2 decodes them strictly.
 */
import { Type, type Static, type TProperties, type TSchema } from '@sinclair/typebox'
import type { KubeObject } from '../k8s/objects.ts'

const metaFields = {
  uid: Type.Optional(Type.String()),
  generation: Type.Optional(Type.Integer()),
  labels: Type.Optional(Type.Record(Type.String(), Type.String())),
  annotations: Type.Optional(Type.Record(Type.String(), Type.String())),
  deletionTimestamp: Type.Optional(Type.String())
}

/** The metadata fields a hook may read; everything else passes through. */
export const ObjectMetaSchema = Type.Object(
  { name: Type.String({ minLength: 1 }), namespace: Type.Optional(Type.String()), ...metaFields },
  { additionalProperties: true }
)

/** Any Kubernetes object: a name is all a hook can rely on. */
export const KubeObjectSchema = Type.Object(
  { apiVersion: Type.Optional(Type.String()), kind: Type.Optional(Type.String()), metadata: ObjectMetaSchema },
  { additionalProperties: true }
)
export type KubeObjectPayload = Static<typeof KubeObjectSchema>

/** A namespaced object: every namespaced hook reads its namespace. */
export const NamespacedObjectSchema = Type.Object(
  {
    apiVersion: Type.Optional(Type.String()),
    kind: Type.Optional(Type.String()),
    metadata: Type.Object(
      { name: Type.String({ minLength: 1 }), namespace: Type.String({ minLength: 1 }), ...metaFields },
      { additionalProperties: true }
    )
  },
  { additionalProperties: true }
)

/**
 * A namespaced parent as a controller's hooks read it: name and namespace required, the spec an
 * open object. A wrong spec is reported in the parent's status, never refused with a 400 that
 * Metacontroller would retry forever (docs/README.md, "Hook endpoints").
 */
export const OpenSpecParentSchema = Type.Object(
  {
    apiVersion: Type.Optional(Type.String()),
    kind: Type.Optional(Type.String()),
    metadata: NamespacedObjectSchema.properties.metadata,
    spec: Type.Record(Type.String(), Type.Unknown()),
    status: Type.Optional(Type.Unknown())
  },
  { additionalProperties: true }
)

/**
 * Objects of one type keyed `namespace/name` (or `name` for cluster-scoped ones). Typed as open
 * objects: every field beyond metadata is there to be read defensively.
 */
export const ObjectMapSchema = Type.Record(Type.String(), Type.Unsafe<KubeObject>(KubeObjectSchema))
export type ObjectMap = Static<typeof ObjectMapSchema>

/** Observed objects keyed by type (`Pod.v1`, `NetworkPolicy.networking.k8s.io/v1`). */
export const TypedObjectsSchema = Type.Record(Type.String(), Type.Union([ObjectMapSchema, Type.Null()]))
export type TypedObjects = Static<typeof TypedObjectsSchema>

/** The controller object Metacontroller sends along; hooks do not read it. */
const ControllerSchema = Type.Optional(Type.Unknown())

/** Customize request, for composite and decorator controllers alike. */
export function customizeRequestSchema<P extends TSchema>(parent: P) {
  return Type.Object({ controller: ControllerSchema, parent }, { additionalProperties: true })
}
export type CustomizeRequest<P> = { controller?: unknown; parent: P }

/** A label selector as Metacontroller decodes it; strictly too: an unknown field fails the customize call. */
const LabelSelectorSchema = Type.Object(
  {
    matchLabels: Type.Optional(Type.Record(Type.String(), Type.String())),
    matchExpressions: Type.Optional(
      Type.Array(
        Type.Object(
          {
            key: Type.String(),
            operator: Type.String(),
            values: Type.Optional(Type.Array(Type.String()))
          },
          { additionalProperties: false }
        )
      )
    )
  },
  { additionalProperties: false }
)

/** One related-resource rule of a customize answer. */
export const RelatedResourceRuleSchema = Type.Object(
  {
    apiVersion: Type.String(),
    resource: Type.String(),
    labelSelector: Type.Optional(LabelSelectorSchema),
    /**
     * Namespaces whose objects are related (Metacontroller v4.15 or later; not with `namespace`
     * or `names`). Matched against the Namespaces as they are at each sync and each event, not
     * as they were when customize answered.
     */
    namespaceSelector: Type.Optional(LabelSelectorSchema),
    namespace: Type.Optional(Type.String()),
    names: Type.Optional(Type.Array(Type.String()))
  },
  { additionalProperties: false }
)
export type RelatedResourceRule = Static<typeof RelatedResourceRuleSchema>

/** Customize answer. */
export const CustomizeResponseSchema = Type.Object(
  { relatedResources: Type.Array(RelatedResourceRuleSchema) },
  { additionalProperties: false }
)
export type CustomizeResponse = Static<typeof CustomizeResponseSchema>

/**
 * A sync or finalize request, for composite and decorator controllers alike: the controller,
 * `fields` (the hooked object and its children or attachments), then the related objects and the
 * finalizing flag.
 */
function syncRequestSchema<T extends TProperties>(fields: T) {
  return Type.Object(
    {
      controller: ControllerSchema,
      ...fields,
      related: Type.Optional(Type.Union([TypedObjectsSchema, Type.Null()])),
      finalizing: Type.Optional(Type.Boolean())
    },
    { additionalProperties: true }
  )
}
/** The fields of {@link syncRequestSchema} beside the hooked object and its children or attachments. */
interface SyncRequestCommon {
  controller?: unknown
  related?: TypedObjects | null
  finalizing?: boolean
}

/** CompositeController sync and finalize request. */
export function compositeRequestSchema<P extends TSchema>(parent: P) {
  return syncRequestSchema({ parent, children: TypedObjectsSchema })
}
export interface CompositeRequest<P> extends SyncRequestCommon {
  parent: P
  children: TypedObjects
}

/** A child or attachment in an answer: Metacontroller finds its REST path from apiVersion and kind. */
const AnsweredObjectSchema = Type.Object(
  { apiVersion: Type.String({ minLength: 1 }), kind: Type.String({ minLength: 1 }), metadata: ObjectMetaSchema },
  { additionalProperties: true }
)

/** CompositeController sync and finalize answer. */
export const CompositeResponseSchema = Type.Object(
  {
    status: Type.Record(Type.String(), Type.Unknown()),
    children: Type.Array(AnsweredObjectSchema),
    resyncAfterSeconds: Type.Optional(Type.Number({ minimum: 0 })),
    finalized: Type.Optional(Type.Boolean())
  },
  { additionalProperties: false }
)
export type CompositeResponse = Static<typeof CompositeResponseSchema>

/** Children as the response schema types them (every object a hook answers has a name). */
export function asChildren(objects: readonly KubeObject[]): CompositeResponse['children'] {
  return objects as CompositeResponse['children']
}

/** DecoratorController sync request. */
export function decoratorRequestSchema<P extends TSchema>(object: P) {
  return syncRequestSchema({ object, attachments: TypedObjectsSchema })
}
export interface DecoratorRequest<P> extends SyncRequestCommon {
  object: P
  attachments: TypedObjects
}

/** DecoratorController sync answer; a null label or annotation value removes the key. */
export const DecoratorResponseSchema = Type.Object(
  {
    labels: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]))),
    annotations: Type.Optional(Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()]))),
    status: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()]),
    attachments: Type.Array(AnsweredObjectSchema),
    resyncAfterSeconds: Type.Optional(Type.Number({ minimum: 0 })),
    finalized: Type.Optional(Type.Boolean())
  },
  { additionalProperties: false }
)
export type DecoratorResponse = Static<typeof DecoratorResponseSchema>
