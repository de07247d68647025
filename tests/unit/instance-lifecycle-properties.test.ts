/**
 * Properties of the lifecycle decision over any history of observations, annotations, restarts
 * and clock (the spec's "Proving it"; docs/lifecycle.md). Each history is played as Metacontroller would:
 * the InstanceActivity spec a decision answers is the spec the next one observes.
 *
 * - It never throws, and what it answers fits the CRDs.
 * - A stop is never first requested on missing data (for Idle), nor before the condition said so
 *   for stopNotice, nor before a postponement within maxPostpone that was seen in time.
 * - A new Pod starts with a clean record and a fresh idle clock.
 * - A decision fed its own answer at the same instant answers the same (a resync writes nothing).
 */
import t from 'tap'
import fc from 'fast-check'
import { FormatRegistry } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { InstanceActivitySpecSchema } from '../../hooks/api/instanceactivity.ts'
import { InstanceStatusSchema } from '../../hooks/api/instance.ts'
import type { LifecycleSpec } from '../../hooks/api/instancetype.ts'
import { decideLifecycle, type LifecycleDecision } from '../../hooks/instance/lifecycle.ts'
import { parseDuration } from '../../hooks/api/duration.ts'
import type { RunningPod } from '../../hooks/instance/lifecycle-observation.ts'
import { START, activity, activityStatus, input, iso, specOf } from './fixtures/lifecycle.ts'

if (!FormatRegistry.Has('date-time'))
  FormatRegistry.Set('date-time', (v) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(v))

const KEEP = 'gpustack.ai/keep-running-until'
const RUNS = { numRuns: 300 }

const lifecycleArb: fc.Arbitrary<LifecycleSpec> = fc.record(
  {
    idleStopAfter: fc.constantFrom('1m', '10m', '2h'),
    stopNotice: fc.constantFrom('0', '1m', '15m', '3h'),
    maxRunDuration: fc.constantFrom('30m', '5h'),
    maxPostpone: fc.constantFrom('0', '1h', '8h'),
    idleThreshold: fc.integer({ min: 0, max: 100 })
  },
  { requiredKeys: [] }
)

type Observed =
  | { kind: 'none' }
  | { kind: 'fresh'; ageSeconds: number; activeMinutesAgo: number | undefined; roundSeconds: number }
  | { kind: 'notObserved' }
  | { kind: 'otherPod' }
  | { kind: 'junk'; value: unknown }

const observedArb: fc.Arbitrary<Observed> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('fresh' as const),
      ageSeconds: fc.integer({ min: 0, max: 400 }),
      activeMinutesAgo: fc.option(fc.integer({ min: 0, max: 600 }), { nil: undefined }),
      roundSeconds: fc.constantFrom(30, 60, 120)
    })
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'notObserved' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'otherPod' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('junk' as const), value: fc.anything() }) }
)

const annotationArb = fc.oneof(
  fc.constant(undefined),
  fc.integer({ min: -60, max: 20 * 60 }).map((m) => ({ minutes: m })),
  fc.anything().map((value) => ({ raw: value }))
)

const stepArb = fc.record({
  advanceMinutes: fc.integer({ min: 0, max: 90 }),
  observed: observedArb,
  annotation: annotationArb,
  restart: fc.integer({ min: 0, max: 5 }).map((n) => n === 0)
})

interface Played {
  now: number
  pod: RunningPod
  known: boolean
  annotations: unknown
  status: unknown
  decision: LifecycleDecision
  observedSpec: Record<string, unknown> | undefined
}

function statusOf(o: Observed, pod: RunningPod, now: number): unknown {
  switch (o.kind) {
    case 'none':
      return undefined
    case 'fresh':
      return activityStatus({
        podUID: pod.uid,
        observed: now - o.ageSeconds * 1000,
        roundSeconds: o.roundSeconds,
        ...(o.activeMinutesAgo !== undefined ? { lastActive: Math.min(now - o.ageSeconds * 1000, now - o.activeMinutesAgo * 60_000) } : {})
      })
    case 'notObserved':
      return activityStatus({ podUID: pod.uid, observed: now, condition: 'False', reason: 'PrometheusUnreachable' })
    case 'otherPod':
      return activityStatus({ podUID: 'someone-else', observed: now })
    case 'junk':
      return o.value
  }
}

type Step = typeof stepArb extends fc.Arbitrary<infer S> ? S : never

function play(lifecycle: LifecycleSpec, steps: readonly Step[]) {
  let now = START
  let pod: RunningPod = { name: 'ws', uid: 'pod-0', start: START }
  let spec: Record<string, unknown> | undefined
  const played: Played[] = []
  steps.forEach((step, i) => {
    now += step.advanceMinutes * 60_000
    if (step.restart) {
      pod = { name: 'ws', uid: `pod-${i + 1}`, start: now }
      spec = undefined
    }
    const status = statusOf(step.observed, pod, now)
    const known = step.observed.kind === 'fresh' && step.observed.ageSeconds <= 3 * step.observed.roundSeconds
    const annotations =
      step.annotation === undefined
        ? undefined
        : 'minutes' in step.annotation
          ? { [KEEP]: iso(now + step.annotation.minutes * 60_000) }
          : { [KEEP]: step.annotation.raw }
    const observedSpec = spec
    const observed = spec === undefined && status === undefined ? undefined : activity(spec, status)
    const decision = decideLifecycle(input(lifecycle, { now, activity: observed, annotations, pod }))
    played.push({ now, pod, known, annotations, status, decision, observedSpec })
    spec = decision.activity?.spec as Record<string, unknown> | undefined
  })
  return played
}

