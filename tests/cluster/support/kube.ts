/**
 * A minimal Kubernetes REST client over `node:https`, for the cluster tests and the Metacontroller
 * stand-in (driver.ts). It reads the kubeconfig cluster.ts writes and speaks plain JSON: no
 * client library, so what is sent is exactly what the tests build.
 */
import { readFileSync } from 'node:fs'
import https from 'node:https'
import { dirname, resolve } from 'node:path'
import { parse } from 'yaml'
import { isObject, type JsonObject } from '../../support/merge.ts'

/** Where and how to reach the API server. */
export interface KubeConnection {
  /** `https://127.0.0.1:6443` */
  server: string
  ca?: Buffer
  cert?: Buffer
  key?: Buffer
  token?: string
  insecureSkipTLSVerify?: boolean
}

/** An API path target: resource is the plural (`pods`), as in a RESTMapping. */
export interface ResourceRef {
  apiVersion: string
  resource: string
  namespace?: string
  name?: string
}

/** A parsed answer and its HTTP status. */
export interface KubeResponse<T = JsonObject> {
  status: number
  body: T
}

/** `DeleteOptions` fields the tests use. */
export interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan'
  preconditions?: { uid?: string; resourceVersion?: string }
  gracePeriodSeconds?: number
}

/** Patch flavours, named after their content types. */
export type PatchType = 'merge' | 'json' | 'strategic' | 'apply'

/** What discovery says about one resource. */
export interface ResourceInfo {
  apiVersion: string
  /** Plural name, e.g. `networkpolicies`. */
  resource: string
  kind: string
  namespaced: boolean
  /** Subresource names, e.g. `status`. */
  subresources: string[]
}

/** A non-2xx answer, with the API `Status.reason` (`NotFound`, `AlreadyExists`, `Conflict`, ...). */
export class KubeError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly apiMessage: string,
    readonly method: string,
    readonly path: string,
    readonly body: unknown
  ) {
    super(`${method} ${path}: ${status} ${reason}: ${apiMessage}`)
    this.name = 'KubeError'
  }
}

/** True when `err` is a {@link KubeError} with one of the given reasons. */
export function isReason(err: unknown, ...reasons: string[]): err is KubeError {
  return err instanceof KubeError && reasons.includes(err.reason)
}

/** The operations the driver needs; {@link KubeClient} implements them, unit tests fake them. */
export interface KubeApi {
  get(ref: ResourceRef): Promise<KubeResponse>
  /** Items carry `apiVersion` and `kind`, as an informer's objects do. */
  list(ref: ResourceRef, options?: { labelSelector?: string }): Promise<KubeResponse<JsonObject[]>>
  create(ref: ResourceRef, body: JsonObject): Promise<KubeResponse>
  update(ref: ResourceRef, body: JsonObject): Promise<KubeResponse>
  updateStatus(ref: ResourceRef, body: JsonObject): Promise<KubeResponse>
  delete(ref: ResourceRef, options?: DeleteOptions): Promise<KubeResponse>
  patch(ref: ResourceRef, body: unknown, type: PatchType, options?: { fieldManager?: string; force?: boolean }): Promise<KubeResponse>
  /** Discovery by plural resource or by kind. */
  resourceInfo(apiVersion: string, resourceOrKind: string): Promise<ResourceInfo>
}

/**
 * Reads a kubeconfig (YAML): the current (or named) context's cluster and user, with certificate
 * authority, client certificate and key given as file paths (relative to the kubeconfig) or as
 * `-data` (base64), and an optional bearer token.
 */
export function loadKubeconfig(path: string, contextName?: string): KubeConnection {
  const doc: unknown = parse(readFileSync(path, 'utf8'))
  if (!isObject(doc)) throw new Error(`${path}: not a kubeconfig`)
  const named = (list: string, name: unknown): JsonObject => {
    const entry = (Array.isArray(doc[list]) ? doc[list] : []).find((e) => isObject(e) && e.name === name)
    if (!isObject(entry)) throw new Error(`${path}: no ${list} entry named ${String(name)}`)
    return entry
  }
  const context = named('contexts', contextName ?? doc['current-context']).context as JsonObject
  const cluster = named('clusters', context.cluster).cluster as JsonObject
  const user = isObject(context) && context.user !== undefined ? (named('users', context.user).user as JsonObject) : {}
  const base = dirname(resolve(path))
  const material = (from: JsonObject, field: string): Buffer | undefined => {
    const data = from[`${field}-data`]
    if (typeof data === 'string') return Buffer.from(data, 'base64')
    const file = from[field]
    return typeof file === 'string' ? readFileSync(resolve(base, file)) : undefined
  }
  const conn: KubeConnection = { server: String(cluster.server) }
  const ca = material(cluster, 'certificate-authority')
  const cert = material(user, 'client-certificate')
  const key = material(user, 'client-key')
  if (ca !== undefined) conn.ca = ca
  if (cert !== undefined) conn.cert = cert
  if (key !== undefined) conn.key = key
  if (typeof user.token === 'string') conn.token = user.token
  if (cluster['insecure-skip-tls-verify'] === true) conn.insecureSkipTLSVerify = true
  return conn
}

