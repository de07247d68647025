/**
 * What a pass of the cluster layer's driver (driver.ts) does to children on the API server:
 * claim them (adopt, release), then manage them (delete, create, update by method), with the GET
 * and the AtomicUpdate these rest on.
 *
 * Follows Metacontroller v4.17.2: `claimChildren` in `pkg/controller/composite/controller.go` and
 * `pkg/controller/common/manage_children.go`.
 */
import { applyUpdate, jsonDiff, type Json, type JsonObject } from '../../support/merge.ts'
import { controllerOf, controllerRef, createBody, isDeleting, meta, objectKey, ownerRefs, strings, typeKey } from '../../support/children.ts'
import type { ChildRule, CompositeSpec } from './driver-manifest.ts'
import type { Observed, SyncReport, Write } from './driver-protocol.ts'
import { isReason, selectorMatches, type KubeApi, type LabelSelector, type ResourceRef } from './kube.ts'

const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? (apiVersion.split('/')[0] as string) : '')
const byKey = <T>(entries: Iterable<[string, T]>): [string, T][] => [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
// GetAllGVKs order: group, then version, then kind.
const typeOrder = (t: string): string => {
  const apiVersion = t.slice(t.indexOf('.') + 1)
  return `${groupOf(apiVersion)}\u0000${apiVersion.split('/').pop() ?? ''}\u0000${t.slice(0, t.indexOf('.'))}`
}
const sortTypes = (types: Iterable<string>): string[] => [...types].sort((a, b) => (typeOrder(a) < typeOrder(b) ? -1 : 1))

/** The object, or null when the API server answers NotFound. */
export async function getOrNull(kube: KubeApi, ref: ResourceRef): Promise<JsonObject | null> {
  try {
    return (await kube.get(ref)).body
  } catch (err) {
    if (isReason(err, 'NotFound')) return null
    throw err
  }
}

/**
 * GET, change, PUT with the fresh resourceVersion, retried on Conflict (AtomicUpdate). Null when
 * the object is gone or has another uid; `change` returning false skips the PUT.
 */
export async function atomicUpdate(kube: KubeApi, ref: ResourceRef, uid: Json | undefined, change: (o: JsonObject) => boolean, report: SyncReport, verb: Write['verb']): Promise<JsonObject | null> {
  for (let attempt = 0; ; attempt++) {
    const current = await getOrNull(kube, ref)
    if (current === null || meta(current).uid !== uid) return null
    if (!change(current)) return current
    try {
      const res = await kube.update(ref, current)
      report.writes.push({ verb, target: `${ref.resource} ${objectKey(current)}` })
      return res.body
    } catch (err) {
      if (!isReason(err, 'Conflict') || attempt >= 4) throw err
    }
  }
}

/**
 * claimChildren: owned and matching are claimed; owned but not matching are released; orphans
 * that match are adopted (unless the parent is going away).
 */
export async function claimChildren(kube: KubeApi, cc: CompositeSpec, parent: JsonObject, namespace: string | undefined, selector: LabelSelector, report: SyncReport): Promise<Observed> {
  const observed: Observed = new Map()
  const uid = meta(parent).uid
  for (const rule of cc.children) {
    const info = await kube.resourceInfo(rule.apiVersion, rule.resource)
    const claimed = new Map<string, JsonObject>()
    observed.set(`${info.kind}.${rule.apiVersion}`, claimed)
    const base = { apiVersion: rule.apiVersion, resource: info.resource }
    for (const item of (await kube.list({ ...base, namespace })).body) {
      const owner = controllerOf(item)
      if (owner !== undefined && owner.uid !== uid) continue
      const match = selectorMatches(selector, strings(item, 'labels'))
      const iref: ResourceRef = { ...base, name: String(meta(item).name) }
      if (info.namespaced) iref.namespace = String(meta(item).namespace)
      if (owner !== undefined && match) claimed.set(objectKey(item), item)
      else if (owner !== undefined) {
        if (isDeleting(parent)) continue
        await atomicUpdate(kube, iref, meta(item).uid, (o) => {
          meta(o).ownerReferences = ownerRefs(o).filter((r) => r.uid !== uid)
          return true
        }, report, 'release')
      } else if (match && !isDeleting(parent) && !isDeleting(item)) {
        const fresh = await getOrNull(kube, parentRef(cc, parent))
        if (fresh === null || meta(fresh).uid !== uid || isDeleting(fresh)) continue
        const adopted = await atomicUpdate(kube, iref, meta(item).uid, (o) => {
          meta(o).ownerReferences = [...ownerRefs(o).filter((r) => r.uid !== uid), controllerRef(parent)]
          return true
        }, report, 'adopt')
        if (adopted !== null) claimed.set(objectKey(item), item)
      }
    }
  }
  return observed
}

/**
 * ManageChildren with the dynamic apply: deletes first, then creates and updates; errors are
 * collected so that one failure does not block the rest, and returned.
 */
export async function manageChildren(kube: KubeApi, parent: JsonObject, observed: Observed, desiredList: JsonObject[], rules: ChildRule[], report: SyncReport): Promise<string[]> {
  const errors: string[] = []
  const methods = new Map<string, string>()
  for (const r of rules) methods.set(`${(await kube.resourceInfo(r.apiVersion, r.resource)).kind}.${groupOf(r.apiVersion)}`, r.method)
  const desired: Observed = new Map()
  for (const d of desiredList) {
    const type = typeKey(d)
    desired.set(type, (desired.get(type) ?? new Map<string, JsonObject>()).set(objectKey(d), d))
  }
  const refOf = async (o: JsonObject): Promise<ResourceRef> => {
    const info = await kube.resourceInfo(String(o.apiVersion), String(o.kind))
    const r: ResourceRef = { apiVersion: String(o.apiVersion), resource: info.resource, name: String(meta(o).name) }
    if (info.namespaced && typeof meta(o).namespace === 'string') r.namespace = meta(o).namespace as string
    return r
  }
  const remove = async (o: JsonObject, type: string, key: string, why: string): Promise<void> => {
    try {
      await kube.delete(await refOf(o), { propagationPolicy: 'Background', preconditions: { uid: String(meta(o).uid) } })
      report.writes.push({ verb: 'delete', target: `${type} ${key}`, diff: [why] })
    } catch (err) {
      if (!isReason(err, 'NotFound')) throw err
    }
  }
  for (const type of sortTypes(observed.keys())) {
    for (const [key, o] of byKey(observed.get(type) ?? [])) {
      if (isDeleting(o) || desired.get(type)?.has(key) === true) continue
      await remove(o, type, key, 'not desired').catch((err: unknown) => errors.push(`can't delete ${type} ${key}: ${String(err)}`))
    }
  }
  for (const type of sortTypes(desired.keys())) {
    for (const [key, want] of byKey(desired.get(type) ?? [])) {
      try {
        const have = observed.get(type)?.get(key)
        const ref = await refOf(want)
        if (have === undefined) {
          try {
            await kube.create(ref, createBody(want, parent))
            report.writes.push({ verb: 'create', target: `${type} ${key}` })
          } catch (err) {
            if (!isReason(err, 'AlreadyExists')) throw err
            report.skipped.push(`create ${type} ${key}: AlreadyExists`)
          }
          continue
        }
        const { object, changed } = applyUpdate(have, want)
        if (!changed) continue
        const diff = jsonDiff(have, object)
        const method = methods.get(`${String(want.kind)}.${groupOf(String(want.apiVersion))}`) ?? 'OnDelete'
        if (isDeleting(have)) report.skipped.push(`update ${type} ${key}: pending deletion`)
        else if (method === 'OnDelete') report.skipped.push(`update ${type} ${key}: OnDelete\n      ${diff.join('\n      ')}`)
        else if (method === 'Recreate' || method === 'RollingRecreate') await remove(have, type, key, `Recreate: ${diff.join('; ')}`)
        else if (method === 'InPlace' || method === 'RollingInPlace') {
          try {
            await kube.update(ref, object)
            report.writes.push({ verb: 'update', target: `${type} ${key}`, diff })
          } catch (err) {
            if (!isReason(err, 'NotFound', 'Conflict')) throw err
            report.skipped.push(`update ${type} ${key}: ${err.reason}`)
          }
        } else throw new Error(`invalid update strategy for ${String(want.kind)}: unknown method "${method}"`)
      } catch (err) {
        errors.push(`${type} ${key}: ${err instanceof Error ? err.message : String(err)}`)
      }
    }
  }
  return errors
}

// The composite parent as a reference, for the fresh read before an adoption.
function parentRef(cc: CompositeSpec, parent: JsonObject): ResourceRef {
  const ref: ResourceRef = { apiVersion: String(parent.apiVersion), resource: cc.parent.resource, name: String(meta(parent).name) }
  if (typeof meta(parent).namespace === 'string') ref.namespace = meta(parent).namespace as string
  return ref
}
