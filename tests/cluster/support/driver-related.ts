/**
 * The related objects a customize answer asks for, listed as Metacontroller lists them for the
 * cluster layer's driver (driver.ts): each rule by names, namespace, label selector or namespace
 * selector, with the combinations Metacontroller refuses refused here too.
 *
 * Follows Metacontroller v4.17.2: `customize.GetRelatedObjects` (`pkg/controller/common/customize/
 * manager.go`) under hook v2, where every rule's type is present and objects are keyed uniformly.
 */
import { isObject, type JsonObject } from '../../support/merge.ts'
import { meta, objectKey, strings } from '../../support/children.ts'
import type { Observed, RelatedRule } from './driver-protocol.ts'
import { selectorMatches, type KubeApi } from './kube.ts'

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
