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

/** The objects the rules select, by type key, then object key. */
export async function listRelated(kube: KubeApi, rules: readonly RelatedRule[]): Promise<Observed> {
  const related: Observed = new Map()
  for (const rule of rules) {
    const info = await kube.resourceInfo(rule.apiVersion, rule.resource)
    const found = related.get(`${info.kind}.${rule.apiVersion}`) ?? new Map<string, JsonObject>()
    related.set(`${info.kind}.${rule.apiVersion}`, found)
    const hasLabels = isObject(rule.labelSelector)
    const hasNsSelector = isObject(rule.namespaceSelector)
    const ns = rule.namespace ?? ''
    const names = rule.names ?? []
    if (names.length > 0 && (hasLabels || hasNsSelector))
      throw new Error(`related rule cannot have both names and labelSelector/namespaceSelector: ${JSON.stringify(rule)}`)
    if (ns !== '' && hasNsSelector)
      throw new Error(`related rule cannot have both namespace and namespaceSelector: ${JSON.stringify(rule)}`)
    const list = async (namespace?: string): Promise<JsonObject[]> =>
      (await kube.list({ apiVersion: rule.apiVersion, resource: info.resource, namespace: info.namespaced ? namespace : undefined })).body
    let items: JsonObject[]
    if (hasNsSelector) {
      if (!info.namespaced) throw new Error('namespaceSelector is only supported for namespaced related resources')
      const namespaces = (await kube.list({ apiVersion: 'v1', resource: 'namespaces' })).body.filter((n) =>
        selectorMatches(rule.namespaceSelector, strings(n, 'labels'))
      )
      items = (await Promise.all(namespaces.map((n) => list(String(meta(n).name))))).flat()
      items = items.filter((o) => selectorMatches(rule.labelSelector, strings(o, 'labels')))
    } else if (hasLabels && ns !== '') items = (await list(ns)).filter((o) => selectorMatches(rule.labelSelector, strings(o, 'labels')))
    else if (ns !== '' || names.length > 0)
      items = (await list(ns === '' ? undefined : ns)).filter((o) => names.length === 0 || names.includes(String(meta(o).name)))
    else items = (await list()).filter((o) => selectorMatches(rule.labelSelector, strings(o, 'labels')))
    for (const item of items) found.set(objectKey(item), item)
  }
  return related
}

/**
 * Whether `rule` relates `object` (hook v2): its type, then its selection. A namespace selector is
 * matched against the object's Namespace as the API server has it now, as Metacontroller matches
 * it against its Namespace informer: not against what it was when customize answered.
 */
export async function ruleMatches(kube: KubeApi, rule: RelatedRule, object: JsonObject): Promise<boolean> {
  const info = await kube.resourceInfo(rule.apiVersion, rule.resource)
  if (object.apiVersion !== rule.apiVersion || object.kind !== info.kind) return false
  const labels = strings(object, 'labels')
  const namespace = String(meta(object).namespace ?? '')
  const ruleNamespace = rule.namespace ?? ''
  const names = rule.names ?? []
  if (isObject(rule.namespaceSelector)) {
    if (!info.namespaced || !selectorMatches(rule.labelSelector, labels)) return false
    try {
      const ns = (await kube.get({ apiVersion: 'v1', resource: 'namespaces', name: namespace })).body
      return selectorMatches(rule.namespaceSelector, strings(ns, 'labels'))
    } catch (err) {
      if (isReason(err, 'NotFound')) return false
      throw err
    }
  }
  if (isObject(rule.labelSelector)) {
    if (!selectorMatches(rule.labelSelector, labels)) return false
    return ruleNamespace === '' || !info.namespaced || namespace === ruleNamespace
  }
  if (ruleNamespace !== '' || names.length > 0) {
    if (info.namespaced && ruleNamespace !== '' && namespace !== ruleNamespace) return false
    return names.length === 0 || names.includes(String(meta(object).name))
  }
  return true
}
