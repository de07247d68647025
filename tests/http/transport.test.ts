/**
 * The transport's bounds: the in-flight budget against the two attacks it must survive, on the
 * service as a real process (a malformed body with a request pipelined behind it, and bodies that
 * declare much and send little); a process under pressure answers 503 with Retry-After while the
 * probes keep answering; JSON nested past the limit is a 400 at parse time; request ids are unique
 * across listeners and processes. Every other ending of a request is in budget.test.ts.
 */
import t, { type Test } from 'tap'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import { buildApp } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import { nextRequestId } from '../../hooks/server/request-id.ts'
import { childEnv } from '../support/child-env.ts'
import { freePorts } from '../support/ports.ts'
import { exchange, openRaw, padded, post, type Raw } from './support/raw.ts'
import { failingRoute } from './support/routes.ts'
import { startService } from '../support/service.ts'

const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } }
const CUSTOMIZE = '/hooks/isolation/customize'
const MiB = 1024 * 1024

/** The service as `npm start` runs it, on a port of its own, with `env`; stopped with SIGTERM. */
async function service(t: Test, env: Record<string, string>): Promise<{ port: number; stop: () => Promise<number | null> }> {
  const [port] = (await freePorts(1)) as [number]
  const started = await startService({ PORT: String(port), LOG_LEVEL: 'info', SHUTDOWN_DELAY_SECONDS: '0', ...env }, 1)
  const stop = (): Promise<number | null> => {
    started.child.kill('SIGTERM')
    return started.exit
  }
  t.teardown(() => stop())
  return { port, stop }
}

const probe = (port: number, path: string) => exchange(port, `GET ${path} HTTP/1.1\r\nHost: gpuhooks\r\n\r\n`)

t.test('four connections each pipelining a request behind a malformed body leave the budget whole; /readyz answers', async (t) => {
  // A budget of one body limit: a body of that size is admitted only if nothing else is held.
  const { port, stop } = await service(t, { BODY_LIMIT: String(MiB), MAX_INFLIGHT_BYTES: String(MiB) })
  for (let i = 0; i < 4; i++) {
    const raw = await openRaw(port)
    // The 400 closes the connection; the request behind it, a quarter of the budget declared and
    // part of it sent, has a response node queues and never closes.
    raw.socket.write(post(CUSTOMIZE, '{bad') + post(CUSTOMIZE, padded(64 * 1024), MiB / 4 - 64))
    await raw.closed
    t.match(raw.text(), /^HTTP\/1\.1 400/)
  }
  t.equal((await exchange(port, post(CUSTOMIZE, padded(MiB)))).status, 200, 'a body of the whole budget is admitted')
  t.equal((await probe(port, '/readyz')).status, 200)
  t.equal(await stop(), 0)
})

t.test('four connections declaring a body limit each and sending a byte hold four bytes, not the budget', async (t) => {
  // The defaults (16 MiB bodies, 64 MiB in flight); no timeout cuts the slow ones off meanwhile.
  const { port, stop } = await service(t, { REQUEST_TIMEOUT_SECONDS: '3600', BODY_STALL_TIMEOUT_SECONDS: '3600' })
  const slow: Raw[] = []
  for (let i = 0; i < 4; i++) {
    const raw = await openRaw(port)
    raw.socket.write(post(CUSTOMIZE, '{', 16 * MiB))
    slow.push(raw)
  }
  const answer = await exchange(port, post(CUSTOMIZE, padded(16 * MiB)))
  t.equal(answer.status, 200, 'a body of the body limit is admitted beside them')
  t.equal((await probe(port, '/readyz')).status, 200)
  t.same(
    slow.map((raw) => raw.text()),
    ['', '', '', ''],
    'the slow ones are still being read, not refused'
  )
  for (const raw of slow) raw.socket.destroy()
  t.equal(await stop(), 0)
})

t.test('bodies that stop arriving are answered 408 after BODY_STALL_TIMEOUT_SECONDS, and their bytes are free again', async (t) => {
  const budget = 64 * 1024
  const { port, stop } = await service(t, {
    BODY_LIMIT: String(budget),
    MAX_INFLIGHT_BYTES: String(budget),
    BODY_STALL_TIMEOUT_SECONDS: '1'
  })
  const stalled = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const raw = await openRaw(port)
      raw.socket.write(post(CUSTOMIZE, padded(budget / 4).slice(0, 1024), budget / 4))
      return raw
    })
  )
  for (const raw of stalled) {
    const [answer] = await raw.responses(1)
    t.same([answer?.status, answer?.headers.connection], [408, 'close'])
    t.match(
      JSON.parse(answer?.body ?? '{}').message,
      /no byte of the body arrived for 1 s \(BODY_STALL_TIMEOUT_SECONDS\); 1024 of 16384 bytes received/
    )
    await raw.closed
  }
  t.equal((await exchange(port, post(CUSTOMIZE, padded(budget)))).status, 200, 'a body of the whole budget is admitted')
  t.equal(await stop(), 0)
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
  const one = await buildApp({ routes: [failingRoute] })
  const two = await buildApp({ routes: [failingRoute] })
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
