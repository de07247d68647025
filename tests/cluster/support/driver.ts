/**
 * Metacontroller's part, played against a real API server (testing.md, cluster layer): read the
 * project's CompositeController/DecoratorController manifests, call the hooks over HTTP in the v2
 * shape, apply the answers with the default dynamic apply, and check that a repeated pass is quiet.
 *
 * Each step follows Metacontroller v4.17.2: `pkg/controller/composite/controller.go`
 * (`syncParentObject`, `claimChildren`, `updateParentStatus`), `pkg/controller/decorator/
 * controller.go`, `pkg/controller/common/manage_children.go`, `.../customize/manager.go`,
 * `.../finalizer/finalizer.go`, `pkg/hooks/webhook.go`. Not simulated: rolling updates
 * (ControllerRevisions), ETag caching, 429 back-off, resync timers, informer-cache lag.
 * One file because it is one state machine; the manifest and wire formats come first.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { applyUpdate, clone, deepEqual, isObject, jsonDiff, setLastApplied, type Json, type JsonObject } from '../../support/merge.ts'
import { controllerRef, DECORATOR_ANNOTATION } from '../../support/server-defaults.ts'
import { isReason, selectorMatches, type KubeApi, type LabelSelector, type ResourceRef } from './kube.ts'

/** A hook as a manifest declares it; only the path is used, the test gives the base URL. */
export interface HookRef {
  path: string
  version: string
  timeoutMs: number
}
/** The hooks of a controller. */
export interface HookSet {
  sync?: HookRef
  finalize?: HookRef
  customize?: HookRef
}
/** A child or attachment type and its update method (`OnDelete` when the manifest has none). */
export interface ChildRule {
  apiVersion: string
  resource: string
  method: string
}
/** A parent (or decorated) resource rule. */
export interface ParentRule {
  apiVersion: string
  resource: string
  labelSelector?: LabelSelector
  annotationSelector?: LabelSelector
}
/** A CompositeController manifest, read. */
export interface CompositeSpec {
  kind: 'CompositeController'
  name: string
  parent: ParentRule
  children: ChildRule[]
  hooks: HookSet
  generateSelector: boolean
  /** The manifest as written: sent as the request's `controller`. */
  manifest: JsonObject
}
/** A DecoratorController manifest, read. */
export interface DecoratorSpec {
  kind: 'DecoratorController'
  name: string
  resources: ParentRule[]
  attachments: ChildRule[]
  hooks: HookSet
  manifest: JsonObject
}
/** Either kind of controller. */
export type ControllerSpec = CompositeSpec | DecoratorSpec

