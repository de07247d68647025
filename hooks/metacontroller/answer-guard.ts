/**
 * The guard every sync and finalize answer passes before it leaves the service
 * (metacontroller.md rule 10).
 *
 * Metacontroller does not filter an answer by the controller's declared child types:
 * `ManageChildren` (`pkg/controller/common/manage_children.go`) takes a dynamic client for every
 * kind the answer names and creates or updates each object in the namespace the object names,
 * checking only that its labels match the parent's selector, under a `*`-on-`*` ClusterRole. So
 * the hooks are the only check, and this is it: each answered object must be
 *
 * 1. of a type the controller declares in `metacontroller/` (its `childResources` or
 *    `attachments`; {@link ChildRule.types}, compared with the manifests by a unit test),
 * 2. in the namespace of the parent (of a decorated Namespace: in that Namespace), written out,
 * 3. named as the controller names that type of child ({@link ChildRule.isChildName}, defined
 *    beside each controller);
 *
 * and a decorator's answer may set only the labels and annotations of the decorated object the
 * controller owns. An answer that breaks any of this is a bug (the hooks build and keep only such
 * objects): it is never sent. The route fails with {@link UnsafeAnswerError}, which the error
 * handler answers as a masked 500 carrying the request id, and logs with every violation.
 */
import { isRecord } from '../k8s/objects.ts'
import { typeKey } from './observed.ts'

/** One child type of a controller's manifest, with the kind its resource holds. */
export interface DeclaredType {
  apiVersion: string
  /** The resource as the manifest names it (`pods`, `networkpolicies`). */
  resource: string
  kind: string
}

/** Whose children a request is about: what the naming rule reads. */
export interface ChildScope {
  /** The parent's name (for a decorator: the decorated object's). */
  parentName: string
  /** The namespace every child lives in. */
  namespace: string
}

/** What one controller may answer. */
export interface ChildRule {
  /** The controller's name in its manifest (`metadata.name` in `metacontroller/*.yaml`). */
  controller: string
  /** A CompositeController answers `children`, a DecoratorController `attachments`. */
  shape: 'composite' | 'decorator'
  /** The child (attachment) types the manifest declares. */
  types: readonly DeclaredType[]
  /** Whether the controller gives a child of type `type` (a type key) the name `name`. */
  isChildName(scope: ChildScope, type: string, name: string): boolean
  /** A decorator: the label keys it may set or remove on the decorated object. */
  objectLabels?: readonly string[]
  /** A decorator: the annotation keys it may set or remove on the decorated object. */
  objectAnnotations?: readonly string[]
}

/** The type keys of a rule's declared types (`Pod.v1`, `NetworkPolicy.networking.k8s.io/v1`). */
export function declaredTypeKeys(rule: ChildRule): string[] {
  return rule.types.map((t) => typeKey(t.apiVersion, t.kind))
}

/**
 * The scope of a sync or finalize request: the parent's name and namespace, or for a decorator of
 * Namespaces the Namespace's name as both. Undefined when the request has no such strings (the
 * route's schema has refused it already).
 */
export function scopeOf(rule: ChildRule, request: unknown): ChildScope | undefined {
  const holder = isRecord(request) ? (rule.shape === 'composite' ? request.parent : request.object) : undefined
  const metadata = isRecord(holder) ? holder.metadata : undefined
  const name = isRecord(metadata) ? metadata.name : undefined
  const namespace = rule.shape === 'composite' && isRecord(metadata) ? metadata.namespace : name
  if (typeof name !== 'string' || typeof namespace !== 'string' || namespace === '') return undefined
  return { parentName: name, namespace }
}

/**
 * Whether `object`, of type key `type`, is one the controller may answer in `scope`: a declared
 * type, in the scope's namespace, named by the rule. The hooks ask this before keeping an observed
 * child; the guard asks it of every answered one.
 */
