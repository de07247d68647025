/**
 * The related objects a customize answer asks for, listed as Metacontroller lists them for the
 * cluster layer's driver (driver.ts): each rule by names, namespace, label selector or namespace
 * selector, with the combinations Metacontroller refuses refused here too.
 *
 * Follows Metacontroller v4.17.2: `customize.GetRelatedObjects` (`pkg/controller/common/customize/
 * manager.go`) under hook v2, where every rule's type is present and objects are keyed uniformly;
 * and `matchesRelatedRule` there, which decides whether a watch event on an object re-syncs a
 * parent.
 */
import { isObject, type JsonObject } from '../../support/merge.ts'
import { meta, objectKey, strings } from '../../support/children.ts'
import type { Observed, RelatedRule } from './driver-protocol.ts'
import { isReason, selectorMatches, type KubeApi } from './kube.ts'

/**
 * How a rule selects, as Metacontroller's `determineSelectionType` decides it: `names` with a
 * selector, or `namespace` with `namespaceSelector`, is an error; a namespace selector wins, then
 * a label selector with a namespace, then a namespace or names, then labels alone. A selector is
 * present when it is an object (`{}` included); `null` counts as absent, as a nil pointer does.
 */
export type Selection = 'namespaceSelector' | 'namespaceAndLabels' | 'namespaceAndNames' | 'labels'

export function selectionOf(rule: RelatedRule): Selection {
  const hasLabels = isObject(rule.labelSelector)
  const hasNsSelector = isObject(rule.namespaceSelector)
  const hasNamespace = (rule.namespace ?? '') !== ''
  const hasNames = (rule.names ?? []).length > 0
  if (hasNames && (hasLabels || hasNsSelector))
    throw new Error(`related rule cannot have both names and labelSelector/namespaceSelector: ${JSON.stringify(rule)}`)
  if (hasNamespace && hasNsSelector)
    throw new Error(`related rule cannot have both namespace and namespaceSelector: ${JSON.stringify(rule)}`)
  if (hasNsSelector) return 'namespaceSelector'
  if (hasLabels && hasNamespace) return 'namespaceAndLabels'
  if (hasNamespace || hasNames) return 'namespaceAndNames'
  return 'labels'
}

/** The objects the rules select, by type key, then object key. */
export async function listRelated(kube: KubeApi, rules: readonly RelatedRule[]): Promise<Observed> {
  const related: Observed = new Map()
  for (const rule of rules) {
    const info = await kube.resourceInfo(rule.apiVersion, rule.resource)
    const found = related.get(`${info.kind}.${rule.apiVersion}`) ?? new Map<string, JsonObject>()
    related.set(`${info.kind}.${rule.apiVersion}`, found)
    const ns = rule.namespace ?? ''
    const names = rule.names ?? []
    const list = async (namespace?: string): Promise<JsonObject[]> =>
      (await kube.list({ apiVersion: rule.apiVersion, resource: info.resource, namespace: info.namespaced ? namespace : undefined })).body
    const byLabels = (objects: JsonObject[]): JsonObject[] =>
      objects.filter((o) => selectorMatches(rule.labelSelector, strings(o, 'labels')))
    let items: JsonObject[]
    switch (selectionOf(rule)) {
      case 'namespaceSelector': {
        if (!info.namespaced) throw new Error('namespaceSelector is only supported for namespaced related resources')
        // The Namespaces as they are now (Metacontroller lists its Namespace informer), not as
        // they were when customize answered.
        const namespaces = (await kube.list({ apiVersion: 'v1', resource: 'namespaces' })).body.filter((n) =>
          selectorMatches(rule.namespaceSelector, strings(n, 'labels'))
        )
        items = byLabels((await Promise.all(namespaces.map((n) => list(String(meta(n).name))))).flat())
        break
      }
      case 'namespaceAndLabels':
        items = byLabels(await list(ns))
        break
      case 'namespaceAndNames':
        items = (await list(ns === '' ? undefined : ns)).filter((o) => names.length === 0 || names.includes(String(meta(o).name)))
        break
      case 'labels':
        items = byLabels(await list())
    }
    for (const item of items) found.set(objectKey(item), item)
  }
  return related
}

/**
 * Whether `rule` relates `object` (hook v2, a cluster-scoped parent or any parent under v2), as
 * `matchesRelatedRule` decides whether a watch event on it re-syncs a parent: its type, then its
 * selection. A rule Metacontroller refuses matches nothing (it logs the error and goes on). A
 * namespace selector is matched against the object's Namespace as the API server has it now, as
 * Metacontroller matches it against its Namespace informer: not against what it was when
 * customize answered; an object whose Namespace is gone matches nothing.
 */
export async function ruleMatches(kube: KubeApi, rule: RelatedRule, object: JsonObject): Promise<boolean> {
  const info = await kube.resourceInfo(rule.apiVersion, rule.resource)
  if (object.apiVersion !== rule.apiVersion || object.kind !== info.kind) return false
  let selection: Selection
  try {
    selection = selectionOf(rule)
  } catch {
    return false
  }
  const labels = strings(object, 'labels')
  const namespace = String(meta(object).namespace ?? '')
  const ruleNamespace = rule.namespace ?? ''
  const names = rule.names ?? []
  switch (selection) {
    case 'namespaceSelector': {
      if (!info.namespaced || !selects(rule.labelSelector, labels)) return false
      let ns: JsonObject
      try {
        ns = (await kube.get({ apiVersion: 'v1', resource: 'namespaces', name: namespace })).body
      } catch (err) {
        if (isReason(err, 'NotFound')) return false
        throw err
      }
      return selects(rule.namespaceSelector, strings(ns, 'labels'))
    }
    case 'namespaceAndLabels':
      return selects(rule.labelSelector, labels) && (!info.namespaced || namespace === ruleNamespace)
    case 'namespaceAndNames':
      if (info.namespaced && ruleNamespace !== '' && namespace !== ruleNamespace) return false
      return names.length === 0 || names.includes(String(meta(object).name))
    case 'labels':
      return selects(rule.labelSelector, labels)
  }
}

/** {@link selectorMatches}, with an invalid selector matching nothing, as an event match treats its error. */
function selects(selector: RelatedRule['labelSelector'], labels: Record<string, string>): boolean {
  try {
    return selectorMatches(selector, labels)
  } catch {
    return false
  }
}
