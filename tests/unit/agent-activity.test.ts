/**
 * The activity controller's pure decisions (hooks/agent/activity/decide.ts, prometheus.ts): what a
 * Prometheus answer says, what an InstanceActivity's status becomes after a round and when it is
 * written, and when a stop request is carried out; with properties over junk answers and any
 * InstanceActivity, Instance and Pod: nothing throws, no activity is invented, no stop is made
 * that was not requested for this Instance and this Pod.
 */
import fc from 'fast-check'
import t from 'tap'
import { decideStatus, decideStop, readActivity, type ActivityInput, type Round } from '../../hooks/agent/activity/decide.ts'
import { activityQuery, parseAnswer, seriesKey, type Answer } from '../../hooks/agent/activity/prometheus.ts'

const NOW = Date.parse('2026-12-03T10:00:00Z')
const MIN = 60_000
const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z')

const owner = { apiVersion: 'worker.gpustack.ai/v1alpha1', kind: 'Instance', name: 'ws', uid: 'inst-1', controller: true }
function activity(spec: Record<string, unknown> = {}, status?: Record<string, unknown>): Record<string, unknown> {
  return {
    metadata: { name: 'ws', namespace: 'team', resourceVersion: '7', ownerReferences: [owner] },
    spec: { instanceUID: 'inst-1', podName: 'ws', podUID: 'pod-1', idleThreshold: 5, ...spec },
    ...(status !== undefined ? { status } : {})
  }
}
const input = (object: unknown): ActivityInput => {
  const read = readActivity(object)
  if (typeof read === 'string') throw new Error(read)
  return read
}
const values = (entries: [string, number][]): Answer => ({
  ok: true,
  values: new Map(entries.map(([uid, v]) => [seriesKey('team', 'ws', uid), v])),
  skipped: 0
})
const round = (answer: Answer, nowMs = NOW): Round => ({ answer, nowMs, roundMs: MIN, refreshMs: 5 * MIN, source: 'http://prom q' })
const vector = (result: unknown[]): string => JSON.stringify({ status: 'success', data: { resultType: 'vector', result } })
const sample = (labels: Record<string, unknown>, value: unknown): unknown => ({ metric: labels, value: [1, value] })

t.test('the query: the rule, by namespace, name and uid, over the round', async (t) => {
  t.equal(
    activityQuery(60),
    'max by (namespace, instance_name, instance_uid) (max_over_time(gpustack_instance_accelerator_cores_utilization_percent[60s]))'
  )
})

t.test('an answer: samples with the three labels and a finite value; the highest of one Instance', async (t) => {
  const answer = parseAnswer(
    vector([
      sample({ namespace: 'team', instance_name: 'ws', instance_uid: 'inst-1' }, '3'),
      sample({ namespace: 'team', instance_name: 'ws', instance_uid: 'inst-1' }, '40'),
      sample({ namespace: 'team', instance_name: 'ws' }, '90'),
      sample({ namespace: 'team', instance_name: 'other', instance_uid: 'u' }, 'NaN'),
      sample({ namespace: 'team', instance_name: 'inf', instance_uid: 'u' }, '+Inf'),
      sample({ namespace: 'team', instance_name: 'num', instance_uid: 'u' }, 12),
      sample({ namespace: 'team', instance_name: 'empty', instance_uid: 'u' }, '')
    ])
  )
  t.same(answer, { ok: true, values: new Map([[seriesKey('team', 'ws', 'inst-1'), 40]]), skipped: 5 })
  t.match(parseAnswer('{"status":"error","error":"parse error"}'), { ok: false, message: /parse error/ })
  t.match(parseAnswer('{"status":"success","data":{"resultType":"matrix","result":[]}}'), { ok: false })
  t.match(parseAnswer('<html>'), { ok: false, message: 'the answer is not JSON' })
  t.match(parseAnswer(vector(Array.from({ length: 200_001 }, () => 0))), { ok: false, message: /more than 200000/ })
})

