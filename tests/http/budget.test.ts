/**
 * The in-flight budget (`MAX_INFLIGHT_BYTES`) is whole again however a request ends: after each
 * ending below, every body the server made gave back what it received exactly once, a body of the
 * whole budget is admitted (nothing is still held) and, with half the budget held, a body one byte
 * larger than the other half is refused (nothing was released twice). The body stream on its own
 * is in tests/unit/arriving-body.test.ts.
 *
 * Every wait is on an event: the server's own hooks say when a body starts to be read and when a
 * held request is being handled, and the server's end of every connection is awaited closed
 * before the budget is checked.
 */
import t from 'tap'
import type { Limits } from '../../hooks/server/app.ts'
import { once } from 'node:events'
import { BUDGET, CUSTOMIZE, budgetIsWhole, serve } from './support/budget.ts'
import { exchange, openRaw, padded, post } from './support/raw.ts'

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
  await budgetIsWhole(t, served, 2)
})

/** Endings of one request on a connection of its own: its answer, and the bodies the server made. */
const single: { name: string; limits?: Partial<Limits>; request: string; status: number; connection?: string; bodies: number }[] = [
  { name: 'a completed request', request: post(CUSTOMIZE, padded(1000)), status: 200, bodies: 1 },
  { name: 'a hook that fails (500)', request: post('/hooks/fail', padded(1000)), status: 500, bodies: 1 },
  {
    name: 'a body that is not JSON (400, connection closed)',
    request: post(CUSTOMIZE, `{bad${' '.repeat(1000)}`),
    status: 400,
    connection: 'close',
    bodies: 1
  },
  {
    name: 'JSON nested past JSON_MAX_DEPTH (400)',
    limits: { maxJsonDepth: 40 },
    request: post(CUSTOMIZE, `${'['.repeat(50)}${']'.repeat(50)}`),
    status: 400,
    bodies: 1
  },
  {
    // Too large, not "retry later": a retry could never succeed.
    name: 'a body declared past BODY_LIMIT (413 before it is read)',
    request: post(CUSTOMIZE, '{"controller"', BUDGET + 1),
    status: 413,
    bodies: 1
  },
  {
    name: 'a body of a media type the JSON parser does not take (400, body unread)',
    request: post(CUSTOMIZE, padded(1000)).replace('application/json', 'text/plain'),
    status: 400,
    bodies: 1
  },
  { name: 'a body sent to a path no route serves (404)', request: post('/hooks/nothing-here', padded(1000)), status: 404, bodies: 1 }
]

for (const ending of single) {
  t.test(ending.name, async (t) => {
    const served = await serve(t, ending.limits)
    const answer = await exchange(served.port, ending.request)
    t.equal(answer.status, ending.status)
    if (ending.connection !== undefined) t.equal(answer.headers.connection, ending.connection)
    await budgetIsWhole(t, served, ending.bodies)
  })
}

t.test('a chunked body that grows past BODY_LIMIT (413 while it arrives)', async (t) => {
  const served = await serve(t)
  const raw = await openRaw(served.port)
  const chunk = ' '.repeat(BUDGET + 10)
  raw.socket.write(
    `POST ${CUSTOMIZE} HTTP/1.1\r\nHost: gpuhooks\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n`
  )
  t.equal((await raw.responses(1))[0]?.status, 413)
  raw.socket.destroy()
  await budgetIsWhole(t, served, 1)
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
  await budgetIsWhole(t, served, 1)
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
  await budgetIsWhole(t, served, 1)
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
  await budgetIsWhole(t, served, 2)
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
  await budgetIsWhole(t, served, 8)
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
  await budgetIsWhole(t, served, 2)
})

t.test('a body not received within REQUEST_TIMEOUT_SECONDS (408, connection closed)', async (t) => {
  const served = await serve(t, { requestTimeoutMs: 1000, headersTimeoutMs: 1000, bodyStallTimeoutMs: 3_600_000 })
  const raw = await openRaw(served.port)
  raw.socket.write(post(CUSTOMIZE, padded(BUDGET / 2), BUDGET / 2 + 10))
  const [answer] = await raw.responses(1)
  t.equal(answer?.status, 408)
  await raw.closed
  await budgetIsWhole(t, served, 1)
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
  await budgetIsWhole(t, served, 1)
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
  await budgetIsWhole(t, served, 1)
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
  await budgetIsWhole(t, served, 2)
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
  await budgetIsWhole(t, served, 3)
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
  await budgetIsWhole(t, served, 5)
})

t.test('a request pipelined behind one that asks to close the connection', async (t) => {
  const served = await serve(t)
  const raw = await openRaw(served.port)
  const closing = post(CUSTOMIZE, padded(1000)).replace('Host: gpuhooks\r\n', 'Host: gpuhooks\r\nConnection: close\r\n')
  raw.socket.write(closing + post(CUSTOMIZE, padded(BUDGET / 4), BUDGET / 2))
  // Node takes nothing after a `Connection: close` request: data after it is a client error of
  // the connection (400, closed), answered before or instead of the first request's own answer.
  t.equal((await raw.responses(2)).length, 1, 'one answer, then the connection closes')
  await raw.closed
  await budgetIsWhole(t, served, 1)
})
