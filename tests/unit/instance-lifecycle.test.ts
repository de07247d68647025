/**
 * The lifecycle decision (hooks/instance/lifecycle.ts, docs/lifecycle.md): idle stop with notice,
 * maximum run time, missing data, restarts, postponing, and the record kept in the
 * InstanceActivity's spec.
 */
import t from 'tap'
import { decideLifecycle } from '../../hooks/instance/lifecycle.ts'
import { lifecycleProblems, parseRfc3339, parseStoppedBy } from '../../hooks/instance/lifecycle-policy.ts'
import { POD, START, activity, activityStatus, after, input, iso, play, specOf } from './fixtures/lifecycle.ts'

const IDLE = { idleStopAfter: '2h', stopNotice: '15m' }
const KEEP = 'gpustack.ai/keep-running-until'

t.test('an idle Instance: NotDue, then the notice with the kubectl command, then the stop at stopAt', async (t) => {
  const status = (now: number) => activityStatus({ observed: now - 30_000 })
  const [early, notice, due] = play(IDLE, [
    { now: after(60), status: status(after(60)) },
    { now: after(105), status: status(after(105)) },
    { now: after(120), status: status(after(120)) }
  ])
  t.equal(early?.condition.status, 'False')
  t.equal(early?.condition.reason, 'NotDue')
  t.strictSame(early?.status, { idleSince: iso(START), stopAt: iso(after(120)), stopReason: 'Idle' })
  t.equal(early?.resyncAfterSeconds, 150 + 1, 'the next boundary: the observation (30s old) turns stale past three rounds')
  t.equal(specOf(early!).stop, undefined)

  t.equal(notice?.condition.status, 'True')
  t.equal(notice?.condition.reason, 'Idle')
  t.equal(
    notice?.condition.message,
    `No GPU activity since ${iso(START)}; stops at ${iso(after(120))} unless used or postponed (at most 8h): ` +
      `kubectl annotate instance ws -n team-a --overwrite ${KEEP}=${iso(after(105 + 480))}.`
  )
  t.equal(specOf(notice!).noticeTime, iso(after(105)))
  t.equal(specOf(notice!).stop, undefined)

  t.strictSame(specOf(due!).stop, { requested: true, reason: 'Idle', at: iso(after(120)) })
  t.strictSame(due?.status, { idleSince: iso(START), stopAt: iso(after(120)), stopReason: 'Idle', stopRequested: true })
  t.equal(due?.resyncAfterSeconds, undefined)
  t.match(due?.condition.message, /kubectl patch instance ws -n team-a --type merge -p '\{"spec":\{"stop":false\}\}'/)
})

t.test('missing data never stops: no status, stale, Observed False, another Pod, junk', async (t) => {
  const late = after(600)
  const cases: Array<[string, unknown]> = [
    ['no status', undefined],
    ['stale', activityStatus({ observed: late - 181_000 })],
    ['Observed False', activityStatus({ observed: late, condition: 'False', reason: 'PrometheusUnreachable' })],
    ['no series', activityStatus({ observed: late, condition: 'False', reason: 'NoSeries' })],
    ['another Pod', activityStatus({ observed: late, podUID: 'pod-uid-0' })],
    ['junk', { podUID: POD.uid, observedTime: 'yesterday', conditions: 'Observed' }],
    ['no condition', { podUID: POD.uid, observedTime: iso(late) }]
  ]
  for (const [name, status] of cases) {
    const d = decideLifecycle(input(IDLE, { now: late, activity: activity(undefined, status) }))
    t.equal(d.condition.reason, 'ActivityUnknown', name)
    t.equal(d.condition.status, 'False', name)
    t.equal(specOf(d).stop, undefined, name)
    t.equal(d.status.stopAt, undefined, name)
  }
  const fresh = decideLifecycle(input(IDLE, { now: late, activity: activity(undefined, activityStatus({ observed: late - 179_000 })) }))
  t.equal(fresh.condition.reason, 'Idle', 'two rounds and 59 seconds old is still current')
  const round = decideLifecycle(
    input(IDLE, { now: late, activity: activity(undefined, activityStatus({ observed: late - 500_000, roundSeconds: 200 })) })
  )
  t.equal(round.condition.reason, 'Idle', 'the agent’s roundSeconds sets what stale means')
})

