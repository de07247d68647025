/**
 * Building blocks for the custom resources' TypeBox schemas.
 *
 * The schemas serve three readers at once: TypeScript (`Static<>`), the hooks' own spec check
 * (`Value.Errors`), and the CRDs' `openAPIV3Schema` (rendered by `crd.ts`). So every block here
 * stays inside what a structural CRD schema can say, and carries the Kubernetes extensions
 * (`x-kubernetes-*`) as plain schema options that TypeBox ignores.
 */
import {
  FormatRegistry,
  Kind,
  Type,
  TypeRegistry,
  type ObjectOptions,
  type SchemaOptions,
  type TProperties,
  type TUnsafe
} from '@sinclair/typebox'

/**
 * `format: date-time` as the API server checks it on a CRD field: an RFC 3339 time. TypeBox knows
 * no format by itself and fails every value of an unknown one, so readers that check stored
 * statuses (cellnodeset-reader.ts) need it registered.
 */
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/
if (!FormatRegistry.Has('date-time')) FormatRegistry.Set('date-time', (value) => RFC3339.test(value) && !Number.isNaN(Date.parse(value)))

TypeRegistry.Set('StringEnum', (schema: { enum: readonly string[] }, value) => typeof value === 'string' && schema.enum.includes(value))

/** A string restricted to `values`, rendered as an OpenAPI `enum` (TypeBox unions are not). */
export function StringEnum<const T extends readonly string[]>(values: T, options: SchemaOptions = {}): TUnsafe<T[number]> {
  return Type.Unsafe<T[number]>({ ...options, [Kind]: 'StringEnum', type: 'string', enum: [...values] })
}

/** The pattern the API server uses for resource quantities (`500m`, `4Gi`, `1e3`). */
export const QUANTITY_PATTERN =
  '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'

/** Compiled once: every Instance and InstanceType check tests a few quantities (not global, so no state). */
const QUANTITY_REGEXP = new RegExp(QUANTITY_PATTERN)

TypeRegistry.Set(
  'Quantity',
  (_schema, value) => (typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && QUANTITY_REGEXP.test(value))
)

/**
 * A CEL rule for a {@link Quantity} that must not be negative, as the API server asks of a Pod's
 * resources and an emptyDir's size limit. The quantity functions came with Kubernetes 1.28.
 */
export const NON_NEGATIVE_QUANTITY_RULE: CelRule = {
  rule: "type(self) == int ? self >= 0 : (!isQuantity(self) || !quantity(self).isLessThan(quantity('0')))",
  message: 'must not be negative'
}

/** A resource quantity: an integer or a quantity string, as `resources.requests` takes. */
export function Quantity(options: SchemaOptions = {}): TUnsafe<number | string> {
  return Type.Unsafe<number | string>({
    ...options,
    [Kind]: 'Quantity',
    anyOf: [{ type: 'integer' }, { type: 'string' }],
    pattern: QUANTITY_PATTERN,
    'x-kubernetes-int-or-string': true
  })
}

TypeRegistry.Set('OpenObject', (_schema, value) => typeof value === 'object' && value !== null && !Array.isArray(value))

/**
 * An object kept verbatim: the API server does not prune inside it and the hooks pass it on
 * unchanged (a container `valueFrom`, a toleration list item, a KubeSwift guest spec).
 */
export function OpenObject<T = Record<string, unknown>>(options: SchemaOptions = {}): TUnsafe<T> {
  return Type.Unsafe<T>({ ...options, [Kind]: 'OpenObject', type: 'object', 'x-kubernetes-preserve-unknown-fields': true })
}

/** A string-to-string map (labels, annotations, a node selector), rendered as `additionalProperties`. */
export function StringMap(description: string, options: { maxProperties?: number } = {}) {
  return Type.Record(Type.String(), Type.String(), { description, ...options })
}

/** The effects a Node taint may have, and so a toleration may match. */
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const

/** A CEL rule on a schema node, as `x-kubernetes-validations` takes it. */
export interface CelRule {
  rule: string
  message?: string
  messageExpression?: string
  fieldPath?: string
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate'
}

/** Schema options carrying CEL rules. */
export function cel(...rules: CelRule[]): { 'x-kubernetes-validations': CelRule[] } {
  return { 'x-kubernetes-validations': rules }
}

/**
 * A CEL rule for the root of a custom resource schema: the object name has at most `maxLength`
 * characters and matches `pattern`. The API server itself asks only a DNS subdomain of a custom
 * resource name; a kind whose name goes into a label value, a Service or a Node name needs more.
 */
export function nameRule(maxLength: number, pattern: string, message: string): CelRule {
  return { rule: `size(self.metadata.name) <= ${maxLength} && self.metadata.name.matches('${pattern}')`, message }
}

/** Marks a schema as a list-map keyed by `keys` (server-side apply merges by them). */
export function listMap(...keys: string[]): Record<string, unknown> {
  return { 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': keys }
}

/** A standard status condition, as every controller of the product writes them; `types` lists its types. */
export function conditionSchema(types: string) {
  return Type.Object(
    {
      type: Type.String({ description: types }),
      status: StringEnum(['True', 'False', 'Unknown'], { description: 'True, False or Unknown.' }),
      reason: Type.String({ description: 'One CamelCase word a program can switch on.' }),
      message: Type.String({ description: 'What a person should know or do.' }),
      lastTransitionTime: Type.String({ format: 'date-time', description: 'When status last changed.' }),
      observedGeneration: Type.Optional(Type.Integer({ description: 'The metadata.generation this condition describes.' }))
    },
    { description: 'A standard condition.' }
  )
}

/**
 * A custom resource as stored: optional `apiVersion` and `kind`, an open `metadata` (the API server
 * validates ObjectMeta itself, and the CRD root may not constrain it), then the kind's own fields
 * (`spec` and `status`, or a Setting's `value`). A field of `fields` named like a header field
 * replaces it in place.
 */
export function CustomResource<T extends TProperties>(fields: T, options: ObjectOptions) {
  return Type.Object(
    {
      apiVersion: Type.Optional(Type.String()),
      kind: Type.Optional(Type.String()),
      metadata: Type.Optional(Type.Object({}, { additionalProperties: true })),
      ...fields
    },
    options
  )
}
