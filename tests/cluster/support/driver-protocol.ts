/**
 * The hooks' wire format as the cluster layer's driver (driver.ts) speaks it: the v2 request
 * maps, the strict decoding of answers, the POST itself, and what a pass reports or throws.
 *
 * Follows Metacontroller v4.17.2: `pkg/hooks/webhook.go` and the v2 `CompositeHookResponse`,
 * `DecoratorHookResponse` and customize response types.
 */
import { isObject, type Json, type JsonObject } from '../../support/merge.ts'
import type { HookRef } from './driver-manifest.ts'
import type { LabelSelector } from './kube.ts'

/** Objects by type key (`Kind.apiVersion`), then object key, as a pass collects them. */
export type Observed = Map<string, Map<string, JsonObject>>

/** The v2 request shape of {@link Observed}: `children`, `attachments` and `related` maps. */
export const toRecord = (m: Observed): Record<string, Record<string, JsonObject>> =>
  Object.fromEntries([...m].map(([type, objs]) => [type, Object.fromEntries(objs)]))

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
  typed<Json[]>(
    v,
    (x) => Array.isArray(x) && x.every((o) => isObject(o) && typeof o.kind === 'string' && o.kind !== ''),
    [],
    `${where} (objects with a kind)`
  ) as JsonObject[]
const stringOrNullMap = (v: Json | undefined, where: string): Record<string, string | null> =>
  typed<JsonObject>(v, (x) => isObject(x) && Object.values(x).every((s) => s === null || typeof s === 'string'), {}, where) as Record<
    string,
    string | null
  >

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
    for (const sel of ['labelSelector', 'namespaceSelector'])
      if (isObject(rule[sel])) strict(rule[sel], ['matchLabels', 'matchExpressions'], `${where}.${sel}`)
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

/** The default transport: `fetch`, aborted after the hook's timeout. */
export const fetchTransport: HookTransport = async (url, body, timeoutMs) => {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs)
  })
  return { status: res.status, body: await res.text() }
}

/**
 * Posts `body` to a hook under `baseUrl` and parses the answer. Throws {@link HookError} when
 * the request fails, the status is not 200 or the body is not JSON.
 */
export async function callHook(transport: HookTransport, baseUrl: string, hook: HookRef, body: JsonObject): Promise<unknown> {
  const url = new URL(hook.path, baseUrl).toString()
  let res: { status: number; body: string }
  try {
    res = await transport(url, body, hook.timeoutMs)
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
