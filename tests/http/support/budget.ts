/**
 * The service app with an in-flight budget of {@link BUDGET}, for the endings of
 * tests/http/budget.test.ts, and the checks that its budget is whole again.
 *
 * The budget's give-backs are counted by the body that gave them (the two methods are wrapped for
 * the whole test process), so a test can see that every body the server read gave back what it
 * took, exactly once, and not only that the sum came out right.
 */
import { once, EventEmitter } from 'node:events'
import type { Socket } from 'node:net'
import type { Test } from 'tap'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { buildApp, hookRoute, type Limits } from '../../../hooks/server/app.ts'
import { ArrivingBody, Budget } from '../../../hooks/server/plugins/arriving-body.ts'
import { routes } from '../../../hooks/server/routes.ts'
import { exchange, openRaw, padded, post } from './raw.ts'
import { failingRoute } from './routes.ts'

export const BUDGET = 64 * 1024
export const CUSTOMIZE = '/hooks/isolation/customize'

/** Every give-back, by the body releasing it; a give-back outside a release is a bug of its own. */
const givesOf = new Map<ArrivingBody | 'outside a release', number[]>()
/** The body whose release is running (a release gives back synchronously, and only once). */
const releasing: ArrivingBody[] = []
/** The method as the class defines it, before it is wrapped below. */
const original = <T>(prototype: object, name: string): ((this: T, ...args: number[]) => void) =>
  Object.getOwnPropertyDescriptor(prototype, name)?.value as (this: T, ...args: number[]) => void
const releaseOnce = original<ArrivingBody>(ArrivingBody.prototype, 'release')
ArrivingBody.prototype.release = function (this: ArrivingBody): void {
  releasing.push(this)
  try {
    releaseOnce.call(this)
  } finally {
    releasing.pop()
  }
}
const giveBack = original<Budget>(Budget.prototype, 'give')
Budget.prototype.give = function (this: Budget, bytes: number): void {
  const by = releasing.at(-1) ?? 'outside a release'
  givesOf.set(by, [...(givesOf.get(by) ?? []), bytes])
  giveBack.call(this, bytes)
}

/** An app with a budget of {@link BUDGET}, a route that holds its answer, and one that fails. */
export interface Served {
  app: FastifyInstance
  port: number
  /** `reading` (a body starts to be read: its url) and `held` (the hold route is handling a request). */
  events: EventEmitter
  /** Every body the server made, in order. */
  bodies: ArrivingBody[]
  /** Answers every request the hold route holds. */
  release: () => void
  /** Resolves once the server's end of every connection opened so far is closed. */
  settled: () => Promise<void>
}

export async function serve(t: Test, limits: Partial<Limits> = {}): Promise<Served> {
  const events = new EventEmitter()
  const waiting: (() => void)[] = []
  const bodies: ArrivingBody[] = []
  const hold = hookRoute({
    path: '/hooks/hold',
    hook: 'hold',
    surface: 'hooks',
    schema: Type.Object({}),
    handle: () => {
      events.emit('held')
      return new Promise((resolve) => waiting.push(() => resolve({ held: true })))
    },
    guard: null
  })
  const app = await buildApp({
    routes: [...routes, hold, failingRoute],
    bodyLimit: BUDGET,
    limits: { maxInflightBytes: BUDGET, ...limits }
  })
  // After the load plugin's own preParsing hook, which made the body.
  app.addHook('preParsing', async (request) => {
    if (request.arrivingBody !== null) bodies.push(request.arrivingBody)
    events.emit('reading', request.url)
  })
  // Listened to from the start: every other 'close' listener of a connection (the plugin's) has
  // run by the time a test awaiting one of these goes on.
  const closed: Promise<void>[] = []
  app.server.on('connection', (socket: Socket) => closed.push(new Promise((resolve) => socket.once('close', () => resolve()))))
  await app.listen({ host: '127.0.0.1', port: 0 })
  const answerAll = (): void => {
    for (const answer of waiting.splice(0)) answer()
  }
  t.teardown(async () => {
    answerAll()
    await app.close()
  })
  return {
    app,
    port: (app.server.address() as { port: number }).port,
    events,
    bodies,
    release: answerAll,
    settled: async () => {
      await Promise.all(closed)
    }
  }
}

/**
 * Once every connection so far is closed: the `read` bodies the server made each gave back the
 * bytes it received exactly once; then, on new connections, a body of the whole budget is
 * admitted (nothing is still held) and, with half the budget held, a body one byte larger than the
 * other half is refused (nothing was released twice).
 */
export async function budgetIsWhole(t: Test, served: Served, read: number): Promise<void> {
  await served.settled()
  const ledger = served.bodies.map((body) => ({ received: body.received, gives: givesOf.get(body) ?? [] }))
  t.equal(ledger.length, read, `the server made ${read} bodies`)
  t.same(
    ledger.filter(({ received, gives }) => gives.length !== 1 || gives[0] !== received),
    [],
    'each gave back what it received, exactly once'
  )
  t.notOk(givesOf.has('outside a release'), 'nothing was given back outside a release')
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
