/**
 * The parents `gpuhooks render` knows, one row per controller, each derived from the controller's
 * descriptor (hooks/controllers.ts): how Metacontroller calls its hooks (composite or decorator),
 * the rule of what it may answer (its child types and their names), and the pure functions.
 */
import type { TSchema } from '@sinclair/typebox'
import { typeKey } from '../metacontroller/observed.ts'
import type { CustomizeResponse } from '../metacontroller/schemas.ts'
import { declaredTypeKeys, type ChildRule } from '../metacontroller/answer-guard.ts'
import type { ControllerDescriptor } from '../metacontroller/descriptor.ts'
import { CONTROLLERS } from '../controllers.ts'

/** One controller as the render CLI drives it. */
export interface RenderController {
  /** The parent's apiVersion and kind. */
  apiVersion: string
  kind: string
  /** Metacontroller's controller name (metacontroller/*.yaml). */
  name: string
  /** Composite: request `{parent, children}`; decorator: `{object, attachments}`. */
  shape: 'composite' | 'decorator'
  /** The child (attachment) type keys the controller declares: those of `rule`. */
  childTypes: readonly string[]
  /** What its answers may hold (answer-guard.ts); `gpuhooks render` checks them as the service does. */
  rule: ChildRule
  customizeSchema: TSchema
  customize: (request: never, now: Date) => CustomizeResponse
  syncSchema: TSchema
  sync: (request: never, now: Date) => unknown
  /** The finalize hook, where the controller has one. */
  finalize?: (request: never, now: Date) => unknown
}

/** The row of one controller. */
function renderRow(controller: ControllerDescriptor): RenderController {
  const { customize, sync, finalize } = controller
  return {
    apiVersion: controller.parent.apiVersion,
    kind: controller.parent.kind,
    name: controller.rule.controller,
    shape: controller.rule.shape,
    childTypes: declaredTypeKeys(controller.rule),
    rule: controller.rule,
    customizeSchema: customize.request,
    customize: (request: never, now: Date) => customize.run(request, now),
    syncSchema: sync.request,
    sync: (request: never, now: Date) => sync.run(request, now),
    ...(finalize === undefined ? {} : { finalize: (request: never, now: Date) => finalize.run(request, now) })
  }
}

/** Every parent the CLI renders, in the order the usage text names them. */
export const RENDER_CONTROLLERS: readonly RenderController[] = CONTROLLERS.map(renderRow)

/**
 * Kinds a related rule may name, by their resource (plural) name: the customize answers name
 * resources, the request keys name kinds. Every kind a controller's descriptor says it relates.
 */
export const RELATED_KINDS: ReadonlyMap<string, { apiVersion: string; kind: string }> = new Map(
  CONTROLLERS.flatMap((c) => c.related).map((r) => [`${r.apiVersion} ${r.resource}`, { apiVersion: r.apiVersion, kind: r.kind }])
)

/** The resource name of a kind, as Kubernetes forms it for these kinds. */
export function plural(kind: string): string {
  const lower = kind.toLowerCase()
  if (lower.endsWith('s')) return `${lower}es`
  if (lower.endsWith('y')) return `${lower.slice(0, -1)}ies`
  return `${lower}s`
}

/** The type key of a related rule, when its kind is known. */
export function ruleTypeKey(apiVersion: string, resource: string): string | undefined {
  const found = RELATED_KINDS.get(`${apiVersion} ${resource}`)
  return found === undefined ? undefined : typeKey(found.apiVersion, found.kind)
}