export function isOwnChild(rule: ChildRule, scope: ChildScope, type: string, object: unknown): boolean {
  const metadata = isRecord(object) ? object.metadata : undefined
  if (!isRecord(metadata) || typeof metadata.name !== 'string') return false
  return declaredTypeKeys(rule).includes(type) && metadata.namespace === scope.namespace && rule.isChildName(scope, type, metadata.name)
}

/** Every way `answer` breaks the rule, one sentence each; empty when it may be sent. */
export function answerViolations(rule: ChildRule, request: unknown, answer: unknown): string[] {
  const scope = scopeOf(rule, request)
  const field = rule.shape === 'composite' ? 'children' : 'attachments'
  const list = isRecord(answer) ? answer[field] : undefined
  if (!Array.isArray(list)) return [`the answer has no ${field} list`]
  const out: string[] = []
  list.forEach((child: unknown, i) => {
    const where = `${field}[${i}]`
    const apiVersion = isRecord(child) ? child.apiVersion : undefined
    const kind = isRecord(child) ? child.kind : undefined
    const metadata = isRecord(child) ? child.metadata : undefined
    const name = isRecord(metadata) ? metadata.name : undefined
    if (typeof apiVersion !== 'string' || typeof kind !== 'string' || typeof name !== 'string') {
      out.push(`${where} lacks a string apiVersion, kind or metadata.name`)
      return
    }
    const type = typeKey(apiVersion, kind)
    const namespace = isRecord(metadata) ? metadata.namespace : undefined
    const key = typeof namespace === 'string' && namespace !== '' ? `${namespace}/${name}` : name
    const what = `${where} ${short(type)} ${short(key)}`
    if (!declaredTypeKeys(rule).includes(type)) out.push(`${what}: ${rule.controller} declares only ${declaredTypeKeys(rule).join(', ')}`)
    else if (scope === undefined) out.push(`${what}: the request names no parent namespace to place it in`)
    else if (namespace !== scope.namespace) out.push(`${what}: not in namespace ${scope.namespace}`)
    else if (!rule.isChildName(scope, type, name))
      out.push(`${what}: not a name ${rule.controller} gives a ${short(kind)} of ${short(scope.parentName)}`)
  })
  if (rule.shape === 'decorator') {
    for (const [field, allowed] of [
      ['labels', rule.objectLabels ?? []],
      ['annotations', rule.objectAnnotations ?? []]
    ] as const) {
      const map = isRecord(answer) ? answer[field] : undefined
      for (const key of isRecord(map) ? Object.keys(map) : []) {
        if (!allowed.includes(key))
          out.push(`${field} ${key}: ${rule.controller} sets only ${allowed.join(', ') || 'none'} on the decorated object`)
      }
    }
  }
  return out
}

/** Violations spelled out in an error message; all of them stay on the error. */
const MAX_SHOWN = 10

/** A request-chosen string cut to a length a log line can carry. */
function short(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}...` : text
}

/** An answer the guard refused: a bug, answered as a masked 500 and logged with its violations. */
export class UnsafeAnswerError extends Error {
  /** Read by the error handler: the internal-error tier. */
  readonly statusCode = 500
  readonly code = 'GPUHOOKS_UNSAFE_ANSWER'

  constructor(
    readonly hook: string,
    readonly violations: readonly string[]
  ) {
    const shown = violations.slice(0, MAX_SHOWN).join('; ')
    const more = violations.length > MAX_SHOWN ? `; and ${violations.length - MAX_SHOWN} more` : ''
    super(`${hook}: the answer holds what its controller may not create, so it was not sent: ${shown}${more}`)
    this.name = 'UnsafeAnswerError'
  }
}

/** Throws {@link UnsafeAnswerError} unless `answer` obeys `rule`; returns `answer` otherwise. */
export function guardAnswer<A>(hook: string, rule: ChildRule, request: unknown, answer: A): A {
  const violations = answerViolations(rule, request, answer)
  if (violations.length > 0) throw new UnsafeAnswerError(hook, violations)
  return answer
}
