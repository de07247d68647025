import t from 'tap'
import { Campaign, LeaderElector, leaseStep, type ElectionTimings } from '../../hooks/agent/runtime/leader.ts'
import type { LeaseApi, LeaseBody } from '../../hooks/agent/model/apis.ts'
import { readAgentConfig } from '../../hooks/agent/runtime/config.ts'
import { FakeClock, settle } from '../support/fake-clock.ts'

const TIMINGS: ElectionTimings = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 }
const LEASE = { name: 'gpuhooks-workload-agent', namespace: 'gpuhooks' }

/** An in-memory Lease store with the API server's optimistic concurrency: a stale resourceVersion gets 409. */
class FakeLeases implements LeaseApi {
  stored: (LeaseBody & { metadata: { resourceVersion: string } }) | undefined
  private version = 0
  failing = false
  async get(): Promise<unknown> {
    if (this.failing) throw new Error('connection refused')
    return this.stored === undefined ? undefined : structuredClone(this.stored)
  }
  async create(lease: LeaseBody): Promise<void> {
    if (this.failing) throw new Error('connection refused')
    if (this.stored !== undefined) throw Object.assign(new Error('AlreadyExists'), { code: 409 })
    this.stored = { ...structuredClone(lease), metadata: { ...lease.metadata, resourceVersion: String(++this.version) } }
  }
  async replace(lease: LeaseBody): Promise<void> {
    if (this.failing) throw new Error('connection refused')
    if (this.stored === undefined || lease.metadata.resourceVersion !== this.stored.metadata.resourceVersion) {
      throw Object.assign(new Error('Conflict'), { code: 409 })
    }
    this.stored = { ...structuredClone(lease), metadata: { ...lease.metadata, resourceVersion: String(++this.version) } }
  }
}

t.test('leaseStep', async (t) => {
  const held = (holder: string): unknown => ({ metadata: { resourceVersion: '1' }, spec: { holderIdentity: holder, renewTime: 'r' } })
  t.same(leaseStep(undefined, 'a', 0, 0, TIMINGS), { do: 'create' })
  t.same(leaseStep(held('a'), 'a', 0, 0, TIMINGS), { do: 'renew' })
  t.same(leaseStep(held(''), 'a', 0, 0, TIMINGS), { do: 'takeover' }, 'a released Lease is taken at once')
  t.same(leaseStep(held('b'), 'a', 0, 14_999, TIMINGS), { do: 'wait', holder: 'b' })
  t.same(leaseStep(held('b'), 'a', 0, 15_000, TIMINGS), { do: 'takeover' }, 'a record unchanged for the lease duration is taken over')
})

t.test('two candidates: one leads, the other waits, then takes over when renewals stop', async (t) => {
  const leases = new FakeLeases()
  let now = 1_000_000
  const a = new LeaderElector(leases, LEASE, 'a', () => now, TIMINGS)
  const b = new LeaderElector(leases, LEASE, 'b', () => now, TIMINGS)
  t.same(await a.tick(), { step: 'create' })
  t.same(await b.tick(), { step: 'wait' })
  t.equal(a.isLeader(), true)
  t.equal(b.isLeader(), false)
  for (let i = 0; i < 20; i++) {
    now += 2_000
    t.same(await a.tick(), { step: 'renew' })
    t.same(await b.tick(), { step: 'wait' }, 'renewals keep changing the record, so b keeps waiting however long')
  }
  // a stops renewing (its Pod hangs); b sees the record unchanged for 15 s by its own clock.
  for (let i = 0; i < 7; i++) {
    now += 2_000
    t.same(await b.tick(), { step: 'wait' })
  }
  t.equal(a.isLeader(), false, 'a past its renew deadline no longer acts, before b may take over')
  now += 2_000
  t.same(await b.tick(), { step: 'takeover' })
  t.equal(b.isLeader(), true)
  t.equal(leases.stored?.spec.holderIdentity, 'b')
  t.equal(leases.stored?.spec.leaseTransitions, 1)
  t.same(await a.tick(), { step: 'wait' }, 'a, back, sees b hold the Lease and does not act')
  t.equal(a.isLeader(), false)
})

t.test('of two candidates racing for a free Lease, exactly one wins', async (t) => {
  const leases = new FakeLeases()
  await leases.create({
    metadata: { ...LEASE },
    spec: { holderIdentity: '', leaseDurationSeconds: 1, renewTime: 'x', leaseTransitions: 3 }
  })
  const a = new LeaderElector(leases, LEASE, 'a', () => 0, TIMINGS)
  const b = new LeaderElector(leases, LEASE, 'b', () => 0, TIMINGS)
  const results = await Promise.all([a.tick(), b.tick()])
  t.same(results.map((r) => r.step).sort(), ['error', 'takeover'])
  t.equal([a.isLeader(), b.isLeader()].filter(Boolean).length, 1)
})

t.test('release empties the holder, and a standby takes over at its next round', async (t) => {
  const leases = new FakeLeases()
  let now = 0
  const a = new LeaderElector(leases, LEASE, 'a', () => now, TIMINGS)
  const b = new LeaderElector(leases, LEASE, 'b', () => now, TIMINGS)
  await a.tick()
  await b.tick()
  t.equal(await a.release(), true)
  t.equal(leases.stored?.spec.holderIdentity, '')
  t.equal(a.isLeader(), false)
  now += 2_000
  t.same(await b.tick(), { step: 'takeover' })
  t.equal(await a.release(), false, 'a candidate that does not hold the Lease releases nothing')
  t.equal(leases.stored?.spec.holderIdentity, 'b')
})