t.test('junk answers never throw and never carry a value that is not a finite number', async () => {
  const junk = fc.oneof(
    fc.string(),
    fc.json(),
    fc.anything().map((a) => JSON.stringify({ status: 'success', data: { resultType: 'vector', result: a } }) ?? ''),
    fc
      .array(
        fc.record({
          metric: fc.dictionary(fc.constantFrom('namespace', 'instance_name', 'instance_uid', '__proto__', 'x'), fc.anything()),
          value: fc.oneof(fc.anything(), fc.tuple(fc.anything(), fc.oneof(fc.string(), fc.double().map(String))))
        })
      )
      .map((r) => vector(r))
  )
  fc.assert(
    fc.property(junk, (body) => {
      const answer = parseAnswer(body)
      return !answer.ok || [...answer.values.values()].every(Number.isFinite)
    }),
    { numRuns: 1500 }
  )
})

t.test('active: lastActiveTime and observedTime now, Observed True, written once', async (t) => {
  const d = decideStatus(input(activity()), round(values([['inst-1', 40]])), undefined)
  t.equal(d.seen, 'active')
  t.ok(d.write)
  t.match(d.status, {
    podUID: 'pod-1',
    lastActiveTime: iso(NOW),
    observedTime: iso(NOW),
    roundSeconds: 300,
    source: 'http://prom q',
    conditions: [{ type: 'Observed', status: 'True', reason: 'Observed', lastTransitionTime: iso(NOW) }]
  })
  // The next round, still active: only the time moved, nothing is written until the refresh is due.
  const next = decideStatus(input(activity({}, d.status)), round(values([['inst-1', 70]]), NOW + MIN), d.memory)
  t.notOk(next.write, 'active again: no write')
  const due = decideStatus(input(activity({}, d.status)), round(values([['inst-1', 70]]), NOW + 4 * MIN + 1), next.memory)
  t.ok(due.write, 'the next round would be later than the refresh: written')
  t.equal(due.status.lastActiveTime, iso(NOW + 4 * MIN + 1))
})

t.test('active, then idle: written at once with the last active round from memory', async (t) => {
  const first = decideStatus(input(activity()), round(values([['inst-1', 40]])), undefined)
  const busy = decideStatus(input(activity({}, first.status)), round(values([['inst-1', 40]]), NOW + MIN), first.memory)
  t.notOk(busy.write)
  const idle = decideStatus(input(activity({}, first.status)), round(values([['inst-1', 5]]), NOW + 2 * MIN), busy.memory)
  t.equal(idle.seen, 'idle', 'at the threshold is idle')
  t.ok(idle.write)
  t.equal(idle.status.lastActiveTime, iso(NOW + MIN), 'the last round above the threshold')
  t.equal(idle.status.observedTime, iso(NOW + 2 * MIN))
  const still = decideStatus(input(activity({}, idle.status)), round(values([['inst-1', 0]]), NOW + 3 * MIN), idle.memory)
  t.notOk(still.write, 'idle again: no write')
  t.equal(still.status.lastActiveTime, iso(NOW + MIN))
})

t.test('no series: Observed False NoSeries, observedTime now, lastActiveTime kept', async (t) => {
  const before = { lastActiveTime: iso(NOW - 30 * MIN), observedTime: iso(NOW - MIN), podUID: 'pod-1', roundSeconds: 300 }
  const d = decideStatus(input(activity({}, before)), round(values([['other-uid', 99]])), undefined)
  t.equal(d.seen, 'noSeries', 'a series of another uid (an earlier Instance of this name) is not this one')
  t.ok(d.write)
  t.match(d.status, { lastActiveTime: iso(NOW - 30 * MIN), observedTime: iso(NOW), conditions: [{ status: 'False', reason: 'NoSeries' }] })
})

