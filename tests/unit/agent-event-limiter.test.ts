/**
 * The limits on the agent's Events: the same Event within the dedup window is counted on the
 * Event already written; a burst per object and then one write per refill period; and a memory
 * that stays bounded however many objects and messages pass through it.
 */
import t from 'tap'
import { DEFAULT_EVENT_LIMITS, EventLimiter, type EventKey } from '../../hooks/agent/runtime/event-limiter.ts'

const limits = { burst: 3, refillMs: 10_000, dedupMs: 60_000, maxKeys: 100 }
const ev = (message: string, objectUid = 'pool-a', reason = 'WorkloadClusterUnreachable'): EventKey => ({
  objectUid,
  type: 'Warning',
  reason,
  message
})

t.test('the same Event again within the window is counted on the one written; once the window has passed, a new one', async (t) => {
  const l = new EventLimiter({ ...limits, burst: 100 })
  t.same(l.admit(ev('m'), 0), { action: 'create' })
  l.wrote(ev('m'), 'pool-a.1', 1, 0)
  t.same(l.admit(ev('m'), 59_999), { action: 'recount', name: 'pool-a.1', count: 2 })
  l.wrote(ev('m'), 'pool-a.1', 2, 59_999)
  t.same(l.admit(ev('m'), 100_000), { action: 'recount', name: 'pool-a.1', count: 3 }, 'the window runs from the last occurrence')
  t.same(l.admit(ev('m'), 200_000), { action: 'create' }, 'past it: a new Event')
})

t.test('another message, reason or object is another Event', async (t) => {
  const l = new EventLimiter({ ...limits, burst: 100 })
  l.wrote(ev('m'), 'pool-a.1', 1, 0)
  t.same(l.admit(ev('other'), 1), { action: 'create' })
  t.same(l.admit(ev('m', 'pool-b'), 1), { action: 'create' })
  t.same(l.admit(ev('m', 'pool-a', 'NodeSwept'), 1), { action: 'create' })
})

t.test('an Event whose write was not confirmed is created again, not counted', async (t) => {
  const l = new EventLimiter({ ...limits, burst: 100 })
  t.same(l.admit(ev('m'), 0), { action: 'create' })
  t.same(l.admit(ev('m'), 1), { action: 'create' })
})

t.test('a burst per object, then one write per refill period, counts and creations alike', async (t) => {
  const l = new EventLimiter(limits)
  const results = [0, 1, 2, 3, 4].map((i) => l.admit(ev(`node ${i}`), 0).action)
  t.same(results, ['create', 'create', 'create', 'limited', 'limited'])
  t.equal(l.admit(ev('node 0', 'pool-b'), 0).action, 'create', 'another object has its own burst')
  t.equal(l.admit(ev('node 5'), 9_999).action, 'limited')
  t.equal(l.admit(ev('node 5'), 10_000).action, 'create', 'one token after a refill period')
  l.wrote(ev('node 5'), 'pool-a.5', 1, 10_000)
  t.equal(l.admit(ev('node 5'), 10_001).action, 'limited', 'a count is a write too')
  t.same(l.admit(ev('node 5'), 20_001), { action: 'recount', name: 'pool-a.5', count: 2 })
})

t.test('the memory is bounded: past maxKeys the oldest are forgotten, so a flood cannot grow it', async (t) => {
  const l = new EventLimiter({ ...limits, maxKeys: 10 })
  for (let i = 0; i < 1000; i++) {
    l.admit(ev(`node ${i}`, `pool-${i}`), i)
    l.wrote(ev(`node ${i}`, `pool-${i}`), `e${i}`, 1, i)
  }
  const state = l as unknown as { written: Map<string, unknown>; buckets: Map<string, unknown> }
  t.equal(state.written.size, 10)
  t.equal(state.buckets.size, 10)
  t.same(l.admit(ev('node 999', 'pool-999'), 1000), { action: 'recount', name: 'e999', count: 2 }, 'the newest are kept')
  t.same(l.admit(ev('node 0', 'pool-0'), 1000), { action: 'create' }, 'the oldest were forgotten')
})

t.test('the defaults: 20 writes at once per pool, then one per 30 s; counted on its Event within 10 minutes', async (t) => {
  t.same(DEFAULT_EVENT_LIMITS, { burst: 20, refillMs: 30_000, dedupMs: 600_000, maxKeys: 2000 })
  const l = new EventLimiter()
  const allowed = Array.from({ length: 25 }, (_, i) => l.admit(ev(`n${i}`), 0)).filter((a) => a.action !== 'limited')
  t.equal(allowed.length, 20)
})
