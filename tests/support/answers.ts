/**
 * HTTP answers checked against their schemas. A hook answer is checked against the product's own
 * response schema (hooks/metacontroller/schemas.ts, hooks/admission/review.ts), which must refuse
 * undocumented fields at the top level: Metacontroller v2 decodes answers strictly, so a field it
 * does not know fails the sync. The transport's own answers (errors, probes) have no product
 * schema; theirs are written here, from the error tiers of the style guide.
 */
import { Type, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'

/** Every way `body` differs from `schema`, as `path: message` lines; none when it fits. */
export function answerErrors(schema: TSchema, body: unknown): string[] {
  if (schema.additionalProperties !== false)
    throw new Error(`${String(schema.title ?? 'answer schema')}: must refuse undocumented top-level fields`)
  return [...Value.Errors(schema, body)].map((e) => `${e.path === '' ? '/' : e.path}: ${e.message}`)
}

/** A 4xx or 5xx body: a reason a person can act on; for 400 the fields, for 500 the request id. */
export const ErrorAnswerSchema = Type.Object(
  {
    error: Type.String({ minLength: 1 }),
    message: Type.String({ minLength: 1 }),
    fields: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
    requestId: Type.Optional(Type.String({ minLength: 1 }))
  },
  { additionalProperties: false }
)

/** `/healthz` and `/readyz`. */
export const ProbeAnswerSchema = Type.Object(
  { status: Type.Union([Type.Literal('ok'), Type.Literal('draining')]) },
  { additionalProperties: false }
)