const seconds = (text: string | undefined, fallback: number): number => (text === undefined ? fallback : (parseDuration(text) ?? fallback))

t.test('any history: no throw, answers fit the CRDs, stops only with data, notice and postponement honoured', async (t) => {
  fc.assert(
    fc.property(lifecycleArb, fc.array(stepArb, { minLength: 1, maxLength: 30 }), (lifecycle, steps) => {
      const played = play(lifecycle, steps)
      const notice = seconds(lifecycle.stopNotice, 900) * 1000
      const maxPostpone = seconds(lifecycle.maxPostpone, 8 * 3600) * 1000
      played.forEach((p, i) => {
        const spec = specOf(p.decision)
        if (!Value.Check(InstanceActivitySpecSchema, spec)) throw new Error(`spec does not fit: ${JSON.stringify(spec)}`)
        if (!Value.Check(InstanceStatusSchema, { lifecycle: p.decision.status })) throw new Error('status does not fit')
        const stop = spec.stop as { reason: string; at: string } | undefined
        const before = p.observedSpec?.stop
        if (stop === undefined || before !== undefined) return
        // The first request for this Pod.
        if (stop.reason === 'Idle' && !p.known) throw new Error(`step ${i}: idle stop on missing data`)
        if (notice > 0) {
          const noticeTime = Date.parse(String(p.observedSpec?.noticeTime))
          if (!(p.now - noticeTime >= notice)) throw new Error(`step ${i}: stop before stopNotice`)
          const shown = played.some(
            (q, j) => j < i && q.pod.uid === p.pod.uid && q.now === noticeTime && q.decision.condition.status === 'True'
          )
          if (!shown) throw new Error(`step ${i}: no notice was shown at ${iso(noticeTime)}`)
        }
        if (stop.reason === 'Idle' && maxPostpone > 0) {
          const value = (p.annotations as Record<string, unknown> | undefined)?.[KEEP]
          const until = typeof value === 'string' ? Math.floor(Date.parse(value) / 1000) * 1000 : NaN
          // Seen unchanged since its first step for this Pod.
          let first = i
          while (
            first > 0 &&
            played[first - 1]?.pod.uid === p.pod.uid &&
            (played[first - 1]?.annotations as Record<string, unknown> | undefined)?.[KEEP] === value
          )
            first--
          const firstSeen = played[first]?.now ?? p.now
          if (Number.isFinite(until) && until <= firstSeen + maxPostpone && p.now < until)
            throw new Error(`step ${i}: stop before the postponement`)
        }
      })
      return true
    }),
    RUNS
  )
  t.pass('held')
})

t.test('a restart restarts the clock and clears the record', async (t) => {
  fc.assert(
    fc.property(lifecycleArb, fc.array(stepArb, { minLength: 1, maxLength: 20 }), (lifecycle, steps) => {
      for (const p of play(lifecycle, steps)) {
        const idleSince = p.decision.status.idleSince
        if (idleSince !== undefined && Date.parse(idleSince) < Math.floor(p.pod.start / 1000) * 1000) throw new Error('idle before the Pod')
        if (p.observedSpec === undefined && specOf(p.decision).stop !== undefined && specOf(p.decision).stop !== null) {
          // A fresh record may request a stop at once only when no notice is asked for.
          if (seconds(lifecycle.stopNotice, 900) > 0) throw new Error('a new Pod stopped without notice')
        }
      }
      return true
    }),
    RUNS
  )
  t.pass('held')
})

t.test('fed its own answer at the same instant, the decision answers the same', async (t) => {
  fc.assert(
    fc.property(lifecycleArb, fc.array(stepArb, { minLength: 1, maxLength: 12 }), (lifecycle, steps) => {
      for (const p of play(lifecycle, steps)) {
        const spec = p.decision.activity?.spec as Record<string, unknown> | undefined
        if (spec === undefined) continue
        const again = decideLifecycle(
          input(lifecycle, { now: p.now, activity: activity(spec, p.status), annotations: p.annotations, pod: p.pod })
        )
        const answered = (d: LifecycleDecision) => JSON.stringify([d.status, d.condition, d.activity])
        if (answered(again) !== answered(p.decision)) throw new Error(`not a fixpoint: ${answered(p.decision)} then ${answered(again)}`)
      }
      return true
    }),
    RUNS
  )
  t.pass('held')
})

t.test('no throw on any input shape', async (t) => {
  fc.assert(
    fc.property(fc.anything(), fc.anything(), fc.anything(), fc.integer({ min: 0, max: 4e12 }), (spec, status, annotations, now) => {
      const junk = { apiVersion: 'x', kind: 'InstanceActivity', metadata: { name: 'ws' }, spec, status } as never
      const d = decideLifecycle(input({ idleStopAfter: '1h', maxRunDuration: '2h' }, { now, activity: junk, annotations }))
      return typeof d.condition.message === 'string'
    }),
    { numRuns: 500 }
  )
  t.pass('held')
})
