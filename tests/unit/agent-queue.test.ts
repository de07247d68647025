/**
 * The agent's work queue: a key waits once however often it changes, never runs twice at once,
 * a failed key comes back after a growing delay, and shutdown lets the pass in progress finish.
 */
import t from 'tap'
import { WorkQueue } from '../../hooks/agent/runtime/queue.ts'
import { FakeClock, settle } from '../support/fake-clock.ts'

/** Takes every key queued now, ending each pass at once. */
async function drainKeys(queue: WorkQueue): Promise<string[]> {
  const keys: string[] = []
  while (queue.length > 0) {
    const key = (await queue.get()) as string
    keys.push(key)
    queue.done(key)
  }
  return keys
}

t.test('a key added again while it waits is queued once, in first-come order', async (t) => {
  const queue = new WorkQueue(new FakeClock())
  for (const key of ['ns/a', 'ns/b', 'ns/a', 'ns/a', 'ns/c', 'ns/b']) queue.add(key)
  t.equal(queue.length, 3)
  t.same(await drainKeys(queue), ['ns/a', 'ns/b', 'ns/c'])
})

t.test('a key added during its pass is not handed out again until that pass is done, then once', async (t) => {
  const queue = new WorkQueue(new FakeClock())
  queue.add('ns/a')
  const key = await queue.get()
  t.equal(key, 'ns/a')
  queue.add('ns/a')
  queue.add('ns/a')
  t.equal(queue.length, 0, 'not queued while its pass runs')
  let second: string | undefined
  void queue.get().then((k) => (second = k))
  await settle()
  t.equal(second, undefined, 'nobody gets it meanwhile')
  queue.done('ns/a')
  await settle()
  t.equal(second, 'ns/a', 'queued again once the pass is done')
  queue.done('ns/a')
  t.equal(queue.length, 0)
})

t.test('a get on an empty queue waits for the next add', async (t) => {
  const queue = new WorkQueue(new FakeClock())
  let got: string | undefined
  void queue.get().then((k) => (got = k))
  await settle()
  t.equal(got, undefined)
  queue.add('ns/x')
  await settle()
  t.equal(got, 'ns/x')
})

t.test('a retried key comes back after 1 s, then 2 s, 4 s ... at most the cap; forget starts again at 1 s', async (t) => {
  const clock = new FakeClock()
  const queue = new WorkQueue(clock, { baseMs: 1000, maxMs: 5000 })
  const delays: number[] = []
  for (let i = 0; i < 5; i++) {
    delays.push(queue.retry('ns/a'))
    t.equal(queue.length, 0, 'not queued before its delay')
    await clock.advance((delays.at(-1) as number) - 1)
    t.equal(queue.length, 0, 'still not queued 1 ms before')
    await clock.advance(1)
    t.same(await drainKeys(queue), ['ns/a'], `queued after ${delays.at(-1)} ms`)
  }
  t.same(delays, [1000, 2000, 4000, 5000, 5000])
  t.equal(queue.failuresOf('ns/a'), 5)
  queue.forget('ns/a')
  t.equal(queue.failuresOf('ns/a'), 0)
  t.equal(queue.retry('ns/a'), 1000)
})

t.test('backoff is per key', async (t) => {
  const queue = new WorkQueue(new FakeClock(), { baseMs: 100, maxMs: 10_000 })
  queue.retry('ns/a')
  queue.retry('ns/a')
  t.equal(queue.retry('ns/a'), 400)
  t.equal(queue.retry('ns/b'), 100)
})

t.test('a delayed key keeps its earlier time, and a delayed key already queued is queued once', async (t) => {
  const clock = new FakeClock()
  const queue = new WorkQueue(clock)
  queue.addAfter('ns/a', 1000)
  queue.addAfter('ns/a', 5000)
  await clock.advance(1000)
  t.equal(queue.length, 1)
  t.equal(clock.pending, 0, 'the later add was not kept')
  queue.addAfter('ns/a', 10)
  await clock.advance(10)
  t.same(await drainKeys(queue), ['ns/a'])
  queue.addAfter('ns/b', 0)
  t.equal(queue.length, 1, 'no delay: queued at once')
})

t.test('shutdown: queued and delayed keys are dropped, every get answers undefined, nothing is taken after', async (t) => {
  const clock = new FakeClock()
  const queue = new WorkQueue(clock)
  let waiting: string | undefined | null = null
  void queue.get().then((k) => (waiting = k))
  queue.add('ns/a')
  await settle()
  t.equal(waiting, 'ns/a')
  queue.add('ns/b')
  queue.retry('ns/c')
  let late: string | undefined | null = null
  queue.shutDown()
  t.equal(queue.length, 0)
  t.equal(clock.pending, 0, 'the delayed retry is cancelled')
  void queue.get().then((k) => (late = k))
  await settle()
  t.equal(late, undefined)
  queue.add('ns/d')
  queue.addAfter('ns/e', 10)
  t.equal(queue.length, 0)
  t.equal(clock.pending, 0)
  queue.done('ns/a')
  t.equal(queue.length, 0, 'a key changed during its pass is not queued again after shutdown')
})

t.test('a get waiting when the queue shuts down answers undefined', async (t) => {
  const queue = new WorkQueue(new FakeClock())
  let got: string | undefined | null = null
  void queue.get().then((k) => (got = k))
  await settle()
  queue.shutDown()
  await settle()
  t.equal(got, undefined)
})

t.test('drain waits for the pass in progress, and is immediate when none runs', async (t) => {
  const queue = new WorkQueue(new FakeClock())
  let drained = false
  await queue.drain()
  queue.add('ns/a')
  const key = (await queue.get()) as string
  queue.shutDown()
  void queue.drain().then(() => (drained = true))
  await settle()
  t.equal(drained, false, 'the pass still runs')
  queue.done(key)
  await settle()
  t.equal(drained, true)
})
