/**
 * The body stream on its own, fed by a stream that is not a socket: how each ending of its source
 * ends the body, and, for any interleaving of arrivals and endings across bodies sharing one
 * budget, that a byte is counted when it arrives and given back exactly once.
 */
import t from 'tap'
import { once, EventEmitter } from 'node:events'
import { PassThrough, type Readable } from 'node:stream'
import fc from 'fast-check'
import { ArrivingBody, Budget, type ArrivingBodyOptions } from '../../hooks/server/plugins/arriving-body.ts'

const options = (budget: Budget, stallTimeoutMs = 3_600_000): ArrivingBodyOptions => ({
  budget,
  stallTimeoutMs,
  overBudget: (more) => new Error(`over budget by ${more}`),
  stalled: (received) => new Error(`stalled at ${received}`)
})

/** A budget that records every give-back. */
class CountingBudget extends Budget {
  readonly gives: number[] = []
  override give(bytes: number): void {
    this.gives.push(bytes)
    super.give(bytes)
  }
}

/** Lets the body start reading its source (it starts when first read, on a later tick). */
const started = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

t.test('a source that fails mid-body ends the body with its error; release gives the bytes back once', async (t) => {
  const budget = new CountingBudget(1024)
  const source = new PassThrough()
  const body = new ArrivingBody(source, options(budget))
  const failed = once(body, 'error')
  body.resume()
  source.write(Buffer.alloc(100))
  await once(body, 'data')
  t.equal(budget.held, 100, 'counted as it arrived')
  source.destroy(new Error('reset'))
  t.match((await failed)[0], { message: 'reset' })
  t.equal(budget.held, 100, 'still held until the request is over')
  body.release()
  body.release()
  t.same([budget.held, budget.gives], [0, [100]], 'given back once')
  source.emit('data', Buffer.alloc(5))
  t.equal(budget.held, 0, 'nothing is counted after the source failed')
})

t.test('a source that closes before its end ends the body with an error', async (t) => {
  const budget = new CountingBudget(1024)
  const source = new PassThrough()
  const body = new ArrivingBody(source, options(budget))
  const failed = once(body, 'error')
  body.resume()
  source.write('{')
  await once(body, 'data')
  source.emit('close')
  t.match((await failed)[0], { message: 'the connection closed before the body was received' })
  body.release()
  t.same([budget.held, budget.gives], [0, [1]])
})

t.test('a source that closes after its end ends the body normally', async (t) => {
  const budget = new CountingBudget(1024)
  const source = new PassThrough()
  const body = new ArrivingBody(source, options(budget))
  const chunks: Buffer[] = []
  body.on('data', (c: Buffer) => chunks.push(c))
  body.on('error', () => t.fail('no error after the end'))
  source.end('{}')
  await once(body, 'end')
  source.emit('close')
  await started()
  t.equal(Buffer.concat(chunks).toString(), '{}')
  body.release()
  t.same([budget.held, budget.gives], [0, [2]])
})

t.test('a source with no byte for the stall timeout ends the body with the stall answer', async (t) => {
  const budget = new CountingBudget(1024)
  const source = new PassThrough()
  const body = new ArrivingBody(source, options(budget, 20))
  // The stall timer does not keep a process alive on its own (a server's sockets do).
  const alive = setInterval(() => undefined, 1000)
  t.teardown(() => clearInterval(alive))
  const failed = once(body, 'error')
  body.resume()
  source.write('{"a"')
  t.match((await failed)[0], { message: 'stalled at 4' })
  body.release()
  t.same([budget.held, budget.gives], [0, [4]])
})

t.test('a body released before it was read holds nothing and leaves its source alone', async (t) => {
  const budget = new CountingBudget(1024)
  const source = new PassThrough()
  const body = new ArrivingBody(source, options(budget))
  body.release()
  t.same([budget.held, budget.gives, source.listenerCount('data')], [0, [0], 0])
})

