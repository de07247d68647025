/**
 * The transport on its own, through inject, with small routes of known behaviour: the error
 * tiers, body limits, probes and metrics. The real routes are covered in routes.test.ts. Every
 * error and probe answer is checked against its schema (tests/support/answers.ts).
 */
import t, { type Test } from 'tap'
import { Type } from '@sinclair/typebox'
import { buildApp, hookRoute } from '../../hooks/server/app.ts'
import { createMetrics } from '../../hooks/server/metrics.ts'
import { answerErrors, ErrorAnswerSchema, ProbeAnswerSchema } from '../support/answers.ts'

const EchoSchema = Type.Object(
  {
    parent: Type.Object({ metadata: Type.Object({ name: Type.String() }, { additionalProperties: true }) }, { additionalProperties: true })
  },
  { additionalProperties: true }
)

const testRoutes = [
  hookRoute({
    path: '/hooks/test/echo',
    hook: 'test_echo',
    surface: 'hooks',
    schema: EchoSchema,
    handle: (body, now) => ({ name: body.parent.metadata.name, now: now.toISOString(), parent: body.parent }),
    guard: null
  }),
  hookRoute({
    path: '/hooks/test/boom',
    hook: 'test_boom',
    surface: 'hooks',
    schema: Type.Object({}, { additionalProperties: true }),
    handle: () => {
      throw new Error('secret detail of a bug')
    },
    guard: null
  }),
  hookRoute({
    path: '/admission/test',
    hook: 'admission_test',
    surface: 'admission',
    schema: Type.Object({}, { additionalProperties: true }),
    handle: () => ({ ok: true }),
    guard: null
  })
]

const fixedNow = new Date('2026-01-02T03:04:05.000Z')

/** An error answer: JSON, and only the documented fields. */
function errorAnswer(t: Test, res: { headers: Record<string, unknown>; json: () => unknown }): void {
  t.match(String(res.headers['content-type']), /^application\/json/)
  t.same(answerErrors(ErrorAnswerSchema, res.json()), [], 'a well-formed error answer')
}

async function app(options: Partial<Parameters<typeof buildApp>[0]> = {}) {
  const built = await buildApp({ routes: testRoutes, clock: () => fixedNow, ...options })
  t.teardown(() => built.close())
  return built
}

