import t from 'tap'
import { HeartbeatTracker, isLive } from '../../hooks/agent/nodeset/decide/liveness.ts'
import type { NodeHeartbeats } from '../../hooks/agent/model/observed.ts'

const S = 1000
const MIN = 60 * S
/** The agent started at this time on its own clock. */
const T0 = 1_000_000_000

const cases: Array<{ name: string; given: { beats: NodeHeartbeats; now: number }; expected: boolean }> = [
  {
    name: 'a Lease renewed (seen changing) 89 s ago is live',
    given: { beats: { watchedSince: T0, lease: { value: 'r1', changedAt: T0 + 10 * MIN } }, now: T0 + 10 * MIN + 89 * S },
    expected: true
  },
  {
    name: 'a Lease seen unchanged for 90 s is not live',
    given: { beats: { watchedSince: T0, lease: { value: 'r1', changedAt: T0 + 10 * MIN } }, now: T0 + 10 * MIN + 90 * S },
    expected: false
  },
  {
    name: 'a stale Lease wins over a fresh Ready heartbeat: the Lease is read first',
    given: {
      beats: { watchedSince: T0, lease: { value: 'r1', changedAt: T0 }, heartbeat: { value: 'h', changedAt: T0 + 10 * MIN } },
      now: T0 + 10 * MIN
    },
    expected: false
  },
  {
    name: 'without a Lease, a heartbeat seen unchanged for 5 min 59 s is live',
    given: { beats: { watchedSince: T0, heartbeat: { value: 'h', changedAt: T0 } }, now: T0 + 6 * MIN - S },
    expected: true
  },
  {
    name: 'without a Lease, a heartbeat seen unchanged for 6 min is not live',
    given: { beats: { watchedSince: T0, heartbeat: { value: 'h', changedAt: T0 } }, now: T0 + 6 * MIN },
    expected: false
  },
  {
    name: 'a Node with neither Lease nor heartbeat is live',
    given: { beats: { watchedSince: T0 }, now: T0 + 60 * MIN },
    expected: true
  },
  {
    name: 'a restarted agent deletes nothing in its first 90 s: a Node watched 89 s is live whatever its Lease',
    given: { beats: { watchedSince: T0, lease: { value: 'r1', changedAt: T0 - 60 * MIN } }, now: T0 + 89 * S },
    expected: true
  }
]

for (const c of cases) {
  t.test(c.name, async (t) => {
    t.equal(isLive(c.given.beats, c.given.now), c.expected)
  })
}

t.test('a kubelet clock years off still counts as live while its renewTime keeps changing', async (t) => {
  const tracker = new HeartbeatTracker()
  // The kubelet writes times from 2001: only that the value changes matters.
  let now = T0
  for (let i = 0; i < 30; i++) {
    const beats = tracker.observe('cell-0', `2001-01-01T00:00:${String(i).padStart(2, '0')}.000000Z`, undefined, now)
    t.equal(isLive(beats, now), true, `pass ${i}`)
    now += 15 * S
  }
})

t.test('a kubelet clock far ahead does not make a dead Node live: an unchanged renewTime ages by the agent clock', async (t) => {
  const tracker = new HeartbeatTracker()
  const future = '2099-01-01T00:00:00.000000Z'
  tracker.observe('cell-0', future, undefined, T0)
  t.equal(isLive(tracker.observe('cell-0', future, undefined, T0 + 89 * S), T0 + 89 * S), true)
  t.equal(isLive(tracker.observe('cell-0', future, undefined, T0 + 91 * S), T0 + 91 * S), false)
})

t.test('a restarted agent sees an old renewTime for the first time as a change: 90 s grace', async (t) => {
  const tracker = new HeartbeatTracker()
  const old = '2026-01-01T00:00:00Z'
  t.equal(isLive(tracker.observe('cell-0', old, undefined, T0), T0), true)
  t.equal(isLive(tracker.observe('cell-0', old, undefined, T0 + 60 * S), T0 + 60 * S), true)
  t.equal(isLive(tracker.observe('cell-0', old, undefined, T0 + 90 * S), T0 + 90 * S), false)
})

t.test('a Lease that becomes unreadable falls back to the heartbeat, seen changing by the agent', async (t) => {
  const tracker = new HeartbeatTracker()
  tracker.observe('cell-0', 'r1', 'h1', T0)
  let beats = tracker.observe('cell-0', undefined, 'h1', T0 + 15 * S)
  t.equal(beats.lease, undefined)
  t.same(beats.heartbeat, { value: 'h1', changedAt: T0 })
  let now = T0 + 15 * S
  while (now < T0 + 6 * MIN - 15 * S) beats = tracker.observe('cell-0', undefined, 'h1', (now += 15 * S))
  t.equal(isLive(beats, now), true, 'a heartbeat unchanged for less than 6 min')
  t.equal(isLive(tracker.observe('cell-0', undefined, 'h1', T0 + 6 * MIN), T0 + 6 * MIN), false)
})

t.test('a Node forgotten by retain() is watched afresh when it comes back', async (t) => {
  const tracker = new HeartbeatTracker()
  tracker.observe('cell-0', 'r1', undefined, T0)
  tracker.retain(new Set())
  const beats = tracker.observe('cell-0', 'r1', undefined, T0 + 10 * MIN)
  t.same(beats, { watchedSince: T0 + 10 * MIN, lease: { value: 'r1', changedAt: T0 + 10 * MIN } })
})

t.test('a Node not observed for longer than the gap (a standby leading again) is watched afresh', async (t) => {
  const tracker = new HeartbeatTracker(90_000)
  tracker.observe('cell-0', 'r1', undefined, T0)
  const beats = tracker.observe('cell-0', 'r1', undefined, T0 + 60 * MIN)
  t.same(beats, { watchedSince: T0 + 60 * MIN, lease: { value: 'r1', changedAt: T0 + 60 * MIN } })
  t.equal(isLive(beats, T0 + 60 * MIN), true)
})

t.test('observations within the gap keep the first sighting', async (t) => {
  const tracker = new HeartbeatTracker(90_000)
  let now = T0
  tracker.observe('cell-0', 'r1', undefined, now)
  for (let i = 0; i < 10; i++) tracker.observe('cell-0', 'r1', undefined, (now += 15 * S))
  t.equal(isLive(tracker.observe('cell-0', 'r1', undefined, (now += 15 * S)), now), false)
})