t.test('maxRunDuration needs no observation and cannot be postponed', async (t) => {
  const life = { maxRunDuration: '1h', stopNotice: '10m', maxPostpone: '8h' }
  const annotations = { [KEEP]: iso(after(600)) }
  const [before, notice, due] = play(life, [
    { now: after(30), status: undefined, annotations },
    { now: after(50), status: undefined, annotations },
    { now: after(60), status: undefined, annotations }
  ])
  t.equal(before?.condition.reason, 'NotDue')
  t.equal(before?.resyncAfterSeconds, 20 * 60)
  t.equal(notice?.condition.reason, 'MaxRunDuration')
  t.match(notice?.condition.message, /cannot be postponed/)
  t.strictSame(specOf(due!).stop, { requested: true, reason: 'MaxRunDuration', at: iso(after(60)) })
})

t.test('idle time counts from the later of the Pod start and lastActiveTime; a restart restarts the clock', async (t) => {
  const active = decideLifecycle(
    input(IDLE, { now: after(100), activity: activity(undefined, activityStatus({ observed: after(100), lastActive: after(90) })) })
  )
  t.equal(active.status.idleSince, iso(after(90)))
  t.equal(active.status.stopAt, iso(after(210)))
  const restarted = { ...POD, uid: 'pod-uid-2', start: after(200) }
  const oldRecord = {
    instanceUID: 'instance-uid-1',
    podName: 'ws',
    podUID: POD.uid,
    idleThreshold: 5,
    stop: { requested: true, reason: 'Idle', at: iso(after(120)) }
  }
  const d = decideLifecycle(
    input(IDLE, {
      now: after(210),
      pod: restarted,
      activity: activity(oldRecord, activityStatus({ podUID: restarted.uid, observed: after(210), lastActive: after(10) }))
    })
  )
  t.equal(d.status.idleSince, iso(after(200)), 'an activity before the new Pod started does not count')
  t.equal(specOf(d).stop, undefined, 'the old Pod’s stop does not carry over')
  t.equal(specOf(d).podUID, 'pod-uid-2')
})

t.test('a postponement moves the idle stop; past maxPostpone it is clamped and says so; 0 turns it off', async (t) => {
  const status = (now: number) => activityStatus({ observed: now })
  const within = { [KEEP]: iso(after(300)) }
  const [seen, held, ended] = play(IDLE, [
    { now: after(100), status: status(after(100)), annotations: within },
    { now: after(290), status: status(after(290)), annotations: within },
    { now: after(305), status: status(after(305)), annotations: within }
  ])
  t.strictSame(specOf(seen!).postponement, { until: iso(after(300)), firstObservedTime: iso(after(100)) })
  t.equal(seen?.status.postponedUntil, iso(after(300)))
  t.equal(seen?.status.stopAt, iso(after(300)))
  t.equal(seen?.condition.reason, 'NotDue')
  t.equal(held?.condition.reason, 'Idle', 'the notice before the postponement ends')
  t.equal(specOf(held!).stop, undefined)
  t.strictSame(specOf(ended!).stop, { requested: true, reason: 'Idle', at: iso(after(305)) }, 'seen at 290: 15 minutes of notice')

  const far = { [KEEP]: iso(after(100 + 24 * 60)) }
  const [clamped] = play({ ...IDLE, maxPostpone: '1h' }, [{ now: after(100), status: status(after(100)), annotations: far }])
  t.equal(clamped?.status.postponedUntil, iso(after(160)))
  t.match(clamped?.condition.message, /clamped: it asks for .*, at most maxPostpone 1h after it was first seen at/)

  const [off] = play({ ...IDLE, maxPostpone: '0' }, [{ now: after(110), status: status(after(110)), annotations: within }])
  t.equal(off?.status.postponedUntil, undefined)
  t.match(off?.condition.message, /allows no postponing/)
})