t.test('an ending nobody listens to any more does not throw', async (t) => {
  const source = new PassThrough()
  const budget = new Budget(10)
  budget.take(5) // another body's
  const body = new ArrivingBody(source, options(budget))
  body.on('data', () => undefined)
  // Not events.once, which listens for 'error' too.
  const closed = new Promise((resolve) => body.once('close', resolve))
  source.write(Buffer.alloc(6))
  await closed
  t.equal(body.refused, true, 'refused for the budget, with no error listener to tell')
  t.equal(budget.held, 5, 'the refused chunk was never counted')
})

/** What a source can do next, or what the plugin does to a body. */
type Step = { body: number; kind: 'data'; size: number } | { body: number; kind: 'end' | 'error' | 'close' | 'destroy' | 'release' }

const BODIES = 4
const MAX = 100
const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({ body: fc.nat(BODIES - 1), kind: fc.constant('data' as const), size: fc.integer({ min: 1, max: 60 }) })
  },
  {
    weight: 3,
    arbitrary: fc.record({
      body: fc.nat(BODIES - 1),
      kind: fc.constantFrom('end' as const, 'error' as const, 'close' as const, 'destroy' as const, 'release' as const)
    })
  }
)

t.test('any interleaving: bytes are counted as they arrive, refused past the budget, and given back exactly once', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(step, { maxLength: 40 }),
      fc.array(fc.boolean(), { minLength: BODIES, maxLength: BODIES }),
      async (steps, listening) => {
        const budget = new CountingBudget(MAX)
        // A source whose events the property fires itself, one at a time. Like a request, it emits
        // an error to nobody without throwing (node's IncomingMessage emits one only to listeners).
        const sources = Array.from({ length: BODIES }, () =>
          Object.assign(new EventEmitter(), { pause: () => undefined, resume: () => undefined }).on('error', () => undefined)
        )
        const bodies = sources.map((source) => new ArrivingBody(source as unknown as Readable, options(budget)))
        bodies.forEach((body, i) => {
          body.on('data', () => undefined)
          // The parser listens for errors until it has answered; a body nobody listens to must not throw.
          if (listening[i] === true) body.on('error', () => undefined)
        })
        await started()
        const model = bodies.map(() => ({ received: 0, stopped: false, released: false, gives: 0 }))
        for (const s of steps) {
          const body = bodies[s.body] as ArrivingBody
          const source = sources[s.body] as EventEmitter
          const m = model[s.body] as (typeof model)[number]
          const givesBefore = budget.gives.length
          if (s.kind === 'data') {
            const heldByOthers = budget.held - m.received
            const admitted = !m.stopped && (heldByOthers <= 0 || budget.held + s.size <= MAX)
            source.emit('data', Buffer.alloc(s.size))
            if (admitted) m.received += s.size
            else m.stopped = true
          } else if (s.kind === 'end') {
            source.emit('end')
            m.stopped = true
          } else if (s.kind === 'error') {
            source.emit('error', new Error('reset'))
            m.stopped = true
          } else if (s.kind === 'close') {
            source.emit('close')
            m.stopped = true
          } else if (s.kind === 'destroy') {
            body.destroy()
            m.stopped = true
          } else {
            body.release()
            if (!m.released) {
              if (budget.gives.length !== givesBefore + 1 || budget.gives.at(-1) !== m.received) return false
              m.gives++
            }
            m.released = true
            m.stopped = true
            m.received = 0
          }
          if (s.kind !== 'release' && budget.gives.length !== givesBefore) return false
          if (model.some((mm, i) => mm.received !== bodies[i]?.bytes)) return false
          const expected = model.reduce((sum, mm) => sum + mm.received, 0)
          if (budget.held !== expected || budget.held < 0) return false
          // Past the budget only while a single body holds bytes.
          if (budget.held > MAX && model.filter((mm) => mm.received > 0).length > 1) return false
        }
        for (const body of bodies) {
          body.release()
          body.release()
        }
        const releases = model.filter((m) => !m.released).length + model.reduce((sum, m) => sum + m.gives, 0)
        return budget.held === 0 && budget.gives.length === releases && releases === BODIES
      }
    ),
    { numRuns: 300 }
  )
})
