/**
 * The transport's bounds: bodies in flight past the budget and a process under pressure answer
 * 503 with Retry-After while the probes keep answering; JSON nested past the limit is a 400 at
 * parse time; request ids are unique across listeners and processes.
 */
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { execFileSync } from 'node:child_process'
import { request as httpRequest, type ClientRequest } from 'node:http'
import { join } from 'node:path'
import { Type } from '@sinclair/typebox'
import { buildApp, hookRoute } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import { nextRequestId } from '../../hooks/server/request-id.ts'
import { childEnv } from '../support/child-env.ts'

const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } }

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/** Starts a POST of `length` declared bytes and writes `first`; the rest is written by `finish`. */
function open(port: number, path: string, length: number, first: string): { req: ClientRequest; answer: Promise<Answer> } {
  let req: ClientRequest | undefined
  const answer = new Promise<Answer>((resolve, reject) => {
    req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': length }
      },
      (res) => {
        let body = ''
        res.on('data', (c: Buffer) => (body += c.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      }
    )
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)))
    req.write(first)
  })
  return { req: req as unknown as ClientRequest, answer }
}

function get(port: number, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    httpRequest({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => (body += c.toString()))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
    })
      .on('error', reject)
      .end()
  })
}

/** Listens on a free loopback port; `firstReceived` resolves once a request's body starts to be read. */
async function listening(t: Test, app: FastifyInstance): Promise<{ port: number; firstReceived: Promise<void> }> {
  let received!: () => void
  const firstReceived = new Promise<void>((resolve) => (received = resolve))
  app.addHook('preParsing', async () => received())
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { port: (app.server.address() as { port: number }).port, firstReceived }
}

/** A customize body of exactly `size` bytes: valid JSON padded with spaces. */
function padded(size: number): string {
  const json = JSON.stringify({ controller: {}, parent: namespace })
  return json + ' '.repeat(size - Buffer.byteLength(json))
}

t.test('bodies in flight past MAX_INFLIGHT_BYTES are answered 503 with Retry-After; the probes still answer', async (t) => {
  const app = await buildApp({
    routes,
    limits: { maxInflightBytes: 1024 * 1024, retryAfterSeconds: 7, maxEventLoopDelayMs: 0, maxHeapUsedBytes: 0 }
  })
  const { port, firstReceived } = await listening(t, app)
  const size = 800 * 1024
  const body = padded(size)

  const first = open(port, '/hooks/isolation/customize', size, body.slice(0, 1024))
  await firstReceived
  const second = open(port, '/hooks/isolation/customize', size, body.slice(0, 1024))
  const refused = await second.answer
  t.equal(refused.status, 503)
  t.equal(refused.headers['retry-after'], '7')
  t.same(JSON.parse(refused.body), {
    error: 'Service Unavailable',
    message: `the service is reading ${size} request bytes already; retry later`
  })
  const health = await get(port, '/healthz')
  t.same([health.status, health.body], [200, '{"status":"ok"}'], '/healthz answers while the budget is spent')
  t.equal((await get(port, '/readyz')).status, 200)

  first.req.end(body.slice(1024))
  const served = await first.answer
  t.equal(served.status, 200, 'the body within the budget is served')
  t.match(served.body, /relatedResources/)
  const third = open(port, '/hooks/isolation/customize', size, body)
  third.req.end()
  t.equal((await third.answer).status, 200, 'once it is answered, its bytes are free again')
  const metrics = await get(port, '/metrics')
  t.match(metrics.body, /gpuhooks_hook_errors_total\{hook="isolation_customize",tier="overload"\} 1/)
})

t.test('a body without a content-length counts as the body limit', async (t) => {
  const app = await buildApp({
    routes,
    bodyLimit: 2 * 1024 * 1024,
    limits: { maxInflightBytes: 3 * 1024 * 1024, maxEventLoopDelayMs: 0, maxHeapUsedBytes: 0 }
  })
  const { port, firstReceived } = await listening(t, app)
  const chunked = (): { req: ClientRequest; answer: Promise<Answer> } => {
    let req: ClientRequest | undefined
    const answer = new Promise<Answer>((resolve, reject) => {
      req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          path: '/hooks/isolation/customize',
          method: 'POST',
          agent: false,
          headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }
        },
        (res) => {
          let body = ''
          res.on('data', (c: Buffer) => (body += c.toString()))
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
        }
      )
      req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'EPIPE' || err.code === 'ECONNRESET' ? undefined : reject(err)))
      req.write('{')
    })
    return { req: req as unknown as ClientRequest, answer }
  }
  const first = chunked()
  await firstReceived
  const second = chunked()
  t.equal((await second.answer).status, 503, '2 MiB + 2 MiB is past 3 MiB')
  first.req.end(`"controller": {}, "parent": ${JSON.stringify(namespace)}}`)
  t.equal((await first.answer).status, 200)
})

