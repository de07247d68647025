/**
 * The HTTPS transport to a workload cluster (docs/workload.md, "Bounds"). A pool's author names
 * the server, so everything it answers is untrusted, and the transport is the one place that
 * sees every byte:
 *
 * - **No redirect is followed.** A 3xx answer is an error naming the status; the agent's
 *   credential (a token header, a client certificate) never goes to a server the answer names.
 * - **Answers are bounded before they are parsed.** The bytes of a body are counted as they
 *   arrive; past `maxAnswerBytes`, or past what the pass may still read (its {@link ByteBudget}),
 *   the connection is destroyed and the call fails. A declared `content-length` over the bound is
 *   refused before any byte is read. No `accept-encoding` is sent and an encoded body is refused,
 *   so nothing is decompressed past the bound.
 * - **Every call can be abandoned**: by its own deadline (`callTimeoutMs`) and by the pass's
 *   signal, whichever comes first; the socket is destroyed, not left to finish.
 * - **What reaches a status is short.** An error answer's text is kept only when it is a
 *   Kubernetes `Status` (its message, clipped); anything else is its status code alone, so a
 *   server that is not an API server cannot have its pages copied into the pool's status.
 *
 * Built on node:https alone (one keep-alive agent per kubeconfig Secret), not on client-node's
 * fetch, which follows redirects and buffers bodies whole.
 */
import { Agent, request, type AgentOptions } from 'node:https'
import type { IncomingMessage } from 'node:http'
import type { ReducedKubeconfig } from './kubeconfig.ts'

/** The bytes a pass may still read from its workload cluster, shared by all its calls. */
export class ByteBudget {
  constructor(public remaining: number) {}

  /** Takes `bytes`; false (and nothing taken) when fewer remain. */
  take(bytes: number): boolean {
    if (bytes > this.remaining) return false
    this.remaining -= bytes
    return true
  }
}

/** What bounds one pass's calls: its signal (the pass deadline) and its byte budget. */
export interface ReadLimits {
  signal: AbortSignal
  budget: ByteBudget
}

/** The transport's fixed settings (AGENT_CALL_TIMEOUT_SECONDS, AGENT_MAX_ANSWER_BYTES). */
export interface TransportSettings {
  callTimeoutMs: number
  maxAnswerBytes: number
}

/**
 * A failed call: `code` is the HTTP status when there was one, `body` a Kubernetes Status as JSON
 * text, `bound` the bound that stopped the read (the answer's size, or the pass's budget).
 */
export class WorkloadHttpError extends Error {
  constructor(
    message: string,
    readonly code?: number,
    readonly body?: string,
    readonly bound?: 'answer' | 'pass'
  ) {
    super(message)
    this.name = 'WorkloadHttpError'
  }
}

/** One call: method, path under the server, query, and a JSON body with its content type. */
export interface HttpCall {
  what: string
  method: 'GET' | 'PATCH' | 'DELETE'
  path: string
  query?: Record<string, string | number | undefined>
  body?: { contentType: string; json: unknown }
}

/** The transport of one workload cluster. */
export interface WorkloadHttp {
  /** Runs a call and answers its parsed JSON body; rejects with a {@link WorkloadHttpError}. */
  call(call: HttpCall, limits: ReadLimits): Promise<unknown>
  /** Closes its idle connections (the client is being replaced). */
  close(): void
}

/** An error answer's body is read at most this far, for its Status message. */
const ERROR_BODY_BYTES = 64 * 1024
/** A text from the server (a redirect's target) is clipped to this many characters. */
const SERVER_TEXT_CHARS = 200

/** The server's text, one line of printable characters, clipped. */
function clipped(text: string): string {
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ')
  return line.length > SERVER_TEXT_CHARS ? `${line.slice(0, SERVER_TEXT_CHARS)}…` : line
}

/** The transport for a reduced kubeconfig: its server, CA, TLS name and credential, nothing else. */
export function workloadHttp(config: ReducedKubeconfig, settings: TransportSettings): WorkloadHttp {
  const options: AgentOptions = { keepAlive: true, maxSockets: 4, rejectUnauthorized: true }
  if (config.caData !== undefined) options.ca = Buffer.from(config.caData, 'base64')
  if (config.certData !== undefined) options.cert = Buffer.from(config.certData, 'base64')
  if (config.keyData !== undefined) options.key = Buffer.from(config.keyData, 'base64')
  if (config.tlsServerName !== undefined) options.servername = config.tlsServerName
  const agent = new Agent(options)
  const base = config.server.replace(/\/+$/, '')
  const headers: Record<string, string> = { accept: 'application/json', 'user-agent': 'gpuhooks-workload-agent' }
  if (config.token !== undefined) headers.authorization = `Bearer ${config.token}`

  return {
    call: (call, limits) => send(agent, base, headers, call, limits, settings),
    close: () => agent.destroy()
  }
}

