/**
 * The activity controller's one read of Prometheus per round (docs/observability.md, "What the
 * agent asks Prometheus"): an instant query of the HTTP API (`GET /api/v1/query`) for every
 * Instance at once,
 *
 *     max by (namespace, instance_name, instance_uid) (
 *       max_over_time(gpustack_instance_accelerator_cores_utilization_percent[<2 x round>s]))
 *
 * the highest utilization of any accelerator of each Instance over the last two rounds (a rule
 * evaluated once a round always has a sample in the window). The answer is
 * untrusted: its size is bounded while it is read, the read has a deadline, and anything that is
 * not a vector sample with the three labels and a finite number is left out (never read as
 * activity or as idleness). Nothing here throws.
 */

/** The project's recording rule (deploy/chart/gpuhooks/files/monitoring/instance.rules.yaml). */
export const UTILIZATION_RULE = 'gpustack_instance_accelerator_cores_utilization_percent'

/** The most series one answer may hold; past it the answer is refused as a whole. */
export const MAX_SERIES = 200_000

/** The query of a round of `windowSeconds`. */
export function activityQuery(windowSeconds: number): string {
  return `max by (namespace, instance_name, instance_uid) (max_over_time(${UTILIZATION_RULE}[${windowSeconds}s]))`
}

/** The key of an Instance's series: namespace, name and uid. */
export function seriesKey(namespace: string, name: string, uid: string): string {
  return JSON.stringify([namespace, name, uid])
}

/** What a round learned: the utilization per Instance, or why it learned nothing. */
export type Answer = { ok: true; values: ReadonlyMap<string, number>; skipped: number } | { ok: false; message: string }

const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined)
const own = (value: unknown, key: string): unknown =>
  typeof value === 'object' && value !== null && !Array.isArray(value) && Object.hasOwn(value, key)
    ? (value as Record<string, unknown>)[key]
    : undefined

/**
 * Reads an answer body. An error answer, or one that is not a vector, is no observation
 * (`ok: false`); a sample without the three labels or a finite value is skipped, and two samples
 * of one Instance keep the higher value.
 */
export function parseAnswer(body: string): Answer {
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    return { ok: false, message: 'the answer is not JSON' }
  }
  if (own(json, 'status') !== 'success') {
    const error = text(own(json, 'error'))
    return { ok: false, message: `Prometheus answered ${error !== undefined ? `an error: ${error.slice(0, 200)}` : 'without success'}` }
  }
  const data = own(json, 'data')
  const result = own(data, 'result')
  if (own(data, 'resultType') !== 'vector' || !Array.isArray(result)) return { ok: false, message: 'the answer is not a vector' }
  if (result.length > MAX_SERIES) return { ok: false, message: `the answer has ${result.length} series, more than ${MAX_SERIES}` }
  const values = new Map<string, number>()
  let skipped = 0
  for (const sample of result as unknown[]) {
    const metric = own(sample, 'metric')
    const namespace = text(own(metric, 'namespace'))
    const name = text(own(metric, 'instance_name'))
    const uid = text(own(metric, 'instance_uid'))
    const pair = own(sample, 'value')
    const raw: unknown = Array.isArray(pair) && pair.length === 2 ? pair[1] : undefined
    const value = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : Number.NaN
    if (namespace === undefined || name === undefined || uid === undefined || !Number.isFinite(value)) {
      skipped += 1
      continue
    }
    const key = seriesKey(namespace, name, uid)
    values.set(key, Math.max(value, values.get(key) ?? Number.NEGATIVE_INFINITY))
  }
  return { ok: true, values, skipped }
}

/** The bounds of one query. */
export interface QueryBounds {
  timeoutMs: number
  maxAnswerBytes: number
}

/** A reader of Prometheus: the query in, the answer out; never rejects. */
export type QueryPrometheus = (query: string) => Promise<Answer>

/** Queries `baseUrl` over HTTP with the node's fetch, bounded by `bounds`. */
export function prometheusClient(baseUrl: string, bounds: QueryBounds): QueryPrometheus {
  return async (query) => {
    const url = `${baseUrl}/api/v1/query?${new URLSearchParams({ query }).toString()}`
    const abort = new AbortController()
    const timer = setTimeout(() => abort.abort(), bounds.timeoutMs)
    try {
      const response = await fetch(url, { signal: abort.signal, headers: { accept: 'application/json' }, redirect: 'error' })
      const body = await readBounded(response, bounds.maxAnswerBytes)
      if (body === undefined) {
        abort.abort()
        return { ok: false, message: `the answer is larger than ${bounds.maxAnswerBytes} bytes` }
      }
      // Prometheus answers errors (400, 422, 503) with the same JSON envelope; its message says more than the code.
      const answer = parseAnswer(body)
      if (!answer.ok && response.status !== 200) return { ok: false, message: `HTTP ${response.status}: ${answer.message}` }
      return answer
    } catch (error) {
      const message = abort.signal.aborted ? `no answer within ${bounds.timeoutMs} ms` : errorMessage(error)
      return { ok: false, message: message.slice(0, 300) }
    } finally {
      clearTimeout(timer)
    }
  }
}

/** The body as text, or undefined past `maxBytes` (the rest is not read). */
async function readBounded(response: Response, maxBytes: number): Promise<string | undefined> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN)
  if (Number.isFinite(declared) && declared > maxBytes) return undefined
  if (response.body === null) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > maxBytes) return undefined
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8')
}

function errorMessage(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = (error as { cause?: unknown }).cause
  return cause instanceof Error ? `${error.message}: ${cause.message}` : error.message
}