t.test('a hook answers 200 with what the pure function returned, passing the request time', async (t) => {
  const res = await (await app()).inject({ method: 'POST', url: '/hooks/test/echo', payload: { parent: { metadata: { name: 'a' } } } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { name: 'a', now: '2026-01-02T03:04:05.000Z', parent: { metadata: { name: 'a' } } })
})

t.test('unknown extra fields are ignored and objects pass back unstripped', async (t) => {
  const parent = { metadata: { name: 'a', uid: 'u', managedFields: [{ manager: 'x' }] }, spec: { z: 1 }, extra: [1, 2] }
  const res = await (
    await app()
  ).inject({
    method: 'POST',
    url: '/hooks/test/echo',
    payload: { parent, controller: { kind: 'CompositeController' }, somethingNew: true }
  })
  t.equal(res.statusCode, 200)
  t.same(res.json().parent, parent)
})

t.test('malformed JSON answers 400 with a JSON reason', async (t) => {
  const res = await (
    await app()
  ).inject({
    method: 'POST',
    url: '/hooks/test/echo',
    headers: { 'content-type': 'application/json' },
    payload: '{"parent": '
  })
  t.equal(res.statusCode, 400)
  errorAnswer(t, res)
  t.equal(res.json().error, 'Bad Request')
  t.match(res.json().message, /JSON/i)
})

t.test('a missing field answers 400 naming the field', async (t) => {
  const res = await (await app()).inject({ method: 'POST', url: '/hooks/test/echo', payload: { parent: { metadata: {} } } })
  t.equal(res.statusCode, 400)
  errorAnswer(t, res)
  t.same(res.json().fields, ['parent.metadata.name'])
  t.equal(res.json().message, 'parent.metadata.name: is required')
})

t.test('a field of the wrong type answers 400 naming the field', async (t) => {
  const res = await (await app()).inject({ method: 'POST', url: '/hooks/test/echo', payload: { parent: { metadata: { name: 7 } } } })
  t.equal(res.statusCode, 400)
  errorAnswer(t, res)
  t.same(res.json().fields, ['parent.metadata.name'])
  t.match(res.json().message, /expected string/)
})

t.test('a body over the limit answers 413, one within it is served', async (t) => {
  const limit = 64 * 1024
  const server = await app({ bodyLimit: limit })
  const pad = (size: number) => JSON.stringify({ parent: { metadata: { name: 'a' }, pad: 'x'.repeat(size) } })
  const under = pad(limit - 100)
  t.ok(Buffer.byteLength(under) <= limit)
  const ok = await server.inject({
    method: 'POST',
    url: '/hooks/test/echo',
    headers: { 'content-type': 'application/json' },
    payload: under
  })
  t.equal(ok.statusCode, 200)
  const over = await server.inject({
    method: 'POST',
    url: '/hooks/test/echo',
    headers: { 'content-type': 'application/json' },
    payload: pad(limit)
  })
  t.equal(over.statusCode, 413)
  errorAnswer(t, over)
  t.equal(over.json().error, 'Payload Too Large')
})

t.test('the default body limit takes a request near 16 MiB', async (t) => {
  const server = await app()
  const payload = JSON.stringify({ parent: { metadata: { name: 'big' }, pad: 'y'.repeat(16 * 1024 * 1024 - 200) } })
  t.ok(Buffer.byteLength(payload) > 16 * 1024 * 1024 - 300)
  const res = await server.inject({ method: 'POST', url: '/hooks/test/echo', headers: { 'content-type': 'application/json' }, payload })
  t.equal(res.statusCode, 200)
  t.equal(res.json().name, 'big')
  const over = await server.inject({
    method: 'POST',
    url: '/hooks/test/echo',
    headers: { 'content-type': 'application/json' },
    payload: payload + ' '.repeat(400)
  })
  t.equal(over.statusCode, 413)
})

t.test('a bug answers a masked 500 that names the request id, not the error', async (t) => {
  const res = await (await app()).inject({ method: 'POST', url: '/hooks/test/boom', payload: {} })
  t.equal(res.statusCode, 500)
  errorAnswer(t, res)
  const body = res.json()
  t.equal(body.error, 'Internal Server Error')
  t.notMatch(res.body, /secret detail/)
  t.type(body.requestId, 'string')
  t.match(body.message, body.requestId)
})

t.test('healthz and readyz answer 200 with a small JSON body; readyz 503 while draining', async (t) => {
  let ready = true
  const server = await app({ ready: () => ready })
  const health = await server.inject({ method: 'GET', url: '/healthz' })
  t.equal(health.statusCode, 200)
  t.same(health.json(), { status: 'ok' })
  t.same(answerErrors(ProbeAnswerSchema, health.json()), [])
  t.equal((await server.inject({ method: 'GET', url: '/readyz' })).statusCode, 200)
  ready = false
  const draining = await server.inject({ method: 'GET', url: '/readyz' })
  t.equal(draining.statusCode, 503)
  t.same(draining.json(), { status: 'draining' })
  t.same(answerErrors(ProbeAnswerSchema, draining.json()), [])
})

t.test('metrics count requests by hook and code, errors by tier, and latency', async (t) => {
  const metrics = createMetrics()
  const server = await app({ metrics })
  await server.inject({ method: 'POST', url: '/hooks/test/echo', payload: { parent: { metadata: { name: 'a' } } } })
  await server.inject({ method: 'POST', url: '/hooks/test/echo', payload: { parent: {} } })
  await server.inject({ method: 'POST', url: '/hooks/test/boom', payload: {} })
  const res = await server.inject({ method: 'GET', url: '/metrics' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /text\/plain/)
  const text = res.body
  t.match(text, /gpuhooks_hook_requests_total\{hook="test_echo",code="200"\} 1/)
  t.match(text, /gpuhooks_hook_requests_total\{hook="test_echo",code="400"\} 1/)
  t.match(text, /gpuhooks_hook_errors_total\{hook="test_echo",tier="request"\} 1/)
  t.match(text, /gpuhooks_hook_errors_total\{hook="test_boom",tier="internal"\} 1/)
  t.match(text, /gpuhooks_hook_duration_seconds_count\{hook="test_echo"\} 2/)
})

t.test('surfaces split the routes between the hook and admission listeners', async (t) => {
  const hooks = await app({ surfaces: ['hooks'] })
  t.equal((await hooks.inject({ method: 'POST', url: '/admission/test', payload: {} })).statusCode, 404)
  t.equal(
    (await hooks.inject({ method: 'POST', url: '/hooks/test/echo', payload: { parent: { metadata: { name: 'a' } } } })).statusCode,
    200
  )
  const admission = await app({ surfaces: ['admission'], serveMetrics: false })
  t.equal((await admission.inject({ method: 'POST', url: '/admission/test', payload: {} })).statusCode, 200)
  t.equal((await admission.inject({ method: 'POST', url: '/hooks/test/echo', payload: {} })).statusCode, 404)
  t.equal((await admission.inject({ method: 'GET', url: '/metrics' })).statusCode, 404)
})

t.test('hooks answer an ETag of the answer, and 304 to a request that already holds it', async (t) => {
  const server = await app()
  const payload = { parent: { metadata: { name: 'a' } } }
  const first = await server.inject({ method: 'POST', url: '/hooks/test/echo', payload })
  t.equal(first.statusCode, 200)
  const etag = first.headers.etag
  t.match(etag, /^"[A-Za-z0-9_-]{27}"$/)
  const again = await server.inject({ method: 'POST', url: '/hooks/test/echo', payload, headers: { 'if-none-match': String(etag) } })
  t.equal(again.statusCode, 304)
  t.equal(again.body, '')
  const other = await server.inject({
    method: 'POST',
    url: '/hooks/test/echo',
    payload: { parent: { metadata: { name: 'b' } } },
    headers: { 'if-none-match': String(etag) }
  })
  t.equal(other.statusCode, 200, 'a different answer is sent whole')
  t.not(other.headers.etag, etag)
  t.equal(other.json().name, 'b')
})

t.test('the ETag follows the answer, not the request: a new clock reading makes a new tag', async (t) => {
  let now = new Date('2026-01-01T00:00:00.000Z')
  const server = await app({ clock: () => now })
  const payload = { parent: { metadata: { name: 'a' } } }
  const first = await server.inject({ method: 'POST', url: '/hooks/test/echo', payload })
  now = new Date('2026-01-01T00:00:01.000Z')
  const second = await server.inject({
    method: 'POST',
    url: '/hooks/test/echo',
    payload,
    headers: { 'if-none-match': String(first.headers.etag) }
  })
  t.equal(second.statusCode, 200)
  t.not(second.headers.etag, first.headers.etag)
})

t.test('admission answers carry no ETag', async (t) => {
  const res = await (await app()).inject({ method: 'POST', url: '/admission/test', payload: {} })
  t.equal(res.statusCode, 200)
  t.equal(res.headers.etag, undefined)
})
