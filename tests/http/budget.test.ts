/**
 * The in-flight budget (`MAX_INFLIGHT_BYTES`) is whole again however a request ends: after each
 * ending below, a body of the whole budget is admitted (nothing is still held) and, with half the
 * budget held, a body one byte larger than the other half is refused (nothing was released twice).
 *
 * Every wait is on an event: the server's own hooks say when a body starts to be read and when a
 * held request is being handled, and the server's end of every connection is awaited closed
 * before the budget is checked.
 */
import t, { type Test } from 'tap'
import { once, EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import { PassThrough } from 'node:stream'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { buildApp, hookRoute, type Limits } from '../../hooks/server/app.ts'
import { ArrivingBody, Budget } from '../../hooks/server/plugins/arriving-body.ts'
import { routes } from '../../hooks/server/routes.ts'
import { exchange, openRaw, padded, post } from './support/raw.ts'
import { failingRoute } from './support/routes.ts'

const BUDGET = 64 * 1024
const CUSTOMIZE = '/hooks/isolation/customize'

/** An app with a budget of {@link BUDGET}, a route that holds its answer, and one that fails. */
interface Served {
  app: FastifyInstance
  port: number
  /** `reading` (a body starts to be read: its url) and `held` (the hold route is handling a request). */
  events: EventEmitter
  /** Answers every request the hold route holds. */
  release: () => void
  /** Resolves once the server's end of every connection opened so far is closed. */
  settled: () => Promise<void>
}

async function serve(t: Test, limits: Partial<Limits> = {}): Promise<Served> {
  const events = new EventEmitter()
  const waiting: (() => void)[] = []
  const hold = hookRoute({
    path: '/hooks/hold',
    hook: 'hold',
    surface: 'hooks',
    schema: Type.Object({}),
    handle: () => {
      events.emit('held')
      return new Promise((resolve) => waiting.push(() => resolve({ held: true })))
    }
  })
  const app = await buildApp({
    routes: [...routes, hold, failingRoute],
    bodyLimit: BUDGET,
    limits: { maxInflightBytes: BUDGET, ...limits }
  })
  app.addHook('preParsing', async (request) => void events.emit('reading', request.url))
  // Listened to from the start: every other 'close' listener of a connection (the plugin's) has
  // run by the time a test awaiting one of these goes on.
  const closed: Promise<void>[] = []
  app.server.on('connection', (socket: Socket) => closed.push(new Promise((resolve) => socket.once('close', () => resolve()))))
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => {
    for (const answer of waiting.splice(0)) answer()
    await app.close()
  })
  return {
    app,
    port: (app.server.address() as { port: number }).port,
    events,
    release: () => {
      for (const answer of waiting.splice(0)) answer()
    },
    settled: async () => {
      await Promise.all(closed)
    }
  }
}

/** The two checks of the file's header, on new connections. */
async function budgetIsWhole(t: Test, served: Served): Promise<void> {
  await served.settled()
  const whole = await exchange(served.port, post(CUSTOMIZE, padded(BUDGET)))
  if (!t.equal(whole.status, 200, 'a body of the whole budget is admitted: nothing is still held')) return
  const held = once(served.events, 'held')
  const half = await openRaw(served.port)
  half.socket.write(post('/hooks/hold', padded(BUDGET / 2)))
  const answered = await Promise.race([held.then(() => undefined), half.responses(1).then(([a]) => a?.status ?? 'nothing')])
  if (answered !== undefined) {
    t.fail(`half the budget was answered ${answered} instead of being held`)
    return
  }
  const over = await exchange(served.port, post(CUSTOMIZE, padded(BUDGET / 2 + 1)))
  t.equal(over.status, 503, 'with half the budget held, one byte more than the other half is refused: nothing was released twice')
  served.release()
  t.equal((await half.responses(1))[0]?.status, 200, 'the held request is answered')
  half.socket.destroy()
}

