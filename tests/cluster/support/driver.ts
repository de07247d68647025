/**
 * Metacontroller's part, played against a real API server (docs/testing.md, cluster layer): read the
 * project's CompositeController/DecoratorController manifests, call the hooks over HTTP in the v2
 * shape, apply the answers with the default dynamic apply, and check that a repeated pass is quiet.
 *
 * Each step follows Metacontroller v4.17.2: `pkg/controller/composite/controller.go`
 * (`syncParentObject`, `claimChildren`, `updateParentStatus`), `pkg/controller/decorator/
 * controller.go`, `pkg/controller/common/manage_children.go`, `.../customize/manager.go`,
 * `.../finalizer/finalizer.go`, `pkg/hooks/webhook.go`. Not simulated: rolling updates
 * (ControllerRevisions), ETag caching, 429 back-off, resync timers, informer-cache lag.
 * This file keeps the order of a pass, composite and decorator, as one state machine; the
 * manifests are read in driver-manifest.ts, the wire format is driver-protocol.ts, children are
 * claimed and managed in driver-children.ts (the management rules shared with the unit layer in
 * tests/support/manage-children.ts), and related objects listed in driver-related.ts.
 */
import { clone, deepEqual, isObject, jsonDiff, type JsonObject } from '../../support/merge.ts'
import { DECORATOR_ANNOTATION, isDeleting, meta, objectKey, strings, withParentNamespace } from '../../support/children.ts'
import { atomicUpdate, claimChildren, getOrNull, manageChildren } from './driver-children.ts'
import { isAttachment } from '../../support/manage-children.ts'
import { listRelated, ruleMatches } from './driver-related.ts'
import type { CompositeSpec, ControllerSpec, DecoratorSpec, HookRef, HookSet, ParentRule } from './driver-manifest.ts'
import {
  callHook,
  decodeCompositeResponse,
  decodeCustomizeResponse,
  decodeDecoratorResponse,
  fetchTransport,
  SyncError,
  toRecord,
  type HookTransport,
  type Observed,
  type RelatedRule,
  type SyncReport
} from './driver-protocol.ts'
import { isReason, selectorMatches, type KubeApi, type LabelSelector, type ResourceRef } from './kube.ts'

/** The parent to sync; a decorator with several resources needs apiVersion and resource. */
export interface ParentRef {
  name: string
  namespace?: string
  apiVersion?: string
  resource?: string
}

/** How a {@link Driver} is set up. */
export interface DriverOptions {
  kube: KubeApi
  controller: ControllerSpec
  /** Where the hook server under test listens, e.g. `http://127.0.0.1:8080`. */
  hookBaseUrl: string
  transport?: HookTransport
}

/** A parent a sync goes on with: read, in the controller's scope or under its finalizer. */
interface OpenedParent {
  pref: ResourceRef
  statusSubresource: boolean
  report: SyncReport
  parent: JsonObject
  /** Whether an object is in the controller's scope (its selectors). */
  matches: (p: JsonObject) => boolean
}

/** Result of {@link Driver.settle}: every pass, the last one quiet. */
export interface SettleReport {
  passes: SyncReport[]
  last: SyncReport
}

const finalizers = (o: JsonObject): string[] => (Array.isArray(meta(o).finalizers) ? (meta(o).finalizers as string[]) : [])

/**
 * Metacontroller for one controller. Keeps the customize cache (per parent uid and generation)
 * across passes, as Metacontroller does.
 */
export class Driver {
  private readonly customizeCache = new Map<string, RelatedRule[]>()
  /** The parents asked about so far, by `namespace/name`: their reference and customize cache key. */
  private readonly customized = new Map<string, { ref: ParentRef; cacheKey: string }>()
  private readonly transport: HookTransport

  constructor(readonly options: DriverOptions) {
    this.transport = options.transport ?? fetchTransport
  }

  /**
   * One sync of one parent. Throws {@link SyncError} or {@link HookError} where Metacontroller's
   * sync fails. With `staleStatus` (a composite parent only) the hook is handed the parent with
   * that status instead of the stored one, as Metacontroller does when its informer cache has not
   * seen its own last status write yet; the children are read fresh, and the answer's status
   * replaces the stored one as usual.
   */
  async syncOnce(ref: ParentRef, options: { staleStatus?: JsonObject } = {}): Promise<SyncReport> {
    const c = this.options.controller
    for (const hook of Object.values(c.hooks)) if (hook.version !== 'v2') throw new Error(`${c.name}: only hook version v2 is driven`)
    if (c.kind !== 'CompositeController' && options.staleStatus !== undefined)
      throw new Error(`${c.name}: a stale status needs a composite`)
    return c.kind === 'CompositeController' ? this.syncComposite(c, ref, options.staleStatus) : this.syncDecorator(c, ref)
  }

