/**
 * What a controller is, as one record (docs/style.md rule 21): its parent, its hooks with the
 * schemas of what they are asked and what they answer, the rule of what it may create, and the
 * kinds it relates. The service's routes (hooks/server/routes.ts), the render CLI
 * (hooks/cli/controllers.ts), the chart's per-controller switches (deploy/chart/generate.ts) and
 * the package's public API all read it; adding a controller is adding its descriptor to
 * hooks/controllers.ts.
 */
import type { Static, TSchema } from '@sinclair/typebox'
import {
  AdmissionResponseSchema,
  AdmissionReviewSchema,
  admissionResponse,
  type AdmissionRequest,
  type Verdict
} from '../admission/review.ts'
import type { ChildRule, DeclaredType } from './answer-guard.ts'
import type { CustomizeResponse } from './schemas.ts'

/**
 * What an admin sets for the whole service (the process's environment, hooks/server/config.ts),
 * the same for every request: a hook's third input beside the request and the time.
 */
export interface HookContext {
  /**
   * Node label and taint keys a cell pool may ask for though hooks/k8s/node-keys.ts restricts
   * them: keys, or prefixes ending in `/` (`PERMITTED_NODE_KEYS`).
   */
  permittedNodeKeys: readonly string[]
}

/** The context of a service whose environment sets nothing. */
export const DEFAULT_CONTEXT: HookContext = Object.freeze({ permittedNodeKeys: Object.freeze([]) })

/** One hook: the schema its request is checked against, the schema of its answer, and the pure function. */
export interface Hook<Request extends TSchema, Answer> {
  request: Request
  answer: TSchema
  /**
   * The hook: a pure function of the request, the time it was received and the service's context
   * ({@link DEFAULT_CONTEXT} when none is given).
   */
  run(request: Static<Request>, now: Date, context?: HookContext): Answer
}

/** Child types a controller declares only in clusters that serve them, turned on together. */
export interface OptionalChildren {
  /** The chart value under `controllers.<name>` that turns them on (`clusterAPI`). */
  option: string
  types: readonly DeclaredType[]
}

/** One controller. */
export interface ControllerDescriptor<
  CustomizeRequest extends TSchema = TSchema,
  SyncRequest extends TSchema = TSchema,
  SyncAnswer = unknown
> {
  /**
   * Its short name: the path segment of its hooks (`/hooks/<name>/sync`), its admission path
   * (`/admission/<name>`), the prefix of its metric labels and its chart value
   * (`controllers.<name>.enabled`).
   */
  name: string
  /** The parent's apiVersion, resource and kind. */
  parent: DeclaredType
  /**
   * What its answers may hold (answer-guard.ts): its Metacontroller name, composite or decorator,
   * every child type it may answer (those of {@link optionalChildren} included) and its names.
   */
  rule: ChildRule
  /** The child types of {@link rule} that its manifest in `metacontroller/` declares only where they are served. */
  optionalChildren: readonly OptionalChildren[]
  /** Every kind its customize hook may relate. */
  related: readonly DeclaredType[]
  customize: Hook<CustomizeRequest, CustomizeResponse>
  sync: Hook<SyncRequest, SyncAnswer>
  /** The finalize hook, where the controller has one; it is asked what sync is. */
  finalize?: Hook<SyncRequest, SyncAnswer>
  /** The validating admission webhook of its parent, where it has one. */
  admission?: Hook<typeof AdmissionReviewSchema, Static<typeof AdmissionResponseSchema>> & {
    /** The decision alone, for one AdmissionReview's request. */
    review(request: AdmissionRequest, context?: HookContext): Verdict
  }
}

/** The admission part of a descriptor from its decision: the review envelope in, the response out. */
export function admissionHook(
  review: (request: AdmissionRequest, context?: HookContext) => Verdict
): NonNullable<ControllerDescriptor['admission']> {
  return {
    request: AdmissionReviewSchema,
    answer: AdmissionResponseSchema,
    run: (body, _now, context = DEFAULT_CONTEXT) => admissionResponse(body.request.uid, review(body.request, context)),
    review
  }
}