t.test('a process under pressure (heap past MAX_HEAP_USED_BYTES) refuses hooks with 503 and Retry-After; the probes answer', async (t) => {
  const app = await buildApp({ routes, limits: { maxHeapUsedBytes: 1, maxEventLoopDelayMs: 0, retryAfterSeconds: 3 } })
  t.teardown(() => app.close())
  // under-pressure samples memory on a timer; wait for the first sample to land.
  let answer = await app.inject({ method: 'POST', url: '/hooks/isolation/customize', payload: { controller: {}, parent: namespace } })
  for (let i = 0; i < 100 && answer.statusCode !== 503; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    answer = await app.inject({ method: 'POST', url: '/hooks/isolation/customize', payload: { controller: {}, parent: namespace } })
  }
  t.equal(answer.statusCode, 503)
  t.equal(answer.headers['retry-after'], '3')
  t.equal(answer.json<{ error: string }>().error, 'Service Unavailable')
  t.equal((await app.inject({ method: 'GET', url: '/healthz' })).statusCode, 200)
  t.equal((await app.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
})

t.test('JSON nested past JSON_MAX_DEPTH is a 400 at parse time; at the limit it is parsed', async (t) => {
  const app = await buildApp({ routes, limits: { maxJsonDepth: 40 } })
  t.teardown(() => app.close())
  const nested = (levels: number): string => `${'['.repeat(levels)}${']'.repeat(levels)}`
  // The body object is level 1, `controller`'s value starts level 2.
  const body = (levels: number): string => `{"controller": ${nested(levels)}, "parent": ${JSON.stringify(namespace)}}`
  /** POSTs `text` as a JSON body to the hook at `url`. */
  const post = (text: string, url = '/hooks/isolation/customize') =>
    app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: text })
  const deep = await post(body(40))
  t.equal(deep.statusCode, 400)
  t.same(deep.json(), { error: 'Bad Request', message: 'body is nested deeper than 40 levels; no Kubernetes object is' })
  const atLimit = await post(body(39))
  t.equal(atLimit.statusCode, 200)
  const strings = await post(`{"controller": "${'['.repeat(1000)}", "parent": ${JSON.stringify(namespace)}}`)
  t.equal(strings.statusCode, 200, 'brackets inside strings do not count')
  const million = await post(nested(1_000_000), '/hooks/isolation/sync')
  t.equal(million.statusCode, 400, 'a million levels: refused, no stack overflow')
})

t.test('a prototype-poisoning key is a 400', async (t) => {
  const app = await buildApp({ routes })
  t.teardown(() => app.close())
  for (const payload of [
    '{"controller": {}, "parent": {"metadata": {"name": "a"}}, "__proto__": {"x": 1}}',
    '{"controller": {"constructor": {"prototype": {"x": 1}}}, "parent": {"metadata": {"name": "a"}}}'
  ]) {
    const res = await app.inject({
      method: 'POST',
      url: '/hooks/isolation/customize',
      headers: { 'content-type': 'application/json' },
      payload
    })
    t.equal(res.statusCode, 400, payload)
  }
})

t.test('request ids are unique across listeners and processes', async (t) => {
  const failing = hookRoute({
    path: '/hooks/fail',
    hook: 'fail',
    surface: 'hooks',
    schema: Type.Object({}),
    handle: () => {
      throw new Error('bug')
    },
    guard: null
  })
  const one = await buildApp({ routes: [failing] })
  const two = await buildApp({ routes: [failing] })
  t.teardown(() => Promise.all([one.close(), two.close()]))
  const ids: string[] = []
  for (const app of [one, two, one, two]) {
    const res = await app.inject({ method: 'POST', url: '/hooks/fail', payload: {} })
    t.equal(res.statusCode, 500)
    ids.push(res.json<{ requestId: string }>().requestId)
  }
  t.equal(new Set(ids).size, 4, `four distinct ids: ${ids.join(', ')}`)
  const prefix = (id: string): string => id.slice(0, id.lastIndexOf('-'))
  t.equal(new Set(ids.map(prefix)).size, 1, 'one process, one prefix')
  t.equal(prefix(nextRequestId()), prefix(ids[0] as string))
  const tsx = join(process.cwd(), 'node_modules', '.bin', 'tsx')
  const other = (): string =>
    execFileSync(tsx, ['-e', "import('./hooks/server/request-id.ts').then((m) => console.log(m.nextRequestId()))"], {
      encoding: 'utf8',
      env: childEnv()
    }).trim()
  const restarted = [other(), other()]
  t.equal(new Set([prefix(ids[0] as string), ...restarted.map(prefix)]).size, 3, `another process, another prefix: ${restarted.join(', ')}`)
})