  /**
   * Passes until one writes nothing, at most `maxPasses` (default 2: a pass, then a second that
   * must be quiet). The quiet pass must also leave every resourceVersion of the parent and of all
   * objects of the child types where they were, and each status write must read back as written.
   * Raise `maxPasses` where a status legitimately changes once the created children are observed.
   */
  async settle(ref: ParentRef, options: { maxPasses?: number } = {}): Promise<SettleReport> {
    const passes: SyncReport[] = []
    for (let pass = 1; pass <= (options.maxPasses ?? 2); pass++) {
      const before = await this.snapshot(ref)
      const report = await this.syncOnce(ref)
      passes.push(report)
      if (report.status !== undefined && report.status.pruned.length > 0) {
        throw new Error(
          `${report.parent}: status read back differs from status written (pruned by the schema?):\n  ${report.status.pruned.join('\n  ')}`
        )
      }
      if (report.writes.length > 0) continue
      const after = await this.snapshot(ref)
      const moved = [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k))
      if (moved.length > 0) {
        throw new Error(
          `${report.parent}: pass ${pass} wrote nothing, yet resourceVersions moved:\n  ${moved.map((k) => `${k}: ${before.get(k) ?? '(absent)'} -> ${after.get(k) ?? '(absent)'}`).join('\n  ')}`
        )
      }
      return { passes, last: report }
    }
    const last = passes[passes.length - 1] as SyncReport
    const lines = last.writes.map((w) => `${w.verb} ${w.target}${(w.diff ?? []).map((d) => `\n      ${d}`).join('')}`)
    throw new Error(`${last.parent}: not settled after ${passes.length} passes; the last one wrote:\n  ${lines.join('\n  ')}`)
  }

  private newReport(parent: string): SyncReport {
    return { controller: this.options.controller.name, parent, finalizing: false, writes: [], skipped: [], resyncAfterSeconds: 0 }
  }

  private async parentOf(ref: ParentRef): Promise<{ pref: ResourceRef; statusSubresource: boolean; rule: ParentRule }> {
    const c = this.options.controller
    const rule =
      c.kind === 'CompositeController'
        ? c.parent
        : (c.resources.find((r) => (ref.resource ?? r.resource) === r.resource && (ref.apiVersion ?? r.apiVersion) === r.apiVersion) ??
          c.resources[0])
    if (rule === undefined) throw new Error(`${c.name}: no parent resource`)
    const info = await this.options.kube.resourceInfo(rule.apiVersion, rule.resource)
    const pref: ResourceRef = { apiVersion: rule.apiVersion, resource: info.resource, name: ref.name }
    if (info.namespaced) pref.namespace = ref.namespace
    return { pref, statusSubresource: info.subresources.includes('status'), rule }
  }

  // finalizer.SyncObject: present exactly when a finalize hook exists (never added while deleting).
  private async syncFinalizer(pref: ResourceRef, parent: JsonObject, name: string, report: SyncReport): Promise<JsonObject> {
    const enabled = this.options.controller.hooks.finalize !== undefined
    if (finalizers(parent).includes(name) === enabled || (enabled && isDeleting(parent))) return parent
    const updated = await atomicUpdate(
      this.options.kube,
      pref,
      meta(parent).uid,
      (o) => {
        const list = finalizers(o)
        if (list.includes(name) === enabled) return false
        meta(o).finalizers = enabled ? [...list, name] : list.filter((f) => f !== name)
        return true
      },
      report,
      'finalizer'
    )
    if (updated === null) throw new SyncError('parent vanished while syncing its finalizer', report)
    return updated
  }

  // finalizer.ShouldFinalize: manage children while deleting only under our finalizer, without GC's.
  private shouldFinalize(parent: JsonObject, name: string): boolean {
    const f = finalizers(parent)
    return (
      this.options.controller.hooks.finalize !== undefined && f.includes(name) && !f.includes('foregroundDeletion') && !f.includes('orphan')
    )
  }

  private callHook(hook: HookRef, body: JsonObject): Promise<unknown> {
    return callHook(this.transport, this.options.hookBaseUrl, hook, body)
  }

  /**
   * The first steps of a sync: the parent read (a report saying so when it is gone), ignored while
   * it is out of the controller's scope (`matches`) and not under its `finalizer`, and that
   * finalizer kept in step with the finalize hook.
   */
  private async openParent(
    ref: ParentRef,
    finalizer: string,
    matches: (rule: ParentRule, parent: JsonObject) => boolean,
    ignored: string
  ): Promise<{ done: SyncReport } | OpenedParent> {
    const { pref, statusSubresource, rule } = await this.parentOf(ref)
    const report = this.newReport(`${pref.resource} ${ref.namespace ?? ''}/${ref.name}`)
    const found = await getOrNull(this.options.kube, pref)
    if (found === null) return { done: { ...report, parentGone: true } }
    const inScope = (p: JsonObject): boolean => finalizers(p).includes(finalizer) || matches(rule, p)
    if (!inScope(found)) return { done: { ...report, ignored } }
    const parent = await this.syncFinalizer(pref, found, finalizer, report)
    if (!inScope(parent)) return { done: { ...report, ignored } }
    return { pref, statusSubresource, report, parent, matches: (p) => matches(rule, p) }
  }

  /**
   * Calls the finalize hook when there is one and `finalizing` holds, else the sync hook (`missing`
   * is the error without one); the request and the answer go into the report, and the answer is
   * decoded by `decode`.
   */
  private async callSyncHook<R>(
    hooks: HookSet,
    finalizing: boolean,
    missing: string,
    report: SyncReport,
    request: (finalizing: boolean) => JsonObject,
    decode: (body: unknown) => R
  ): Promise<R> {
    report.finalizing = hooks.finalize !== undefined && finalizing
    const hook = report.finalizing ? hooks.finalize : hooks.sync
    if (hook === undefined) throw new SyncError(missing, report)
    report.request = request(report.finalizing)
    report.response = await this.callHook(hook, report.request)
    try {
      return decode(report.response)
    } catch (err) {
      throw new SyncError(String(err), report)
    }
  }

  private async syncComposite(cc: CompositeSpec, ref: ParentRef, staleStatus?: JsonObject): Promise<SyncReport> {
    const finalizer = `metacontroller.io/compositecontroller-${cc.name}`
    const opened = await this.openParent(
      ref,
      finalizer,
      (rule, p) => selectorMatches(rule.labelSelector, strings(p, 'labels')),
      'parentResource.labelSelector'
    )
    if ('done' in opened) return opened.done
    const { pref, statusSubresource, report, matches } = opened
    let parent = opened.parent

    const uid = String(meta(parent).uid)
    let selector: LabelSelector = { matchLabels: { 'controller-uid': uid } }
    if (!cc.generateSelector) {
      const s = isObject(parent.spec) ? parent.spec.selector : undefined
      if (
        !isObject(s) ||
        (Object.keys(s.matchLabels ?? {}).length === 0 && !(Array.isArray(s.matchExpressions) && s.matchExpressions.length > 0))
      ) {
        throw new SyncError('.spec.selector must have either matchLabels, matchExpressions, or both', report)
      }
      selector = s
    }
    const observed = await claimChildren(this.options.kube, cc, parent, pref.namespace, selector, report)
    const related = await this.related(parent)
    if (cc.children.some((c) => c.method.startsWith('Rolling')) && !(isDeleting(parent) && !this.shouldFinalize(parent, finalizer))) {
      throw new SyncError('rolling update methods (ControllerRevisions) are not driven', report)
    }
    const response = await this.callSyncHook(
      cc.hooks,
      isDeleting(parent) || !matches(parent),
      'sync hook not defined',
      report,
      (finalizing) => ({
        controller: cc.manifest,
        parent: staleStatus === undefined ? parent : { ...parent, status: clone(staleStatus) },
        children: toRecord(observed),
        related: toRecord(related),
        finalizing
      }),
      decodeCompositeResponse
    )
    report.resyncAfterSeconds = response.resyncAfterSeconds
    const desired = response.children.map((c) => withParentNamespace(c, parent))
    if (response.finalized) {
      const updated = await atomicUpdate(
        this.options.kube,
        pref,
        uid,
        (o) => {
          if (!finalizers(o).includes(finalizer)) return false
          meta(o).finalizers = finalizers(o).filter((f) => f !== finalizer)
          return true
        },
        report,
        'finalizer'
      )
      if (updated !== null) parent = updated
    }
    for (const child of desired) {
      const labels = meta(child).labels ?? {}
      if (!isObject(labels) || !Object.values(labels).every((v) => typeof v === 'string'))
        throw new SyncError(`invalid labels on desired child ${objectKey(child)}`, report)
      if (cc.generateSelector && labels['controller-uid'] === undefined) meta(child).labels = { ...labels, 'controller-uid': uid }
      if (!selectorMatches(selector, strings(child, 'labels'))) {
        throw new SyncError(`labels on desired child ${String(child.kind)} ${objectKey(child)} don't match parent selector`, report)
      }
    }
    const errors =
      !isDeleting(parent) || this.shouldFinalize(parent, finalizer)
        ? await manageChildren(this.options.kube, parent, observed, desired, cc.children, report)
        : []
    await this.writeCompositeStatus(pref, parent, response.status, statusSubresource, report)
    if (errors.length > 0) throw new SyncError(`can't reconcile children:\n  ${errors.join('\n  ')}`, report)
    return report
  }

  // The customize hook is asked once per parent uid and generation, as Metacontroller caches it.
  private async related(parent: JsonObject): Promise<Observed> {
    const c = this.options.controller
    if (c.hooks.customize === undefined) return new Map()
    const cacheKey = `${String(meta(parent).uid)}/${String(meta(parent).generation ?? 0)}`
    let rules = this.customizeCache.get(cacheKey)
    if (rules === undefined) {
      rules = decodeCustomizeResponse(await this.callHook(c.hooks.customize, { controller: c.manifest, parent }))
      this.customizeCache.set(cacheKey, rules)
    }
    const namespace = typeof meta(parent).namespace === 'string' ? (meta(parent).namespace as string) : undefined
    const ref: ParentRef = { name: String(meta(parent).name), ...(namespace !== undefined ? { namespace } : {}) }
    this.customized.set(`${namespace ?? ''}/${ref.name}`, { ref, cacheKey })
    return listRelated(this.options.kube, rules)
  }

  /**
   * The parents a watch event on `object` re-syncs: those whose cached customize answer relates
   * it (Metacontroller's `findRelatedParents`), among the parents this driver has synced.
   */
  async relatedParents(object: JsonObject): Promise<ParentRef[]> {
    const found: ParentRef[] = []
    for (const { ref, cacheKey } of this.customized.values()) {
      for (const rule of this.customizeCache.get(cacheKey) ?? []) {
        if (await ruleMatches(this.options.kube, rule, object)) {
          found.push(ref)
          break
        }
      }
    }
    return found
  }

  // updateParentStatus: the answer's status (or {}) plus observedGeneration, written only when it
  // differs from the live status.
  private async writeCompositeStatus(
    pref: ResourceRef,
    parent: JsonObject,
    answered: JsonObject | null,
    subresource: boolean,
    report: SyncReport
  ): Promise<void> {
    const expected = clone(answered ?? {})
    expected.observedGeneration = typeof meta(parent).generation === 'number' ? (meta(parent).generation as number) : 0
    for (let attempt = 0; ; attempt++) {
      const current = await getOrNull(this.options.kube, pref)
      if (current === null || meta(current).uid !== meta(parent).uid) return
      if (deepEqual(current.status, expected)) {
        report.status = { expected, written: false, readBack: current.status, pruned: [] }
        return
      }
      const diff = jsonDiff(current.status, expected)
      current.status = clone(expected)
      try {
        const res = subresource ? await this.options.kube.updateStatus(pref, current) : await this.options.kube.update(pref, current)
        report.writes.push({ verb: 'status', target: report.parent, diff })
        report.status = { expected, written: true, readBack: res.body.status, pruned: jsonDiff(expected, res.body.status) }
        return
      } catch (err) {
        if (isReason(err, 'NotFound')) return
        if (!isReason(err, 'Conflict') || attempt >= 4) throw err
      }
    }
  }

  private async syncDecorator(dc: DecoratorSpec, ref: ParentRef): Promise<SyncReport> {
    const finalizer = `metacontroller.io/decoratorcontroller-${dc.name}`
    const opened = await this.openParent(
      ref,
      finalizer,
      (rule, p) =>
        selectorMatches(rule.labelSelector, strings(p, 'labels')) && selectorMatches(rule.annotationSelector, strings(p, 'annotations')),
      'resources selector'
    )
    if ('done' in opened) return opened.done
    const { pref, statusSubresource, report, matches, parent } = opened

    // getChildren: only what this decorator made (controller ref plus the decorator annotation).
    const observed: Observed = new Map()
    for (const a of dc.attachments) {
      const info = await this.options.kube.resourceInfo(a.apiVersion, a.resource)
      const items = (await this.options.kube.list({ apiVersion: a.apiVersion, resource: info.resource, namespace: pref.namespace })).body
      const mine = items.filter((o) => isAttachment(o, parent, dc.name))
      observed.set(`${info.kind}.${a.apiVersion}`, new Map(mine.map((o) => [objectKey(o), o])))
    }
    const related = await this.related(parent)
    const response = await this.callSyncHook(
      dc.hooks,
      isDeleting(parent) || !matches(parent),
      'no enabled hooks found',
      report,
      (finalizing) => ({
        controller: dc.manifest,
        object: parent,
        attachments: toRecord(observed),
        related: toRecord(related),
        finalizing
      }),
      decodeDecoratorResponse
    )
    report.resyncAfterSeconds = response.resyncAfterSeconds
    const desired = response.attachments.map((c) => withParentNamespace(c, parent))

    // Labels, annotations and status of the decorated object; status null leaves it.
    const updated = clone(parent)
    const labels = { ...strings(parent, 'labels') }
    const annotations = { ...strings(parent, 'annotations') }
    const oldStatus = parent.status === undefined ? null : parent.status
    if (oldStatus !== null && !isObject(oldStatus)) throw new SyncError('.status is not an object', report)
    const status = response.status ?? oldStatus
    const labelsChanged = updateStringMap(labels, response.labels)
    const annotationsChanged = updateStringMap(annotations, response.annotations)
    const statusChanged = !deepEqual(oldStatus, status)
    if (labelsChanged || annotationsChanged || statusChanged || (response.finalized && finalizers(parent).includes(finalizer))) {
      meta(updated).labels = labels
      meta(updated).annotations = annotations
      updated.status = status
      try {
        if (statusChanged && statusSubresource) {
          const res = await this.options.kube.updateStatus(pref, updated)
          report.writes.push({ verb: 'status', target: report.parent, diff: jsonDiff(oldStatus, status) })
          report.status = { expected: status, written: true, readBack: res.body.status, pruned: jsonDiff(status, res.body.status) }
          meta(updated).resourceVersion = meta(res.body).resourceVersion ?? null
        }
        if (response.finalized) meta(updated).finalizers = finalizers(updated).filter((f) => f !== finalizer)
        await this.options.kube.update(pref, updated)
        report.writes.push({ verb: 'parent', target: report.parent, diff: jsonDiff(parent, updated) })
      } catch (err) {
        if (!isReason(err, 'NotFound', 'Conflict')) throw err
        report.skipped.push(`update ${report.parent}: ${err.reason} (sync ends here)`)
        return report
      }
    }
    for (const child of desired) {
      const ann = isObject(meta(child).annotations) ? (meta(child).annotations as JsonObject) : {}
      meta(child).annotations = { ...ann, [DECORATOR_ANNOTATION]: dc.name }
    }
    const errors =
      !isDeleting(parent) || this.shouldFinalize(parent, finalizer)
        ? await manageChildren(this.options.kube, parent, observed, desired, dc.attachments, report)
        : []
    if (errors.length > 0) throw new SyncError(`can't reconcile attachments:\n  ${errors.join('\n  ')}`, report)
    return report
  }

  // resourceVersions of the parent and of every object of the child types in its scope.
  private async snapshot(ref: ParentRef): Promise<Map<string, string>> {
    const { pref } = await this.parentOf(ref)
    const out = new Map<string, string>()
    const parent = await getOrNull(this.options.kube, pref)
    if (parent !== null) out.set(`parent ${objectKey(parent)}`, String(meta(parent).resourceVersion))
    const c = this.options.controller
    for (const r of c.kind === 'CompositeController' ? c.children : c.attachments) {
      const info = await this.options.kube.resourceInfo(r.apiVersion, r.resource)
      for (const o of (await this.options.kube.list({ apiVersion: r.apiVersion, resource: info.resource, namespace: pref.namespace }))
        .body) {
        out.set(`${info.kind} ${objectKey(o)}`, String(meta(o).resourceVersion))
      }
    }
    return out
  }
}

// updateStringMap: null removes a key, a string sets it; reports whether anything changed.
function updateStringMap(dest: Record<string, string>, updates: Record<string, string | null>): boolean {
  let changed = false
  for (const [k, v] of Object.entries(updates)) {
    if (v === null) {
      if (k in dest) {
        delete dest[k]
        changed = true
      }
    } else if (dest[k] !== v) {
      dest[k] = v
      changed = true
    }
  }
  return changed
}