t.test('a body that would pass MAX_INFLIGHT_BYTES is answered 503 with Retry-After; the probes and /readyz still answer', async (t) => {
  const served = await serve(t, { retryAfterSeconds: 7 })
  const held = once(served.events, 'held')
  const holder = await openRaw(served.port)
  holder.socket.write(post('/hooks/hold', padded(BUDGET / 2)))
  await held
  const refused = await exchange(served.port, post(CUSTOMIZE, padded(BUDGET / 2 + 1)))
  t.same([refused.status, refused.headers['retry-after']], [503, '7'])
  t.same(JSON.parse(refused.body), {
    error: 'Service Unavailable',
    message: `request bodies in flight hold ${BUDGET / 2} bytes; ${BUDGET / 2 + 1} more would pass MAX_INFLIGHT_BYTES=${BUDGET}; retry later`
  })
  const chunked = await exchange(
    served.port,
    `POST ${CUSTOMIZE} HTTP/1.1\r\nHost: gpuhooks\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\n`
  )
  t.equal(chunked.status, 503, 'a body of unknown length asks to be admitted as the body limit')
  t.equal((await exchange(served.port, post(CUSTOMIZE, padded(1000)))).status, 200, 'a body that fits is served meanwhile')
  const probe = (path: string) => exchange(served.port, `GET ${path} HTTP/1.1\r\nHost: gpuhooks\r\n\r\n`)
  t.same([(await probe('/healthz')).status, (await probe('/readyz')).status], [200, 200], 'a busy process is neither dead nor unready')
  served.release()
  t.equal((await holder.responses(1))[0]?.status, 200)
  holder.socket.destroy()
  t.match((await probe('/metrics')).body, /gpuhooks_hook_errors_total\{hook="isolation_customize",tier="overload"\} 2/)
  await budgetIsWhole(t, served)
})

t.test('a completed request', async (t) => {
  const served = await serve(t)
  t.equal((await exchange(served.port, post(CUSTOMIZE, padded(1000)))).status, 200)
  await budgetIsWhole(t, served)
})

t.test('a hook that fails (500)', async (t) => {
  const served = await serve(t)
  t.equal((await exchange(served.port, post('/hooks/fail', padded(1000)))).status, 500)
  await budgetIsWhole(t, served)
})

t.test('a body that is not JSON (400, connection closed)', async (t) => {
  const served = await serve(t)
  const answer = await exchange(served.port, post(CUSTOMIZE, `{bad${' '.repeat(1000)}`))
  t.same([answer.status, answer.headers.connection], [400, 'close'])
  await budgetIsWhole(t, served)
})

t.test('JSON nested past JSON_MAX_DEPTH (400)', async (t) => {
  const served = await serve(t, { maxJsonDepth: 40 })
  t.equal((await exchange(served.port, post(CUSTOMIZE, `${'['.repeat(50)}${']'.repeat(50)}`))).status, 400)
  await budgetIsWhole(t, served)
})

t.test('a body declared past BODY_LIMIT (413 before it is read)', async (t) => {
  const served = await serve(t)
  const answer = await exchange(served.port, post(CUSTOMIZE, '{"controller"', BUDGET + 1))
  t.equal(answer.status, 413, 'too large, not "retry later": a retry could never succeed')
  await budgetIsWhole(t, served)
})

t.test('a chunked body that grows past BODY_LIMIT (413 while it arrives)', async (t) => {
  const served = await serve(t)
  const raw = await openRaw(served.port)
  const chunk = ' '.repeat(BUDGET + 10)
  raw.socket.write(
    `POST ${CUSTOMIZE} HTTP/1.1\r\nHost: gpuhooks\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n`
  )
  t.equal((await raw.responses(1))[0]?.status, 413)
  raw.socket.destroy()
  await budgetIsWhole(t, served)
})

t.test('a client that drops the connection mid-body', async (t) => {
  const served = await serve(t)
  const raw = await openRaw(served.port)
  const reading = once(served.events, 'reading')
  // The bytes written with the headers are read in the same turn of the server's event loop that
  // runs its hooks; the drop reaches it in a later one.
  raw.socket.write(post(CUSTOMIZE, padded(BUDGET / 2), BUDGET / 2 + 10))
  await reading
  raw.socket.destroy()
  await budgetIsWhole(t, served)
})

t.test('a client that drops the connection while its request is handled', async (t) => {
  const served = await serve(t)
  const raw = await openRaw(served.port)
  const held = once(served.events, 'held')
  raw.socket.write(post('/hooks/hold', padded(BUDGET / 2)))
  await held
  raw.socket.destroy()
  await served.settled()
  served.release()
  await budgetIsWhole(t, served)
})

