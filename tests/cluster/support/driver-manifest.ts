/**
 * The project's CompositeController and DecoratorController manifests (`metacontroller/*.yaml`),
 * read into what the cluster layer's driver (driver.ts) needs: parent and child rules, update
 * methods, hook paths and timeouts, and the manifest as written, which each request carries.
 * Only what the driver acts on is read; the rest of each manifest travels untouched in `manifest`.
 */
import { readFileSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { isObject, type Json, type JsonObject } from '../../support/merge.ts'
import type { LabelSelector } from './kube.ts'

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
  /**
   * `parentResource.ignoreStatusChanges`: an update of the parent that leaves its generation,
   * labels and annotations alone and sets no deletionTimestamp (its status, its finalizers) queues
   * no sync (driver-events.ts).
   */
  ignoreStatusChanges: boolean
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
        ignoreStatusChanges: isObject(spec.parentResource) && spec.parentResource.ignoreStatusChanges === true,
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
  if (isObject(r.labelSelector)) rule.labelSelector = r.labelSelector
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