t.test('Prometheus unreachable: Observed False once; no observedTime, no activity, no idleness written', async (t) => {
  const before = {
    podUID: 'pod-1',
    lastActiveTime: iso(NOW - 10 * MIN),
    observedTime: iso(NOW - 10 * MIN),
    roundSeconds: 300,
    source: 'http://prom q',
    conditions: [{ type: 'Observed', status: 'True', reason: 'Observed', message: 'x', lastTransitionTime: iso(NOW - 60 * MIN) }]
  }
  const down: Answer = { ok: false, message: 'connect ECONNREFUSED' }
  const d = decideStatus(input(activity({}, before)), round(down), undefined)
  t.ok(d.write)
  t.match(d.status, {
    lastActiveTime: iso(NOW - 10 * MIN),
    observedTime: iso(NOW - 10 * MIN),
    conditions: [{ status: 'False', reason: 'PrometheusUnreachable', lastTransitionTime: iso(NOW) }]
  })
  const again = decideStatus(input(activity({}, d.status)), round(down, NOW + 20 * MIN), d.memory)
  t.notOk(again.write, 'still down: nothing written, whatever the time')
})

t.test('a new Pod in the spec: written for it; a Pod a stop found changed: PodChanged until the spec follows', async (t) => {
  const before = { podUID: 'pod-0', observedTime: iso(NOW - MIN), roundSeconds: 300, source: 'http://prom q' }
  const d = decideStatus(input(activity({}, before)), round(values([['inst-1', 0]])), { podUID: 'pod-0', lastActiveMs: NOW - 2 * MIN })
  t.ok(d.write)
  t.equal(d.status.podUID, 'pod-1')
  t.equal(d.status.lastActiveTime, undefined, "the old Pod's remembered activity is not carried over")
  const changed = decideStatus(input(activity()), round(values([['inst-1', 90]])), { podUID: 'pod-1', podChanged: 'pod-2' })
  t.equal(changed.seen, 'podChanged')
  t.match(changed.status, { conditions: [{ status: 'False', reason: 'PodChanged' }] })
  t.equal(changed.status.lastActiveTime, undefined, 'no activity read for a Pod that is not running')
})

const instance = (extra: Record<string, unknown> = {}, spec: Record<string, unknown> = {}): Record<string, unknown> => ({
  metadata: { name: 'ws', namespace: 'team', uid: 'inst-1', resourceVersion: '42', ...extra },
  spec: { image: 'x', ...spec }
})
const pod = (uid = 'pod-1'): unknown => ({ metadata: { name: 'ws', uid } })
const requested = (reason = 'Idle'): Record<string, unknown> => ({ stop: { requested: true, reason, at: iso(NOW - MIN) } })

t.test('a requested stop for this Instance and Pod: one patch that tests uid and resourceVersion, and the Event', async (t) => {
  const d = decideStop(input(activity(requested())), instance(), pod(), NOW)
  t.same(d, {
    kind: 'stop',
    instance: { namespace: 'team', name: 'ws', uid: 'inst-1' },
    patch: [
      { op: 'test', path: '/metadata/uid', value: 'inst-1' },
      { op: 'test', path: '/metadata/resourceVersion', value: '42' },
      { op: 'add', path: '/metadata/annotations', value: { 'gpustack.ai/stopped-by': `Idle ${iso(NOW)}` } },
      { op: 'add', path: '/spec/stop', value: true }
    ],
    reason: 'IdleStopped',
    message: d.kind === 'stop' ? d.message : ''
  })
  const max = decideStop(input(activity(requested('MaxRunDuration'))), instance({ annotations: { a: 'b' } }), pod(), NOW)
  t.match(max, {
    kind: 'stop',
    reason: 'MaxRunDurationReached',
    patch: [{}, {}, { op: 'add', path: '/metadata/annotations/gpustack.ai~1stopped-by', value: `MaxRunDuration ${iso(NOW)}` }, {}]
  })
})