/** Every CompositeController and DecoratorController in a (multi-document) YAML text. */
export function parseControllers(text: string, source = 'manifest'): ControllerSpec[] {
  const out: ControllerSpec[] = []
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${source}: ${doc.errors[0]?.message ?? 'invalid YAML'}`)
    const m: unknown = doc.toJS()
    if (!isObject(m) || m.apiVersion !== 'metacontroller.k8s.io/v1alpha1') continue
    const name = String((m.metadata as JsonObject | undefined)?.name)
    const spec = isObject(m.spec) ? m.spec : {}
    const hooks = parseHooks(spec.hooks, `${source} ${name}`)
    if (m.kind === 'CompositeController') {
      out.push({
        kind: 'CompositeController',
        name,
        parent: parentRule(spec.parentResource),
        children: rules(spec.childResources),
        hooks,
        generateSelector: spec.generateSelector === true,
        manifest: m
      })
    } else if (m.kind === 'DecoratorController') {
      const resources = Array.isArray(spec.resources) ? spec.resources.map(parentRule) : []
      out.push({ kind: 'DecoratorController', name, resources, attachments: rules(spec.attachments), hooks, manifest: m })
    }
  }
  return out
}

/** The controllers of every `*.yaml` in `dir` (default: the project's `metacontroller/`). */
export function loadControllers(dir = join(import.meta.dirname, '../../../metacontroller')): ControllerSpec[] {
  return readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()
    .flatMap((f) => parseControllers(readFileSync(join(dir, f), 'utf8'), f))
}

function parentRule(v: Json | undefined): ParentRule {
  const r = isObject(v) ? v : {}
  const rule: ParentRule = { apiVersion: String(r.apiVersion), resource: String(r.resource) }
  if (isObject(r.labelSelector)) rule.labelSelector = r.labelSelector as LabelSelector
  if (isObject(r.annotationSelector)) {
    const a = r.annotationSelector as { matchAnnotations?: Record<string, string>; matchExpressions?: LabelSelector['matchExpressions'] }
    rule.annotationSelector = { matchLabels: a.matchAnnotations ?? {}, matchExpressions: a.matchExpressions ?? [] }
  }
  return rule
}

function rules(v: Json | undefined): ChildRule[] {
  return (Array.isArray(v) ? v : []).filter(isObject).map((r) => {
    const method = isObject(r.updateStrategy) && typeof r.updateStrategy.method === 'string' ? r.updateStrategy.method : ''
    return { apiVersion: String(r.apiVersion), resource: String(r.resource), method: method === '' ? 'OnDelete' : method }
  })
}

function parseHooks(v: Json | undefined, where: string): HookSet {
  const out: HookSet = {}
  for (const kind of ['sync', 'finalize', 'customize'] as const) {
    const h = isObject(v) ? v[kind] : undefined
    if (!isObject(h)) continue
    const webhook = isObject(h.webhook) ? h.webhook : {}
    const path = typeof webhook.url === 'string' ? ((u) => u.pathname + u.search)(new URL(webhook.url)) : webhook.path
    if (typeof path !== 'string') throw new Error(`${where}: hook ${kind} has neither url nor path`)
    out[kind] = { path, version: typeof h.version === 'string' ? h.version : 'v1', timeoutMs: goDuration(webhook.timeout) ?? 10_000 }
  }
  return out
}

/** Milliseconds of a Go duration string (`10s`, `1m30s`, `500ms`). */
export function goDuration(v: Json | undefined): number | undefined {
  if (typeof v !== 'string' || !/^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(v)) return undefined
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1e3, m: 60e3, h: 3600e3 }
  return [...v.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)].reduce((sum, [, n, u]) => sum + Number(n) * (unit[u as string] ?? 0), 0)
}

/** A relatedResources rule of a customize answer. */
export interface RelatedRule {
  apiVersion: string
  resource: string
  labelSelector?: LabelSelector | null
  namespaceSelector?: LabelSelector | null
  namespace?: string
  names?: string[] | null
}
/** A composite sync/finalize answer after strict v2 decoding. */
export interface CompositeResponse {
  status: JsonObject | null
  children: JsonObject[]
  resyncAfterSeconds: number
  finalized: boolean
}
/** A decorator sync/finalize answer after strict v2 decoding. */
export interface DecoratorResponse {
  labels: Record<string, string | null>
  annotations: Record<string, string | null>
  status: JsonObject | null
  attachments: JsonObject[]
  resyncAfterSeconds: number
  finalized: boolean
}

// v2 hooks decode strictly (sigs.k8s.io/json UnmarshalStrict): an unknown field, or a field of the
// wrong type, fails the sync. Duplicate keys are also refused there; JSON.parse cannot see them.
function strict(v: unknown, allowed: readonly string[], where: string): JsonObject {
  if (v === null) return {}
  if (!isObject(v)) throw new Error(`${where}: expected an object`)
  const unknown = Object.keys(v).filter((k) => !allowed.includes(k))
  if (unknown.length > 0) throw new Error(`${where}: unknown field(s) ${unknown.map((k) => JSON.stringify(k)).join(', ')}`)
  return v
}
function typed<T extends Json>(v: Json | undefined, ok: (x: Json) => boolean, fallback: T, where: string): T {
  if (v === undefined || v === null) return fallback
  if (!ok(v)) throw new Error(`${where}: wrong type ${JSON.stringify(v)}`)
  return v as T
}
const objects = (v: Json | undefined, where: string): JsonObject[] =>
  typed<Json[]>(v, (x) => Array.isArray(x) && x.every((o) => isObject(o) && typeof o.kind === 'string' && o.kind !== ''), [], `${where} (objects with a kind)`) as JsonObject[]
const stringOrNullMap = (v: Json | undefined, where: string): Record<string, string | null> =>
  typed<JsonObject>(v, (x) => isObject(x) && Object.values(x).every((s) => s === null || typeof s === 'string'), {}, where) as Record<string, string | null>

/** Decodes a composite answer as Metacontroller's v2 `CompositeHookResponse`. */
export function decodeCompositeResponse(v: unknown): CompositeResponse {
  const r = strict(v, ['status', 'children', 'resyncAfterSeconds', 'finalized'], 'response')
  return {
    status: r.status === null || r.status === undefined ? null : typed<JsonObject>(r.status, isObject, {}, 'response.status'),
    children: objects(r.children, 'response.children'),
    resyncAfterSeconds: typed<number>(r.resyncAfterSeconds, (x) => typeof x === 'number', 0, 'response.resyncAfterSeconds'),
    finalized: typed<boolean>(r.finalized, (x) => typeof x === 'boolean', false, 'response.finalized')
  }
}

/** Decodes a decorator answer as Metacontroller's v2 `DecoratorHookResponse`. */
export function decodeDecoratorResponse(v: unknown): DecoratorResponse {
  const r = strict(v, ['labels', 'annotations', 'status', 'attachments', 'resyncAfterSeconds', 'finalized'], 'response')
  return {
    labels: stringOrNullMap(r.labels, 'response.labels'),
    annotations: stringOrNullMap(r.annotations, 'response.annotations'),
    status: r.status === null || r.status === undefined ? null : typed<JsonObject>(r.status, isObject, {}, 'response.status'),
    attachments: objects(r.attachments, 'response.attachments'),
    resyncAfterSeconds: typed<number>(r.resyncAfterSeconds, (x) => typeof x === 'number', 0, 'response.resyncAfterSeconds'),
    finalized: typed<boolean>(r.finalized, (x) => typeof x === 'boolean', false, 'response.finalized')
  }
}

/** Decodes a customize answer: its relatedResources rules, each checked field by field. */
export function decodeCustomizeResponse(v: unknown): RelatedRule[] {
  const r = strict(v, ['relatedResources'], 'response')
  return typed<Json[]>(r.relatedResources, Array.isArray, [], 'response.relatedResources').map((item, i) => {
    const where = `response.relatedResources[${i}]`
    const rule = strict(item, ['apiVersion', 'resource', 'labelSelector', 'namespaceSelector', 'namespace', 'names'], where)
    for (const sel of ['labelSelector', 'namespaceSelector']) if (isObject(rule[sel])) strict(rule[sel], ['matchLabels', 'matchExpressions'], `${where}.${sel}`)
    typed(rule.names, (x) => Array.isArray(x) && x.every((n) => typeof n === 'string'), [], `${where}.names`)
    for (const f of ['apiVersion', 'resource', 'namespace']) typed(rule[f], (x) => typeof x === 'string', '', `${where}.${f}`)
    return rule as unknown as RelatedRule
  })
}

/** One request that changed (or tried to change) the cluster. */
export interface Write {
  verb: 'create' | 'update' | 'delete' | 'status' | 'finalizer' | 'adopt' | 'release' | 'parent'
  target: string
  /** For updates and status writes: what changed, path by path. */
  diff?: string[]
}
/** What one pass did. */
export interface SyncReport {
  controller: string
  parent: string
  /** The parent was not found: nothing was done. */
  parentGone?: boolean
  /** Why the parent was ignored (selector mismatch without our finalizer). */
  ignored?: string
  finalizing: boolean
  request?: JsonObject
  response?: unknown
  writes: Write[]
  /** Operations Metacontroller decides not to send or swallows, e.g. `OnDelete`, `AlreadyExists`. */
  skipped: string[]
  /** The parent status the pass wanted, and what the API server stored when it was written. */
  status?: { expected: JsonObject | null; written: boolean; readBack: Json | undefined; pruned: string[] }
  resyncAfterSeconds: number
}

/** A sync Metacontroller would report as failed (Warning event `SyncError`); carries the report. */
export class SyncError extends Error {
  constructor(
    message: string,
    readonly report: SyncReport
  ) {
    super(`${report.controller} ${report.parent}: ${message}`)
    this.name = 'SyncError'
  }
}

/** A hook that did not answer 200 with JSON; the body is kept. */
export class HookError extends Error {
  constructor(
    readonly url: string,
    readonly status: number,
    readonly body: string
  ) {
    super(`hook ${url} answered ${status}: ${body.slice(0, 2000)}`)
    this.name = 'HookError'
  }
}

/** Posts a JSON body; the default uses `fetch`. Injected by unit tests. */
export type HookTransport = (url: string, body: JsonObject, timeoutMs: number) => Promise<{ status: number; body: string }>

const fetchTransport: HookTransport = async (url, body, timeoutMs) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs)
  })
  return { status: res.status, body: await res.text() }
}

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

/** Result of {@link Driver.settle}: every pass, the last one quiet. */
export interface SettleReport {
  passes: SyncReport[]
  last: SyncReport
}

type Observed = Map<string, Map<string, JsonObject>>
const meta = (o: JsonObject): JsonObject => (isObject(o.metadata) ? o.metadata : {})
const strings = (o: JsonObject, f: string): Record<string, string> => (isObject(meta(o)[f]) ? (meta(o)[f] as Record<string, string>) : {})
const isDeleting = (o: JsonObject): boolean => typeof meta(o).deletionTimestamp === 'string'
const finalizers = (o: JsonObject): string[] => (Array.isArray(meta(o).finalizers) ? (meta(o).finalizers as string[]) : [])
const keyOf = (o: JsonObject): string => (typeof meta(o).namespace === 'string' && meta(o).namespace !== '' ? `${String(meta(o).namespace)}/${String(meta(o).name)}` : String(meta(o).name))
const groupOf = (apiVersion: string): string => (apiVersion.includes('/') ? (apiVersion.split('/')[0] as string) : '')
const byKey = <T>(entries: Iterable<[string, T]>): [string, T][] => [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
const toRecord = (m: Observed): Record<string, Record<string, JsonObject>> =>
  Object.fromEntries([...m].map(([type, objs]) => [type, Object.fromEntries(objs)]))
// GetAllGVKs order: group, then version, then kind.
const typeOrder = (t: string): string => {
  const apiVersion = t.slice(t.indexOf('.') + 1)
  return `${groupOf(apiVersion)}\u0000${apiVersion.split('/').pop() ?? ''}\u0000${t.slice(0, t.indexOf('.'))}`
}
const sortTypes = (types: Iterable<string>): string[] => [...types].sort((a, b) => (typeOrder(a) < typeOrder(b) ? -1 : 1))

/**
 * Metacontroller for one controller. Keeps the customize cache (per parent uid and generation)
 * across passes, as Metacontroller does.
 */
export class Driver {
  private readonly customizeCache = new Map<string, RelatedRule[]>()
  private readonly transport: HookTransport

  constructor(readonly options: DriverOptions) {
    this.transport = options.transport ?? fetchTransport
  }

  /** One sync of one parent. Throws {@link SyncError} or {@link HookError} where Metacontroller's sync fails. */
  async syncOnce(ref: ParentRef): Promise<SyncReport> {
    const c = this.options.controller
    for (const hook of Object.values(c.hooks)) if (hook.version !== 'v2') throw new Error(`${c.name}: only hook version v2 is driven`)
    return c.kind === 'CompositeController' ? this.syncComposite(c, ref) : this.syncDecorator(c, ref)
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
        throw new Error(`${report.parent}: status read back differs from status written (pruned by the schema?):\n  ${report.status.pruned.join('\n  ')}`)
      }
      if (report.writes.length > 0) continue
      const after = await this.snapshot(ref)
      const moved = [...new Set([...before.keys(), ...after.keys()])].filter((k) => before.get(k) !== after.get(k))
      if (moved.length > 0) {
        throw new Error(`${report.parent}: pass ${pass} wrote nothing, yet resourceVersions moved:\n  ${moved.map((k) => `${k}: ${before.get(k) ?? '(absent)'} -> ${after.get(k) ?? '(absent)'}`).join('\n  ')}`)
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
        : (c.resources.find((r) => (ref.resource ?? r.resource) === r.resource && (ref.apiVersion ?? r.apiVersion) === r.apiVersion) ?? c.resources[0])
    if (rule === undefined) throw new Error(`${c.name}: no parent resource`)
    const info = await this.options.kube.resourceInfo(rule.apiVersion, rule.resource)
    const pref: ResourceRef = { apiVersion: rule.apiVersion, resource: info.resource, name: ref.name }
    if (info.namespaced) pref.namespace = ref.namespace
    return { pref, statusSubresource: info.subresources.includes('status'), rule }
  }

  private async getOrNull(ref: ResourceRef): Promise<JsonObject | null> {
    try {
      return (await this.options.kube.get(ref)).body
    } catch (err) {
      if (isReason(err, 'NotFound')) return null
      throw err
    }
  }

  // GET, change, PUT with the fresh resourceVersion, retried on Conflict (AtomicUpdate).
  private async atomicUpdate(ref: ResourceRef, uid: Json | undefined, change: (o: JsonObject) => boolean, report: SyncReport, verb: Write['verb']): Promise<JsonObject | null> {
    for (let attempt = 0; ; attempt++) {
      const current = await this.getOrNull(ref)
      if (current === null || meta(current).uid !== uid) return null
      if (!change(current)) return current
      try {
        const res = await this.options.kube.update(ref, current)
        report.writes.push({ verb, target: `${ref.resource} ${keyOf(current)}` })
        return res.body
      } catch (err) {
        if (!isReason(err, 'Conflict') || attempt >= 4) throw err
      }
    }
  }

  // finalizer.SyncObject: present exactly when a finalize hook exists (never added while deleting).
  private async syncFinalizer(pref: ResourceRef, parent: JsonObject, name: string, report: SyncReport): Promise<JsonObject> {
    const enabled = this.options.controller.hooks.finalize !== undefined
    if (finalizers(parent).includes(name) === enabled || (enabled && isDeleting(parent))) return parent
    const updated = await this.atomicUpdate(pref, meta(parent).uid, (o) => {
      const list = finalizers(o)
      if (list.includes(name) === enabled) return false
      meta(o).finalizers = enabled ? [...list, name] : list.filter((f) => f !== name)
      return true
    }, report, 'finalizer')
    if (updated === null) throw new SyncError('parent vanished while syncing its finalizer', report)
    return updated
  }

  // finalizer.ShouldFinalize: manage children while deleting only under our finalizer, without GC's.
  private shouldFinalize(parent: JsonObject, name: string): boolean {
    const f = finalizers(parent)
    return this.options.controller.hooks.finalize !== undefined && f.includes(name) && !f.includes('foregroundDeletion') && !f.includes('orphan')
  }

  private async callHook(hook: HookRef, body: JsonObject): Promise<unknown> {
    const url = new URL(hook.path, this.options.hookBaseUrl).toString()
    let res: { status: number; body: string }
    try {
      res = await this.transport(url, body, hook.timeoutMs)
    } catch (err) {
      throw new HookError(url, 0, err instanceof Error ? err.message : String(err))
    }
    if (res.status !== 200) throw new HookError(url, res.status, res.body)
    try {
      return JSON.parse(res.body) as unknown
    } catch {
      throw new HookError(url, res.status, `invalid JSON: ${res.body}`)
    }
  }

  private async syncComposite(cc: CompositeSpec, ref: ParentRef): Promise<SyncReport> {
    const { pref, statusSubresource, rule } = await this.parentOf(ref)
    const report = this.newReport(`${pref.resource} ${ref.namespace ?? ''}/${ref.name}`)
    let parent = await this.getOrNull(pref)
    if (parent === null) return { ...report, parentGone: true }
    const finalizer = `metacontroller.io/compositecontroller-${cc.name}`
    const matches = (p: JsonObject): boolean => selectorMatches(rule.labelSelector, strings(p, 'labels'))
    if (!finalizers(parent).includes(finalizer) && !matches(parent)) return { ...report, ignored: 'parentResource.labelSelector' }
    parent = await this.syncFinalizer(pref, parent, finalizer, report)
    if (!finalizers(parent).includes(finalizer) && !matches(parent)) return { ...report, ignored: 'parentResource.labelSelector' }

    const uid = String(meta(parent).uid)
    let selector: LabelSelector = { matchLabels: { 'controller-uid': uid } }
    if (!cc.generateSelector) {
      const s = isObject(parent.spec) ? parent.spec.selector : undefined
      if (!isObject(s) || (Object.keys(s.matchLabels ?? {}).length === 0 && !(Array.isArray(s.matchExpressions) && s.matchExpressions.length > 0))) {
        throw new SyncError('.spec.selector must have either matchLabels, matchExpressions, or both', report)
      }
      selector = s as LabelSelector
    }
    const observed = await this.claimChildren(cc, parent, pref.namespace, selector, report)
    const related = await this.related(parent)
    if (cc.children.some((c) => c.method.startsWith('Rolling')) && !(isDeleting(parent) && !this.shouldFinalize(parent, finalizer))) {
      throw new SyncError('rolling update methods (ControllerRevisions) are not driven', report)
    }
    report.finalizing = cc.hooks.finalize !== undefined && (isDeleting(parent) || !matches(parent))
    const hook = report.finalizing ? cc.hooks.finalize : cc.hooks.sync
    if (hook === undefined) throw new SyncError('sync hook not defined', report)
    report.request = { controller: cc.manifest, parent, children: toRecord(observed), related: toRecord(related), finalizing: report.finalizing }
    report.response = await this.callHook(hook, report.request)
    let response: CompositeResponse
    try {
      response = decodeCompositeResponse(report.response)
    } catch (err) {
      throw new SyncError(String(err), report)
    }
    report.resyncAfterSeconds = response.resyncAfterSeconds
    const desired = response.children.map((c) => withNamespace(c, parent as JsonObject))
    if (response.finalized) {
      const updated = await this.atomicUpdate(pref, uid, (o) => {
        if (!finalizers(o).includes(finalizer)) return false
        meta(o).finalizers = finalizers(o).filter((f) => f !== finalizer)
        return true
      }, report, 'finalizer')
      if (updated !== null) parent = updated
    }
    for (const child of desired) {
      const labels = meta(child).labels ?? {}
      if (!isObject(labels) || !Object.values(labels).every((v) => typeof v === 'string')) throw new SyncError(`invalid labels on desired child ${keyOf(child)}`, report)
      if (cc.generateSelector && labels['controller-uid'] === undefined) meta(child).labels = { ...labels, 'controller-uid': uid }
      if (!selectorMatches(selector, strings(child, 'labels'))) {
        throw new SyncError(`labels on desired child ${String(child.kind)} ${keyOf(child)} don't match parent selector`, report)
      }
    }
    const errors = !isDeleting(parent) || this.shouldFinalize(parent, finalizer) ? await this.manageChildren(parent, observed, desired, cc.children, report) : []
    await this.writeCompositeStatus(pref, parent, response.status, statusSubresource, report)
    if (errors.length > 0) throw new SyncError(`can't reconcile children:\n  ${errors.join('\n  ')}`, report)
    return report
  }

  // claimChildren: owned and matching are claimed; owned but not matching are released; orphans
  // that match are adopted (unless the parent is going away).
  private async claimChildren(cc: CompositeSpec, parent: JsonObject, namespace: string | undefined, selector: LabelSelector, report: SyncReport): Promise<Observed> {
    const observed: Observed = new Map()
    const uid = meta(parent).uid
    for (const rule of cc.children) {
      const info = await this.options.kube.resourceInfo(rule.apiVersion, rule.resource)
      const claimed = new Map<string, JsonObject>()
      observed.set(`${info.kind}.${rule.apiVersion}`, claimed)
      const base = { apiVersion: rule.apiVersion, resource: info.resource }
      for (const item of (await this.options.kube.list({ ...base, namespace })).body) {
        const owner = controllerOf(item)
        if (owner !== undefined && owner.uid !== uid) continue
        const match = selectorMatches(selector, strings(item, 'labels'))
        const iref: ResourceRef = { ...base, name: String(meta(item).name) }
        if (info.namespaced) iref.namespace = String(meta(item).namespace)
        if (owner !== undefined && match) claimed.set(keyOf(item), item)
        else if (owner !== undefined) {
          if (isDeleting(parent)) continue
          await this.atomicUpdate(iref, meta(item).uid, (o) => {
            meta(o).ownerReferences = refsOf(o).filter((r) => r.uid !== uid)
            return true
          }, report, 'release')
        } else if (match && !isDeleting(parent) && !isDeleting(item)) {
          const fresh = await this.getOrNull(this.parentRefOf(parent))
          if (fresh === null || meta(fresh).uid !== uid || isDeleting(fresh)) continue
          const adopted = await this.atomicUpdate(iref, meta(item).uid, (o) => {
            meta(o).ownerReferences = [...refsOf(o).filter((r) => r.uid !== uid), controllerRef(parent)]
            return true
          }, report, 'adopt')
          if (adopted !== null) claimed.set(keyOf(item), item)
        }
      }
    }
    return observed
  }

  private parentRefOf(parent: JsonObject): ResourceRef {
    const c = this.options.controller
    const rule = c.kind === 'CompositeController' ? c.parent : (c.resources.find((r) => r.apiVersion === parent.apiVersion) ?? c.resources[0])
    const ref: ResourceRef = { apiVersion: String(parent.apiVersion), resource: rule?.resource ?? '', name: String(meta(parent).name) }
    if (typeof meta(parent).namespace === 'string') ref.namespace = meta(parent).namespace as string
    return ref
  }

  // customize.GetRelatedObjects under hook v2: every rule's type is present, objects keyed uniformly.
  private async related(parent: JsonObject): Promise<Observed> {
    const c = this.options.controller
    const related: Observed = new Map()
    if (c.hooks.customize === undefined) return related
    const cacheKey = `${String(meta(parent).uid)}/${String(meta(parent).generation ?? 0)}`
    let rules = this.customizeCache.get(cacheKey)
    if (rules === undefined) {
      rules = decodeCustomizeResponse(await this.callHook(c.hooks.customize, { controller: c.manifest, parent }))
      this.customizeCache.set(cacheKey, rules)
    }
    const kube = this.options.kube
    for (const rule of rules) {
      const info = await kube.resourceInfo(rule.apiVersion, rule.resource)
      const found = related.get(`${info.kind}.${rule.apiVersion}`) ?? new Map<string, JsonObject>()
      related.set(`${info.kind}.${rule.apiVersion}`, found)
      const hasLabels = isObject(rule.labelSelector)
      const hasNsSelector = isObject(rule.namespaceSelector)
      const ns = rule.namespace ?? ''
      const names = rule.names ?? []
      if (names.length > 0 && (hasLabels || hasNsSelector)) throw new Error(`related rule cannot have both names and labelSelector/namespaceSelector: ${JSON.stringify(rule)}`)
      if (ns !== '' && hasNsSelector) throw new Error(`related rule cannot have both namespace and namespaceSelector: ${JSON.stringify(rule)}`)
      const list = async (namespace?: string): Promise<JsonObject[]> =>
        (await kube.list({ apiVersion: rule.apiVersion, resource: info.resource, namespace: info.namespaced ? namespace : undefined })).body
      let items: JsonObject[]
      if (hasNsSelector) {
        if (!info.namespaced) throw new Error('namespaceSelector is only supported for namespaced related resources')
        const namespaces = (await kube.list({ apiVersion: 'v1', resource: 'namespaces' })).body.filter((n) => selectorMatches(rule.namespaceSelector, strings(n, 'labels')))
        items = (await Promise.all(namespaces.map((n) => list(String(meta(n).name))))).flat()
        items = items.filter((o) => selectorMatches(rule.labelSelector, strings(o, 'labels')))
      } else if (hasLabels && ns !== '') items = (await list(ns)).filter((o) => selectorMatches(rule.labelSelector, strings(o, 'labels')))
      else if (ns !== '' || names.length > 0) items = (await list(ns === '' ? undefined : ns)).filter((o) => names.length === 0 || names.includes(String(meta(o).name)))
      else items = (await list()).filter((o) => selectorMatches(rule.labelSelector, strings(o, 'labels')))
      for (const item of items) found.set(keyOf(item), item)
    }
    return related
  }

  // ManageChildren with the dynamic apply: deletes first, then creates and updates; errors are
  // collected so that one failure does not block the rest.
  private async manageChildren(parent: JsonObject, observed: Observed, desiredList: JsonObject[], rules: ChildRule[], report: SyncReport): Promise<string[]> {
    const kube = this.options.kube
    const errors: string[] = []
    const methods = new Map<string, string>()
    for (const r of rules) methods.set(`${(await kube.resourceInfo(r.apiVersion, r.resource)).kind}.${groupOf(r.apiVersion)}`, r.method)
    const desired: Observed = new Map()
    for (const d of desiredList) {
      const type = `${String(d.kind)}.${String(d.apiVersion)}`
      desired.set(type, (desired.get(type) ?? new Map<string, JsonObject>()).set(keyOf(d), d))
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
            const body = setLastApplied(want, want)
            const refs = refsOf(body)
            if (!refs.some((r) => r.uid === meta(parent).uid)) meta(body).ownerReferences = [...refs, controllerRef(parent)]
            try {
              await kube.create(ref, body)
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

  // updateParentStatus: the answer's status (or {}) plus observedGeneration, written only when it
  // differs from the live status.
  private async writeCompositeStatus(pref: ResourceRef, parent: JsonObject, answered: JsonObject | null, subresource: boolean, report: SyncReport): Promise<void> {
    const expected = clone(answered ?? {})
    expected.observedGeneration = typeof meta(parent).generation === 'number' ? meta(parent).generation as number : 0
    for (let attempt = 0; ; attempt++) {
      const current = await this.getOrNull(pref)
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
    const { pref, statusSubresource, rule } = await this.parentOf(ref)
    const report = this.newReport(`${pref.resource} ${ref.namespace ?? ''}/${ref.name}`)
    let parent = await this.getOrNull(pref)
    if (parent === null) return { ...report, parentGone: true }
    const finalizer = `metacontroller.io/decoratorcontroller-${dc.name}`
    const matches = (p: JsonObject): boolean =>
      selectorMatches(rule.labelSelector, strings(p, 'labels')) && selectorMatches(rule.annotationSelector, strings(p, 'annotations'))
    if (!matches(parent) && !finalizers(parent).includes(finalizer)) return { ...report, ignored: 'resources selector' }
    parent = await this.syncFinalizer(pref, parent, finalizer, report)
    if (!matches(parent) && !finalizers(parent).includes(finalizer)) return { ...report, ignored: 'resources selector' }

    // getChildren: only what this decorator made (controller ref plus the decorator annotation).
    const observed: Observed = new Map()
    for (const a of dc.attachments) {
      const info = await this.options.kube.resourceInfo(a.apiVersion, a.resource)
      const items = (await this.options.kube.list({ apiVersion: a.apiVersion, resource: info.resource, namespace: pref.namespace })).body
      const mine = items.filter((o) => controllerOf(o)?.uid === meta(parent as JsonObject).uid && strings(o, 'annotations')[DECORATOR_ANNOTATION] === dc.name)
      observed.set(`${info.kind}.${a.apiVersion}`, new Map(mine.map((o) => [keyOf(o), o])))
    }
    const related = await this.related(parent)
    report.finalizing = dc.hooks.finalize !== undefined && (isDeleting(parent) || !matches(parent))
    const hook = report.finalizing ? dc.hooks.finalize : dc.hooks.sync
    if (hook === undefined) throw new SyncError('no enabled hooks found', report)
    report.request = { controller: dc.manifest, object: parent, attachments: toRecord(observed), related: toRecord(related), finalizing: report.finalizing }
    report.response = await this.callHook(hook, report.request)
    let response: DecoratorResponse
    try {
      response = decodeDecoratorResponse(report.response)
    } catch (err) {
      throw new SyncError(String(err), report)
    }
    report.resyncAfterSeconds = response.resyncAfterSeconds
    const desired = response.attachments.map((c) => withNamespace(c, parent as JsonObject))

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
    const errors = !isDeleting(parent) || this.shouldFinalize(parent, finalizer) ? await this.manageChildren(parent, observed, desired, dc.attachments, report) : []
    if (errors.length > 0) throw new SyncError(`can't reconcile attachments:\n  ${errors.join('\n  ')}`, report)
    return report
  }

  // resourceVersions of the parent and of every object of the child types in its scope.
  private async snapshot(ref: ParentRef): Promise<Map<string, string>> {
    const { pref } = await this.parentOf(ref)
    const out = new Map<string, string>()
    const parent = await this.getOrNull(pref)
    if (parent !== null) out.set(`parent ${keyOf(parent)}`, String(meta(parent).resourceVersion))
    const c = this.options.controller
    for (const r of c.kind === 'CompositeController' ? c.children : c.attachments) {
      const info = await this.options.kube.resourceInfo(r.apiVersion, r.resource)
      for (const o of (await this.options.kube.list({ apiVersion: r.apiVersion, resource: info.resource, namespace: pref.namespace })).body) {
        out.set(`${info.kind} ${keyOf(o)}`, String(meta(o).resourceVersion))
      }
    }
    return out
  }
}

function controllerOf(o: JsonObject): JsonObject | undefined {
  return refsOf(o).find((r) => r.controller === true)
}

function refsOf(o: JsonObject): JsonObject[] {
  const refs = meta(o).ownerReferences
  return Array.isArray(refs) ? refs.filter(isObject) : []
}

// applyNamespaceDefaults: a child without a namespace gets the parent's (none for a cluster parent).
function withNamespace(child: JsonObject, parent: JsonObject): JsonObject {
  const c = clone(child)
  if (!isObject(c.metadata)) c.metadata = {}
  const m = c.metadata as JsonObject
  if (typeof m.namespace !== 'string' || m.namespace === '') {
    if (typeof meta(parent).namespace === 'string' && meta(parent).namespace !== '') m.namespace = meta(parent).namespace as string
    else delete m.namespace
  }
  return c
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