t.test('a request pipelined behind a body that is not JSON', async (t) => {
  const served = await serve(t)
  const raw = await openRaw(served.port)
  // The 400 closes the connection (the client may be sending more): the pipelined request's
  // response is queued behind it and never gets a socket.
  raw.socket.write(post(CUSTOMIZE, '{bad') + post(CUSTOMIZE, padded(BUDGET / 4), BUDGET / 2))
  const answers = await raw.responses(2)
  t.same(
    answers.map((a) => a.status),
    [400],
    'the malformed one is answered; the connection closes before the next'
  )
  await raw.closed
  await budgetIsWhole(t, served)
})

t.test('four connections, each pipelining a quarter of the budget behind a body that is not JSON', async (t) => {
  const served = await serve(t)
  for (let i = 0; i < 4; i++) {
    const raw = await openRaw(served.port)
    // A quarter less the malformed body's own bytes, which are held when the next one asks.
    raw.socket.write(post(CUSTOMIZE, '{bad') + post(CUSTOMIZE, padded(BUDGET / 8), BUDGET / 4 - 4))
    t.same(
      (await raw.responses(2)).map((a) => a.status),
      [400]
    )
  }
  await budgetIsWhole(t, served)
})

t.test('a request pipelined behind a held one, then the connection drops', async (t) => {
  const served = await serve(t)
  const raw = await openRaw(served.port)
  const held = once(served.events, 'held')
  const secondReading = new Promise<void>((resolve) =>
    served.events.on('reading', (url: string) => (url === CUSTOMIZE ? resolve() : undefined))
  )
  raw.socket.write(post('/hooks/hold', padded(1000)) + post(CUSTOMIZE, padded(BUDGET / 4), BUDGET / 2))
  await Promise.all([held, secondReading])
  raw.socket.destroy()
  await served.settled()
  served.release()
  await budgetIsWhole(t, served)
})

t.test('a body not received within REQUEST_TIMEOUT_SECONDS (408, connection closed)', async (t) => {
  const served = await serve(t, { requestTimeoutMs: 1000, headersTimeoutMs: 1000, bodyStallTimeoutMs: 3_600_000 })
  const raw = await openRaw(served.port)
  raw.socket.write(post(CUSTOMIZE, padded(BUDGET / 2), BUDGET / 2 + 10))
  const [answer] = await raw.responses(1)
  t.equal(answer?.status, 408)
  await raw.closed
  await budgetIsWhole(t, served)
})

t.test('a stalled body: no byte for BODY_STALL_TIMEOUT_SECONDS (408, connection closed)', async (t) => {
  const served = await serve(t, { bodyStallTimeoutMs: 1000 })
  const raw = await openRaw(served.port)
  raw.socket.write(post(CUSTOMIZE, padded(BUDGET / 2), BUDGET / 2 + 10))
  const [answer] = await raw.responses(1)
  t.same([answer?.status, answer?.headers.connection], [408, 'close'])
  t.match(JSON.parse(answer?.body ?? '{}'), {
    error: 'Request Timeout',
    message: `no byte of the body arrived for 1 s (BODY_STALL_TIMEOUT_SECONDS); ${BUDGET / 2} of ${BUDGET / 2 + 10} bytes received`
  })
  await raw.closed
  await budgetIsWhole(t, served)
})

t.test('a server busier than BODY_STALL_TIMEOUT_SECONDS does not take a waiting body for a stalled one', async (t) => {
  const served = await serve(t, { bodyStallTimeoutMs: 1000 })
  const raw = await openRaw(served.port)
  const body = padded(1000)
  const reading = once(served.events, 'reading')
  raw.socket.write(post(CUSTOMIZE, body).slice(0, -500))
  await reading
  // The rest is in the kernel's buffer before the event loop is blocked past the stall timeout:
  // when it runs again, timers come before reads, so the stall timer fires first and must not
  // win against the bytes that are waiting.
  raw.socket.write(body.slice(-500))
  const until = Date.now() + 1500
  while (Date.now() < until);
  t.equal((await raw.responses(1))[0]?.status, 200)
  raw.socket.destroy()
  await budgetIsWhole(t, served)
})