t.test('stale or mismatching requests are ignored; a stopped Instance is left alone', async (t) => {
  t.same(decideStop(input(activity()), instance(), pod(), NOW), { kind: 'none' })
  t.match(decideStop(input(activity(requested())), undefined, undefined, NOW), { kind: 'ignore' })
  t.match(decideStop(input(activity(requested())), instance({ uid: 'inst-2' }), pod(), NOW), { kind: 'ignore', why: /inst-2/ })
  t.match(decideStop(input(activity(requested())), instance(), pod('pod-9'), NOW), { kind: 'ignore', podChanged: 'pod-9' })
  t.match(decideStop(input(activity(requested())), instance(), undefined, NOW), { kind: 'ignore', podChanged: '' })
  t.match(decideStop(input(activity(requested())), instance({ deletionTimestamp: iso(NOW) }), pod(), NOW), { kind: 'ignore' })
  t.match(decideStop(input(activity(requested())), instance({}, { stop: true }), pod(), NOW), { kind: 'done' })
  const restarted = instance({ annotations: { 'gpustack.ai/stopped-by': `Idle ${iso(NOW - 30_000)}` } })
  t.match(decideStop(input(activity(requested())), restarted, pod(), NOW), { kind: 'done' }, 'carried out for this request already')
  const foreign = { ...activity(requested()), metadata: { name: 'ws', namespace: 'team', ownerReferences: [] } }
  t.match(decideStop(input(foreign), instance(), pod(), NOW), { kind: 'ignore', why: /not controlled/ })
})

t.test('any InstanceActivity, Instance and Pod: no throw, no invented activity, no stop not requested', async () => {
  const loose = fc.oneof(fc.constant(undefined), fc.anything(), fc.record({ metadata: fc.anything(), spec: fc.anything() }))
  const specs = fc.record(
    {
      instanceUID: fc.constantFrom('inst-1', 'inst-2', ''),
      podName: fc.constantFrom('ws', 'Bad Name'),
      podUID: fc.constantFrom('pod-1', 'pod-2'),
      idleThreshold: fc.oneof(fc.integer({ min: -5, max: 105 }), fc.double()),
      stop: fc.oneof(
        fc.constant(undefined),
        fc.record({
          requested: fc.oneof(fc.boolean(), fc.anything()),
          reason: fc.constantFrom('Idle', 'MaxRunDuration', 'x'),
          at: fc.string()
        })
      )
    },
    { requiredKeys: [] }
  )
  const objects = fc.oneof(
    loose,
    fc.record({ metadata: fc.constant({ name: 'ws', namespace: 'team', ownerReferences: [owner] }), spec: specs, status: fc.anything() })
  )
  const answers: fc.Arbitrary<Answer> = fc.oneof(
    fc.constant<Answer>({ ok: false, message: 'down' }),
    fc.array(fc.tuple(fc.constantFrom('inst-1', 'inst-2'), fc.double({ noNaN: true, noDefaultInfinity: true }))).map(values)
  )
  fc.assert(
    fc.property(
      objects,
      answers,
      fc.oneof(loose, fc.constant(instance())),
      fc.oneof(loose, fc.constant(pod())),
      (object, answer, inst, p) => {
        const read = readActivity(object)
        if (typeof read === 'string') return true
        const d = decideStatus(read, round(answer), undefined)
        const known = answer.ok ? answer.values.get(seriesKey('team', 'ws', read.spec.instanceUID)) : undefined
        // Activity is only ever the round's own time, and only when its series was above the threshold.
        if (d.status.lastActiveTime === iso(NOW) && !(known !== undefined && known > read.spec.idleThreshold)) return false
        const stop = decideStop(read, inst, p, NOW)
        if (stop.kind !== 'stop') return true
        return (
          read.spec.stop?.requested === true &&
          read.spec.instanceUID === 'inst-1' &&
          read.spec.podUID === 'pod-1' &&
          stop.patch.some((op) => op.op === 'test' && op.path === '/metadata/uid' && op.value === read.spec.instanceUID)
        )
      }
    ),
    { numRuns: 2000 }
  )
})