t.test('an API error is reported, never thrown, and a leader that cannot renew stops acting', async (t) => {
  const leases = new FakeLeases()
  let now = 0
  const a = new LeaderElector(leases, LEASE, 'a', () => now, TIMINGS)
  await a.tick()
  leases.failing = true
  now += 9_999
  t.equal((await a.tick()).step, 'error')
  t.equal(a.isLeader(), true)
  now += 1
  t.equal(a.isLeader(), false)
})

t.test('renewTime is written as a MicroTime (six fractional digits)', async (t) => {
  const leases = new FakeLeases()
  await new LeaderElector(leases, LEASE, 'a', () => Date.parse('2026-11-30T12:00:00.123Z'), TIMINGS).tick()
  t.equal(leases.stored?.spec.renewTime, '2026-11-30T12:00:00.123000Z')
})

t.test('agent settings: defaults, and a bad value names the variable', async (t) => {
  const config = readAgentConfig({ POD_NAME: 'agent-0', POD_NAMESPACE: 'gpuhooks' })
  t.same(
    {
      port: config.port,
      resyncMs: config.resyncMs,
      lease: config.lease,
      identity: config.identity,
      windows: config.windows,
      leaderElection: config.leaderElection
    },
    {
      port: 8081,
      resyncMs: 15_000,
      lease: { namespace: 'gpuhooks', name: 'gpuhooks-workload-agent' },
      identity: 'agent-0',
      windows: { leaseMs: 90_000, heartbeatMs: 360_000, startupMs: 90_000 },
      leaderElection: true
    }
  )
  t.throws(() => readAgentConfig({ RESYNC_SECONDS: 'often' }), /RESYNC_SECONDS=often/)
  t.throws(() => readAgentConfig({ PORT: '99999' }), /PORT=99999/)
})

/** A Campaign over a FakeLeases Lease with a fake clock, recording each round and log line. */
function campaign(leases: FakeLeases, identity = 'a') {
  const clock = new FakeClock(0)
  const elector = new LeaderElector(leases, LEASE, identity, () => clock.now(), TIMINGS)
  const rounds: Array<[boolean, boolean]> = []
  const logged: string[] = []
  const loop = new Campaign(elector, {
    clock,
    retryMs: TIMINGS.retryPeriodMs,
    log: {
      info: (_o: object, message: string) => void logged.push(message),
      warn: (_o: object, message: string) => void logged.push(message)
    },
    onRound: (leading, changed) => rounds.push([leading, changed])
  })
  const running = loop.run()
  return { clock, rounds, logged, loop, running }
}

t.test('the election loop runs a round each retry period and reports leadership and its changes', async (t) => {
  const leases = new FakeLeases()
  const c = campaign(leases)
  await settle()
  t.same(c.rounds, [[true, true]], 'the first round takes the Lease')
  t.same(c.logged, ['leading: passes start'])
  await c.clock.advance(TIMINGS.retryPeriodMs - 1)
  t.equal(c.rounds.length, 1, 'no round before the retry period')
  await c.clock.advance(1)
  t.same(c.rounds, [
    [true, true],
    [true, false]
  ])
  t.equal(leases.stored?.spec.renewTime, new Date(TIMINGS.retryPeriodMs).toISOString().replace('Z', '000Z'), 'renewed')
  c.loop.stop()
  await c.running
})

t.test('the election loop: failed rounds are logged, and leadership ends at the renew deadline', async (t) => {
  const leases = new FakeLeases()
  const c = campaign(leases)
  await settle()
  leases.failing = true
  for (let s = 0; s < TIMINGS.renewDeadlineMs; s += TIMINGS.retryPeriodMs) await c.clock.advance(TIMINGS.retryPeriodMs)
  t.same(c.rounds.at(-1), [false, true], 'not leading once no renewal went through within the deadline')
  t.ok(c.logged.includes('leader election round failed'))
  t.equal(c.logged.at(-1), 'not leading: passes stop')
  leases.failing = false
  await c.clock.advance(TIMINGS.retryPeriodMs)
  t.same(c.rounds.at(-1), [true, true], 'its own Lease again at the next round')
  c.loop.stop()
  await c.running
})

t.test('a standby waits for the leader and takes over once its record stops changing', async (t) => {
  const leases = new FakeLeases()
  await new LeaderElector(leases, LEASE, 'other', () => 0, TIMINGS).tick()
  const c = campaign(leases, 'b')
  await settle()
  t.same(c.rounds, [[false, false]])
  await c.clock.advance(14_000)
  t.same(c.rounds.at(-1), [false, false], 'the record seen unchanged for 14 s of the 15 s lease duration')
  await c.clock.advance(TIMINGS.retryPeriodMs)
  t.same(c.rounds.at(-1), [true, true], 'taken over at the first round past it')
  t.equal(leases.stored?.spec.holderIdentity, 'b')
  c.loop.stop()
  await c.running
})

t.test('stop ends the election loop without waiting out its pause', async (t) => {
  const c = campaign(new FakeLeases())
  await settle()
  let ended = false
  void c.running.then(() => (ended = true))
  c.loop.stop()
  await settle()
  t.equal(ended, true)
  t.equal(c.clock.pending, 0)
})
