/**
 * AdmissionReview v1 (`admission.k8s.io/v1`): the envelope of a validating webhook call, and the
 * answer built from a list of problems.
 *
 * The objects inside stay open; a validator reads what it needs and reports every problem it
 * finds, and the answer joins them, so a user fixes a manifest in one round.
 */
import { Type, type Static } from '@sinclair/typebox'

const GroupVersionKind = Type.Object({ group: Type.String(), version: Type.String(), kind: Type.String() }, { additionalProperties: true })

/** The request part of an AdmissionReview, in the fields a validator reads. */
export const AdmissionRequestSchema = Type.Object(
  {
    uid: Type.String({ minLength: 1 }),
    kind: GroupVersionKind,
    operation: Type.Union([Type.Literal('CREATE'), Type.Literal('UPDATE'), Type.Literal('DELETE'), Type.Literal('CONNECT')]),
    namespace: Type.Optional(Type.String()),
    name: Type.Optional(Type.String()),
    object: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
    oldObject: Type.Optional(Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()])),
    dryRun: Type.Optional(Type.Boolean())
  },
  { additionalProperties: true }
)
export type AdmissionRequest = Static<typeof AdmissionRequestSchema>

/** A whole AdmissionReview as the API server posts it. */
export const AdmissionReviewSchema = Type.Object(
  {
    apiVersion: Type.Literal('admission.k8s.io/v1'),
    kind: Type.Literal('AdmissionReview'),
    request: AdmissionRequestSchema
  },
  { additionalProperties: true }
)
export type AdmissionReview = Static<typeof AdmissionReviewSchema>

/** The answer: `uid` echoed, `allowed`, and on denial a status with code and message. */
export const AdmissionResponseSchema = Type.Object(
  {
    apiVersion: Type.Literal('admission.k8s.io/v1'),
    kind: Type.Literal('AdmissionReview'),
    response: Type.Object(
      {
        uid: Type.String(),
        allowed: Type.Boolean(),
        status: Type.Optional(
          Type.Object(
            {
              code: Type.Integer(),
              reason: Type.String(),
              message: Type.String()
            },
            { additionalProperties: false }
          )
        ),
        warnings: Type.Optional(Type.Array(Type.String()))
      },
      { additionalProperties: false }
    )
  },
  { additionalProperties: false }
)
export type AdmissionResponse = Static<typeof AdmissionResponseSchema>

/** What a validator decides: problems deny, warnings are shown to the user either way. */
export interface Verdict {
  problems: string[]
  warnings?: string[]
}

/**
 * The AdmissionReview answer for a verdict. Denials use 422 (Unprocessable Entity, reason
 * `Invalid`), as the API server's own validation does, and list every problem.
 */
export function admissionResponse(uid: string, verdict: Verdict): AdmissionResponse {
  const response: AdmissionResponse['response'] = { uid, allowed: verdict.problems.length === 0 }
  if (verdict.problems.length > 0) {
    // At most 20 problems spelled out, the rest counted: a denial message stays readable and small.
    const shown = verdict.problems.slice(0, 20)
    const more = verdict.problems.length - shown.length
    response.status = { code: 422, reason: 'Invalid', message: shown.join('; ') + (more > 0 ? `; and ${more} more` : '') }
  }
  if (verdict.warnings !== undefined && verdict.warnings.length > 0) response.warnings = [...verdict.warnings]
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }
}
