/**
 * What a pass of the cluster layer's driver (driver.ts) does to children on the API server:
 * claim them (adopt, release), then manage them (delete, create, update by method: the rules of
 * tests/support/manage-children.ts, shared with the unit layer), with the GET and the
 * AtomicUpdate these rest on.
 *
 * Follows Metacontroller v4.17.2: `claimChildren` in `pkg/controller/composite/controller.go` and
 * `pkg/controller/common/manage_children.go`.
 */
import type { Json, JsonObject } from '../../support/merge.ts'
import { controllerOf, controllerRef, isDeleting, meta, objectKey, ownerRefs, strings } from '../../support/children.ts'
import { manageChildren as sharedManageChildren, type ChildApi } from '../../support/manage-children.ts'
import type { ChildRule, CompositeSpec } from './driver-manifest.ts'
import type { Observed, SyncReport, Write } from './driver-protocol.ts'
import { isReason, selectorMatches, type KubeApi, type LabelSelector, type ResourceRef } from './kube.ts'

const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? (apiVersion.split('/')[0] as string) : '')

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
export async function atomicUpdate(
  kube: KubeApi,
  ref: ResourceRef,
  uid: Json | undefined,
  change: (o: JsonObject) => boolean,
  report: SyncReport,
  verb: Write['verb']
): Promise<JsonObject | null> {
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
export async function claimChildren(
  kube: KubeApi,
  cc: CompositeSpec,
  parent: JsonObject,
  namespace: string | undefined,
  selector: LabelSelector,
  report: SyncReport
): Promise<Observed> {
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
        await atomicUpdate(
          kube,
          iref,
          meta(item).uid,
          (o) => {
            meta(o).ownerReferences = ownerRefs(o).filter((r) => r.uid !== uid)
            return true
          },
          report,
          'release'
        )
      } else if (match && !isDeleting(parent) && !isDeleting(item)) {
        const fresh = await getOrNull(kube, parentRef(cc, parent))
        if (fresh === null || meta(fresh).uid !== uid || isDeleting(fresh)) continue
        const adopted = await atomicUpdate(
          kube,
          iref,
          meta(item).uid,
          (o) => {
            meta(o).ownerReferences = [...ownerRefs(o).filter((r) => r.uid !== uid), controllerRef(parent)]
            return true
          },
          report,
          'adopt'
        )
        if (adopted !== null) claimed.set(objectKey(item), item)
      }
    }
  }
  return observed
}

/**
 * ManageChildren (manage-children.ts, shared with the unit layer) against the API server:
 * writes go to the REST paths discovery gives, deletes in the background with the child's uid as
 * precondition. What was written or held back goes into the report; the errors are returned.
 */
export async function manageChildren(
  kube: KubeApi,
  parent: JsonObject,
  observed: Observed,
  desired: JsonObject[],
  rules: ChildRule[],
  report: SyncReport
): Promise<string[]> {
  const methods = new Map<string, string>()
  for (const r of rules) methods.set(`${(await kube.resourceInfo(r.apiVersion, r.resource)).kind}.${groupOf(r.apiVersion)}`, r.method)
  const refOf = async (o: JsonObject): Promise<ResourceRef> => {
    const info = await kube.resourceInfo(String(o.apiVersion), String(o.kind))
    const r: ResourceRef = { apiVersion: String(o.apiVersion), resource: info.resource, name: String(meta(o).name) }
    if (info.namespaced && typeof meta(o).namespace === 'string') r.namespace = meta(o).namespace as string
    return r
  }
  const api: ChildApi = {
    create: async (body) => kube.create(await refOf(body), body),
    update: async (body) => kube.update(await refOf(body), body),
    delete: async (o) => kube.delete(await refOf(o), { propagationPolicy: 'Background', preconditions: { uid: String(meta(o).uid) } })
  }
  const { events, errors } = await sharedManageChildren(api, {
    parent,
    observed,
    desired,
    // Metacontroller looks the update strategy up by group and kind.
    methodOf: (child) => methods.get(`${String(child.kind)}.${groupOf(String(child.apiVersion))}`) ?? 'OnDelete'
  })
  for (const e of events) {
    const target = `${e.type} ${e.key}`
    const diff = e.diff ?? []
    if (e.verb === 'skip')
      report.skipped.push(
        e.why === 'OnDelete'
          ? `update ${target}: OnDelete\n      ${diff.join('\n      ')}`
          : `${e.why === 'AlreadyExists' ? 'create' : 'update'} ${target}: ${e.why ?? ''}`
      )
    else if (e.verb === 'delete')
      report.writes.push({ verb: 'delete', target, diff: [e.why === 'Recreate' ? `Recreate: ${diff.join('; ')}` : 'not desired'] })
    else if (e.verb === 'update') report.writes.push({ verb: 'update', target, diff })
    else report.writes.push({ verb: 'create', target })
  }
  return errors
}

// The composite parent as a reference, for the fresh read before an adoption.
function parentRef(cc: CompositeSpec, parent: JsonObject): ResourceRef {
  const ref: ResourceRef = { apiVersion: String(parent.apiVersion), resource: cc.parent.resource, name: String(meta(parent).name) }
  if (typeof meta(parent).namespace === 'string') ref.namespace = meta(parent).namespace as string
  return ref
}