t.test('a refusal before the body is read (503): the connection goes on', async (t) => {
  const served = await serve(t)
  const held = once(served.events, 'held')
  const holder = await openRaw(served.port)
  holder.socket.write(post('/hooks/hold', padded(BUDGET / 2)))
  await held
  const raw = await openRaw(served.port)
  raw.socket.write(post(CUSTOMIZE, padded(BUDGET / 2 + 1)))
  const [refused] = await raw.responses(1)
  t.same([refused?.status, refused?.headers['retry-after']], [503, '5'])
  raw.socket.write(post(CUSTOMIZE, padded(1000)))
  t.equal((await raw.responses(2))[1]?.status, 200, 'the refused body was discarded; the next request on that connection is served')
  raw.socket.destroy()
  served.release()
  await holder.responses(1)
  holder.socket.destroy()
  await budgetIsWhole(t, served)
})

t.test('a refusal while the body arrives (503): the connection goes on', async (t) => {
  const served = await serve(t)
  const size = 40 * 1024
  const slow = await openRaw(served.port)
  const reading = once(served.events, 'reading')
  const body = padded(size)
  slow.socket.write(post(CUSTOMIZE, body).slice(0, -(size - 1)))
  await reading
  const held = once(served.events, 'held')
  const holder = await openRaw(served.port)
  holder.socket.write(post('/hooks/hold', padded(size)))
  await held
  slow.socket.write(body.slice(1))
  const [refused] = await slow.responses(1)
  t.same([refused?.status, refused?.headers['retry-after'], refused?.headers.connection], [503, '5', 'keep-alive'])
  t.match(JSON.parse(refused?.body ?? '{}').message, /MAX_INFLIGHT_BYTES/)
  slow.socket.write(post(CUSTOMIZE, padded(1000)))
  t.equal((await slow.responses(2))[1]?.status, 200, 'the rest of the refused body was discarded; the connection serves the next request')
  slow.socket.destroy()
  served.release()
  t.equal((await holder.responses(1))[0]?.status, 200)
  holder.socket.destroy()
  await budgetIsWhole(t, served)
})

t.test('slow bodies hold only the bytes that arrived', async (t) => {
  const served = await serve(t)
  const slow = []
  for (let i = 0; i < 4; i++) {
    const raw = await openRaw(served.port)
    const reading = once(served.events, 'reading')
    raw.socket.write(post(CUSTOMIZE, '{', BUDGET / 4))
    await reading
    slow.push(raw)
  }
  const answer = await exchange(served.port, post(CUSTOMIZE, padded(BUDGET / 2)))
  t.equal(answer.status, 200, 'four bodies declaring a quarter of the budget each, one byte each so far, leave room for another')
  t.same(
    slow.map((raw) => raw.text()),
    ['', '', '', ''],
    'the slow ones are still being read'
  )
  for (const raw of slow) raw.socket.destroy()
  await budgetIsWhole(t, served)
})

t.test('the body stream on its own, fed by a stream that is not a socket', async (t) => {
  const options = (budget: Budget) => ({
    budget,
    stallTimeoutMs: 3_600_000,
    overBudget: () => new Error('over budget'),
    stalled: () => new Error('stalled')
  })
  t.test('a source that fails mid-body ends the body with its error; release gives the bytes back once', async (t) => {
    const budget = new Budget(BUDGET)
    const source = new PassThrough()
    const body = new ArrivingBody(source, options(budget))
    const failed = once(body, 'error')
    body.resume()
    source.write(Buffer.alloc(100))
    await once(body, 'data')
    t.equal(budget.held, 100)
    source.destroy(new Error('reset'))
    t.match((await failed)[0], { message: 'reset' })
    body.release()
    body.release()
    t.equal(budget.held, 0, 'given back once')
  })
  t.test('a source that closes before its end ends the body with an error', async (t) => {
    const source = new PassThrough()
    const body = new ArrivingBody(source, options(new Budget(BUDGET)))
    const failed = once(body, 'error')
    body.resume()
    source.write('{')
    await once(body, 'data')
    source.emit('close')
    t.match((await failed)[0], { message: 'the connection closed before the body was received' })
  })
  t.test('an ending nobody listens to any more does not throw', async (t) => {
    const source = new PassThrough()
    const budget = new Budget(10)
    budget.held = 5 // another body's
    const body = new ArrivingBody(source, options(budget))
    body.on('data', () => undefined)
    // Not events.once, which listens for 'error' too.
    const closed = new Promise((resolve) => body.once('close', resolve))
    source.write(Buffer.alloc(6))
    await closed
    t.equal(body.refused, true, 'refused for the budget, with no error listener to tell')
  })
})