t.test('the notice holds: a stop time in the past still gets stopNotice of notice', async (t) => {
  const status = (now: number) => activityStatus({ observed: now })
  const [first, second, third] = play({ idleStopAfter: '1h', stopNotice: '15m' }, [
    { now: after(500), status: status(after(500)) },
    { now: after(510), status: status(after(510)) },
    { now: after(515), status: status(after(515)) }
  ])
  t.equal(first?.condition.reason, 'Idle')
  t.equal(first?.status.stopAt, iso(after(515)))
  t.equal(first?.resyncAfterSeconds, 181, 'the observation turns stale before the notice ends')
  t.equal(specOf(second!).stop, undefined)
  t.strictSame(specOf(third!).stop, { requested: true, reason: 'Idle', at: iso(after(515)) })
})

t.test('once requested a stop stays requested; an interrupted notice is given again in full', async (t) => {
  const [, due, busy] = play(IDLE, [
    { now: after(105), status: activityStatus({ observed: after(105) }) },
    { now: after(120), status: activityStatus({ observed: after(120) }) },
    { now: after(121), status: activityStatus({ observed: after(121), lastActive: after(121) }), annotations: { [KEEP]: iso(after(400)) } }
  ])
  t.equal(specOf(due!).stop !== undefined, true)
  t.strictSame(specOf(busy!).stop, specOf(due!).stop)

  const [notice, resumed, again] = play(IDLE, [
    { now: after(110), status: activityStatus({ observed: after(110) }) },
    { now: after(115), status: activityStatus({ observed: after(115), lastActive: after(114) }) },
    { now: after(225), status: activityStatus({ observed: after(225), lastActive: after(114) }) }
  ])
  t.equal(specOf(notice!).noticeTime, iso(after(110)))
  t.equal(resumed?.condition.reason, 'NotDue')
  t.equal(specOf(resumed!).noticeTime, undefined, 'the record goes with the notice')
  t.equal(specOf(again!).noticeTime, iso(after(225)))
  t.equal(again?.status.stopAt, iso(after(240)), 'the new notice runs its full 15 minutes')
})

t.test('hostile annotations and records are ignored, never echoed', async (t) => {
  for (const value of ['tomorrow', '2026-13-45T99:99:99Z', `${'9'.repeat(5000)}`, '2026-12-05T10:00:00', '<script>']) {
    const d = decideLifecycle(
      input(IDLE, {
        now: after(110),
        activity: activity(undefined, activityStatus({ observed: after(110) })),
        annotations: { [KEEP]: value }
      })
    )
    t.equal(d.status.postponedUntil, undefined, value.slice(0, 20))
    t.notMatch(d.condition.message, value.slice(0, 20))
  }
  const junkRecord = { instanceUID: 'instance-uid-1', podUID: POD.uid, noticeTime: 'x', postponement: 7, stop: { requested: 'yes' } }
  t.doesNotThrow(() => decideLifecycle(input(IDLE, { now: after(1), activity: activity(junkRecord, 42), annotations: [] })))
  t.strictSame(parseStoppedBy('Idle 2026-12-01T10:00:00Z'), { reason: 'Idle', at: START })
  t.equal(parseStoppedBy('Idle 2026-12-01T10:00:00Z extra'), undefined)
  t.equal(parseStoppedBy('constructor 2026-12-01T10:00:00Z'), undefined)
  t.equal(parseRfc3339('2026-12-01T10:00:00+02:00'), START - 2 * 3600_000)
  t.strictSame(lifecycleProblems({ idleStopAfter: '2 hours', maxRunDuration: '0s', stopNotice: '15m' }), [
    'spec.lifecycle.idleStopAfter must be a duration such as 90s, 15m or 2h',
    'spec.lifecycle.maxRunDuration must be a positive duration'
  ])
})