function send(
  agent: Agent,
  base: string,
  headers: Record<string, string>,
  call: HttpCall,
  limits: ReadLimits,
  settings: TransportSettings
): Promise<unknown> {
  const url = new URL(base + call.path)
  for (const [key, value] of Object.entries(call.query ?? {})) if (value !== undefined) url.searchParams.set(key, String(value))
  const body = call.body === undefined ? undefined : Buffer.from(JSON.stringify(call.body.json))
  // The length is set for every body: node frames a DELETE's body with neither length nor chunks.
  const sent =
    body === undefined || call.body === undefined
      ? headers
      : { ...headers, 'content-type': call.body.contentType, 'content-length': String(body.length) }

  return new Promise((resolve, reject) => {
    let settled = false
    const finish = (error: Error | undefined, value?: unknown): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      limits.signal.removeEventListener('abort', onPass)
      if (error !== undefined) {
        // Destroying the request ends the socket: no byte more is read from it.
        req.destroy()
        reject(error)
      } else resolve(value)
    }
    const onPass = (): void => finish(reasonOf(limits.signal, `${call.what}: abandoned`))
    const timer = setTimeout(
      () => finish(new WorkloadHttpError(`${call.what}: no answer within ${settings.callTimeoutMs} ms`)),
      settings.callTimeoutMs
    )
    const req = request(url, { method: call.method, agent, headers: sent }, (res) => receive(res, call.what, limits, settings, finish))
    req.on('error', (error) => finish(error))
    if (limits.signal.aborted) return onPass()
    limits.signal.addEventListener('abort', onPass)
    req.end(body)
  })
}

/** Reads an answer within the bounds, then settles the call with its JSON or its error. */
function receive(
  res: IncomingMessage,
  what: string,
  limits: ReadLimits,
  settings: TransportSettings,
  finish: (error: Error | undefined, value?: unknown) => void
): void {
  const code = res.statusCode ?? 0
  if (code >= 300 && code < 400) {
    const location = typeof res.headers.location === 'string' ? ` to ${clipped(res.headers.location)}` : ''
    return finish(new WorkloadHttpError(`${what}: HTTP ${code}, a redirect${location}; the agent follows no redirect`, code))
  }
  const encoding = res.headers['content-encoding']
  if (encoding !== undefined && encoding !== 'identity') {
    return finish(new WorkloadHttpError(`${what}: the answer is ${clipped(encoding)}-encoded; the agent reads only plain answers`, code))
  }
  const ok = code >= 200 && code < 300
  const bound = ok ? settings.maxAnswerBytes : ERROR_BODY_BYTES
  const declared = Number(res.headers['content-length'])
  if (ok && Number.isFinite(declared) && declared > bound) return finish(tooLarge(what, bound))
  const chunks: Buffer[] = []
  let size = 0
  let stopped = false
  const stop = (error: Error): void => {
    stopped = true
    chunks.length = 0
    finish(error)
  }
  res.on('data', (chunk: Buffer) => {
    if (stopped) return
    size += chunk.length
    if (size > bound) return stop(ok ? tooLarge(what, bound) : new WorkloadHttpError(`${what}: HTTP ${code}`, code))
    if (!limits.budget.take(chunk.length)) return stop(overBudget(what))
    chunks.push(chunk)
  })
  res.on('error', (error) => finish(error))
  res.on('end', () => {
    const text = Buffer.concat(chunks, size).toString('utf8')
    if (!ok) return finish(statusError(what, code, text))
    try {
      finish(undefined, JSON.parse(text))
    } catch {
      finish(new WorkloadHttpError(`${what}: the answer is not JSON`, code))
    }
  })
}

function tooLarge(what: string, bound: number): WorkloadHttpError {
  return new WorkloadHttpError(
    `${what}: the answer is larger than ${bound} bytes (AGENT_MAX_ANSWER_BYTES); it was not read`,
    undefined,
    undefined,
    'answer'
  )
}

function overBudget(what: string): WorkloadHttpError {
  return new WorkloadHttpError(
    `${what}: the pass has read all it may from this cluster (AGENT_MAX_PASS_BYTES); the rest was not read`,
    undefined,
    undefined,
    'pass'
  )
}

/** An error answer: its Kubernetes Status kept (message clipped) for the caller, any other text dropped. */
function statusError(what: string, code: number, text: string): WorkloadHttpError {
  let status: unknown
  try {
    status = JSON.parse(text)
  } catch {
    status = undefined
  }
  const message =
    typeof status === 'object' && status !== null && (status as { kind?: unknown }).kind === 'Status'
      ? (status as { message?: unknown }).message
      : undefined
  if (typeof message !== 'string') return new WorkloadHttpError(`${what}: HTTP ${code}`, code)
  return new WorkloadHttpError(`${what}: HTTP ${code}: ${clipped(message)}`, code, JSON.stringify({ message: clipped(message) }))
}

/** The error a signal was aborted with, or one saying so. */
function reasonOf(signal: AbortSignal, fallback: string): Error {
  return signal.reason instanceof Error ? signal.reason : new WorkloadHttpError(fallback)
}