/** The REST path of `ref`, optionally of one of its subresources. */
export function resourcePath(ref: ResourceRef, subresource?: string): string {
  const prefix = ref.apiVersion.includes('/') ? `/apis/${ref.apiVersion}` : `/api/${ref.apiVersion}`
  const ns = ref.namespace !== undefined && ref.namespace !== '' ? `/namespaces/${encodeURIComponent(ref.namespace)}` : ''
  const name = ref.name !== undefined ? `/${encodeURIComponent(ref.name)}` : ''
  return `${prefix}${ns}/${ref.resource}${name}${subresource !== undefined ? `/${subresource}` : ''}`
}

const PATCH_TYPES: Record<PatchType, string> = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml'
}

/** The client: one keep-alive agent per connection, discovery cached per group version. */
export class KubeClient implements KubeApi {
  private readonly agent: https.Agent
  private readonly discovery = new Map<string, ResourceInfo[]>()

  constructor(readonly connection: KubeConnection) {
    const options: https.AgentOptions = { keepAlive: true, rejectUnauthorized: connection.insecureSkipTLSVerify !== true }
    if (connection.ca !== undefined) options.ca = connection.ca
    if (connection.cert !== undefined) options.cert = connection.cert
    if (connection.key !== undefined) options.key = connection.key
    this.agent = new https.Agent(options)
  }

  /** A client for the kubeconfig at `path`. */
  static fromKubeconfig(path: string, context?: string): KubeClient {
    return new KubeClient(loadKubeconfig(path, context))
  }

  /** Closes idle keep-alive sockets so the test process can exit. */
  close(): void {
    this.agent.destroy()
  }

  /**
   * One request. JSON bodies are sent as JSON, strings as they are; the answer is parsed as JSON
   * when it is JSON. Throws {@link KubeError} on any status outside 2xx.
   */
  async request(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<KubeResponse<unknown>> {
    const url = new URL(path, this.connection.server)
    const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)
    const headers: Record<string, string> = { Accept: 'application/json' }
    if (payload !== undefined) {
      headers['Content-Type'] = contentType
      headers['Content-Length'] = String(Buffer.byteLength(payload))
    }
    if (this.connection.token !== undefined) headers.Authorization = `Bearer ${this.connection.token}`
    const { status, text } = await new Promise<{ status: number; text: string }>((done, fail) => {
      const req = https.request(url, { method, headers, agent: this.agent }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => done({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }))
        res.on('error', fail)
      })
      req.on('error', fail)
      req.end(payload)
    })
    let parsed: unknown = text
    try {
      parsed = text === '' ? null : JSON.parse(text)
    } catch {
      // Not JSON (e.g. a proxy error page): keep the text for the error message.
    }
    if (status < 200 || status > 299) {
      const reason = isObject(parsed) && typeof parsed.reason === 'string' ? parsed.reason : `HTTP${status}`
      const message = isObject(parsed) && typeof parsed.message === 'string' ? parsed.message : text
      throw new KubeError(status, reason, message, method, url.pathname + url.search, parsed)
    }
    return { status, body: parsed }
  }

  private async json(method: string, path: string, body?: unknown, contentType?: string): Promise<KubeResponse> {
    const res = await this.request(method, path, body, contentType)
    return { status: res.status, body: isObject(res.body) ? res.body : {} }
  }

  get(ref: ResourceRef): Promise<KubeResponse> {
    return this.json('GET', resourcePath(ref))
  }

  async list(ref: ResourceRef, options: { labelSelector?: string } = {}): Promise<KubeResponse<JsonObject[]>> {
    const query = options.labelSelector !== undefined ? `?labelSelector=${encodeURIComponent(options.labelSelector)}` : ''
    const res = await this.json('GET', resourcePath({ ...ref, name: undefined }) + query)
    // List items of built-in types come without apiVersion and kind; informers fill them in.
    const kind = String(res.body.kind ?? '').replace(/List$/, '')
    const items = (Array.isArray(res.body.items) ? res.body.items : []).filter(isObject)
    return { status: res.status, body: items.map((item) => ({ apiVersion: ref.apiVersion, kind, ...item })) }
  }

  create(ref: ResourceRef, body: JsonObject): Promise<KubeResponse> {
    return this.json('POST', resourcePath({ ...ref, name: undefined }), body)
  }

  update(ref: ResourceRef, body: JsonObject): Promise<KubeResponse> {
    return this.json('PUT', resourcePath(ref), body)
  }

  updateStatus(ref: ResourceRef, body: JsonObject): Promise<KubeResponse> {
    return this.json('PUT', resourcePath(ref, 'status'), body)
  }

  delete(ref: ResourceRef, options: DeleteOptions = {}): Promise<KubeResponse> {
    return this.json('DELETE', resourcePath(ref), { apiVersion: 'v1', kind: 'DeleteOptions', ...options })
  }

  patch(ref: ResourceRef, body: unknown, type: PatchType, options: { fieldManager?: string; force?: boolean } = {}): Promise<KubeResponse> {
    const query = new URLSearchParams()
    if (options.fieldManager !== undefined) query.set('fieldManager', options.fieldManager)
    if (options.force !== undefined) query.set('force', String(options.force))
    const q = query.size > 0 ? `?${query.toString()}` : ''
    return this.json('PATCH', resourcePath(ref) + q, body, PATCH_TYPES[type])
  }

  async resourceInfo(apiVersion: string, resourceOrKind: string): Promise<ResourceInfo> {
    const find = (): ResourceInfo | undefined =>
      this.discovery.get(apiVersion)?.find((r) => r.resource === resourceOrKind || r.kind === resourceOrKind)
    // A miss refreshes once: CRDs installed by the test appear after the first lookup.
    if (find() === undefined) await this.discover(apiVersion)
    const info = find()
    if (info === undefined) throw new Error(`discovery: no resource or kind ${resourceOrKind} in ${apiVersion}`)
    return info
  }

  private async discover(apiVersion: string): Promise<void> {
    const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`
    const res = await this.json('GET', path)
    const all = (Array.isArray(res.body.resources) ? res.body.resources : []).filter(isObject)
    const main = all.filter((r) => !String(r.name).includes('/'))
    this.discovery.set(
      apiVersion,
      main.map((r) => ({
        apiVersion,
        resource: String(r.name),
        kind: String(r.kind),
        namespaced: r.namespaced === true,
        subresources: all.filter((s) => String(s.name).startsWith(`${String(r.name)}/`)).map((s) => String(s.name).split('/')[1] as string)
      }))
    )
  }
}

/** A `metav1.LabelSelector` (also the shape of a DecoratorController's annotation selector). */
export interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: { key: string; operator: string; values?: string[] }[]
}

/**
 * Whether `labels` satisfy `selector`, as `metav1.LabelSelectorAsSelector(...).Matches` decides:
 * null or `{}` selects everything; an invalid requirement throws.
 */
export function selectorMatches(selector: LabelSelector | null | undefined, labels: Record<string, string> | null | undefined): boolean {
  const have = labels ?? {}
  const own = (key: string): boolean => Object.prototype.hasOwnProperty.call(have, key)
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) if (!own(key) || have[key] !== value) return false
  for (const { key, operator, values = [] } of selector?.matchExpressions ?? []) {
    const needsValues = operator === 'In' || operator === 'NotIn'
    if (needsValues !== values.length > 0 || !['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(operator)) {
      throw new Error(`invalid label selector requirement ${key} ${operator} ${JSON.stringify(values)}`)
    }
    const value = have[key]
    const ok =
      operator === 'In'
        ? own(key) && values.includes(value as string)
        : operator === 'NotIn'
          ? !own(key) || !values.includes(value as string)
          : operator === 'Exists'
            ? own(key)
            : !own(key)
    if (!ok) return false
  }
  return true
}

/** The `labelSelector` query string of a selector (`app=x,tier in (a,b),!legacy`). */
export function selectorString(selector: LabelSelector | null | undefined): string {
  const parts = Object.entries(selector?.matchLabels ?? {}).map(([k, v]) => `${k}=${v}`)
  for (const { key, operator, values = [] } of selector?.matchExpressions ?? []) {
    if (operator === 'In') parts.push(`${key} in (${values.join(',')})`)
    else if (operator === 'NotIn') parts.push(`${key} notin (${values.join(',')})`)
    else if (operator === 'Exists') parts.push(key)
    else parts.push(`!${key}`)
  }
  return parts.join(',')
}
