/**
 * The lifecycle through the Instance sync hook (hooks/instance/lifecycle-sync.ts): the
 * InstanceActivity child only for a running Pod of a type with a lifecycle, status.lifecycle,
 * the condition StopScheduled, resyncAfterSeconds, stoppedBy, and an invalid lifecycle reported.
 */
import t from 'tap'
import { sync } from '../../hooks/instance/sync.ts'
import { keepAsIs } from '../../hooks/metacontroller/keep.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { builtPod } from '../support/instance-requests.ts'
import { POD_STATUS, UID, baseSpec, instance, instanceType, namespaceObject, observedPod, request } from './fixtures/instance.ts'
import { activity, activityStatus } from './fixtures/lifecycle.ts'

const START = '2026-02-03T01:00:00Z'
const NOW = new Date('2026-02-03T04:05:06Z')
const LIFECYCLE = { idleStopAfter: '2h', stopNotice: '15m' }
const typeWith = (lifecycle?: unknown) => instanceType({ families: ['Whole', 'Shared'], ...(lifecycle !== undefined ? { lifecycle } : {}) })

function runningPod(): KubeObject {
  const pod = observedPod(builtPod(baseSpec()), { ...POD_STATUS.running, startTime: START })
  return { ...pod, metadata: { ...pod.metadata, uid: 'pod-uid-9' } }
}

const conditionOf = (status: Record<string, unknown>, type: string) =>
  (status.conditions as Array<Record<string, unknown>>).find((c) => c.type === type)

t.test('a running Pod of a type with a lifecycle gets its InstanceActivity, status.lifecycle and StopScheduled', async (t) => {
  const answer = sync(request({ children: [runningPod()], related: [typeWith(LIFECYCLE), namespaceObject()] }), NOW)
  const child = answer.children.find((c) => c.kind === 'InstanceActivity')
  t.strictSame(child, {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'InstanceActivity',
    metadata: {
      name: 'ws',
      namespace: 'team-a',
      labels: { 'app.kubernetes.io/part-of': 'ws', 'app.kubernetes.io/managed-by': 'gpuhooks' }
    },
    spec: { instanceUID: UID, podName: 'ws', podUID: 'pod-uid-9', idleThreshold: 5 }
  })
  t.match(conditionOf(answer.status, 'StopScheduled'), { status: 'False', reason: 'ActivityUnknown' })
  t.equal(answer.status.lifecycle, undefined)
  t.equal(answer.resyncAfterSeconds, undefined, 'nothing to wake for: the agent’s write brings the next sync')
})

t.test('with an observation the stop is scheduled and the hook wakes at the next boundary', async (t) => {
  const observed = activity(
    { instanceUID: UID, podName: 'ws', podUID: 'pod-uid-9', idleThreshold: 5 },
    activityStatus({ podUID: 'pod-uid-9', observed: NOW.getTime() - 10_000 })
  )
  const answer = sync(request({ children: [runningPod(), observed], related: [typeWith(LIFECYCLE), namespaceObject()] }), NOW)
  // Idle since 01:00, so due at 03:00; first seen now, so the notice runs its 15 minutes first.
  t.strictSame(answer.status.lifecycle, { idleSince: START, stopAt: '2026-02-03T04:20:06Z', stopReason: 'Idle' })
  t.match(conditionOf(answer.status, 'StopScheduled'), { status: 'True', reason: 'Idle' })
  t.match((answer.children.find((c) => c.kind === 'InstanceActivity') as KubeObject | undefined)?.spec, {
    noticeTime: '2026-02-03T04:05:06Z'
  })
  t.equal(answer.resyncAfterSeconds, 170 + 1)
})

t.test('no InstanceActivity without a lifecycle, while stopped, or before the Pod runs', async (t) => {
  const none = sync(request({ children: [runningPod()] }), NOW)
  t.notOk(none.children.some((c) => c.kind === 'InstanceActivity'))
  t.equal(conditionOf(none.status, 'StopScheduled'), undefined)
  t.equal(none.status.lifecycle, undefined)

  const pending = observedPod(builtPod(baseSpec()), POD_STATUS.pending)
  const waiting = sync(request({ children: [pending], related: [typeWith(LIFECYCLE), namespaceObject()] }), NOW)
  t.notOk(waiting.children.some((c) => c.kind === 'InstanceActivity'))
  t.match(conditionOf(waiting.status, 'StopScheduled'), { status: 'False', reason: 'NotRunning' })

  const parent = instance(baseSpec({ stop: true }))
  parent.metadata.annotations = { 'gpustack.ai/stopped-by': 'Idle 2026-02-03T03:00:00Z' }
  const old = activity({ instanceUID: UID, podName: 'ws', podUID: 'pod-uid-9', idleThreshold: 5 }, undefined)
  const stopped = sync(request({ parent, children: [old], related: [typeWith(LIFECYCLE), namespaceObject()] }), NOW)
  t.notOk(
    stopped.children.some((c) => c.kind === 'InstanceActivity'),
    'the InstanceActivity goes with the Pod'
  )
  t.strictSame(stopped.status.lifecycle, { stoppedBy: { reason: 'Idle', at: '2026-02-03T03:00:00Z' } })
  t.match(conditionOf(stopped.status, 'StopScheduled'), { reason: 'StoppedByLifecycle' })

  const started = instance(baseSpec({ stop: false }))
  started.metadata.annotations = { 'gpustack.ai/stopped-by': 'Idle 2026-02-03T03:00:00Z' }
  const again = sync(request({ parent: started, related: [typeWith(LIFECYCLE), namespaceObject()] }), NOW)
  t.equal((again.status.lifecycle as Record<string, unknown> | undefined)?.stoppedBy, undefined, 'spec.stop false: no effect')

  const forged = instance(baseSpec({ stop: true }))
  forged.metadata.annotations = { 'gpustack.ai/stopped-by': 'Idle because <b>I said so</b>' }
  t.equal(sync(request({ parent: forged, related: [typeWith(LIFECYCLE), namespaceObject()] }), NOW).status.lifecycle, undefined)
})

t.test('a stored type with a malformed lifecycle is a spec problem naming the field; the children are kept', async (t) => {
  const pod = runningPod()
  const observed = activity(
    { instanceUID: UID, podName: 'ws', podUID: 'pod-uid-9', idleThreshold: 5, stop: { requested: true } },
    undefined
  )
  const answer = sync(request({ children: [pod, observed], related: [typeWith({ idleStopAfter: 'two hours' }), namespaceObject()] }), NOW)
  t.strictSame(answer.children[1], keepAsIs(observed), 'the InstanceActivity is kept as it is')
  t.match(conditionOf(answer.status, 'SpecValid'), { status: 'False', message: /spec\.lifecycle\.idleStopAfter must be a duration/ })
  t.strictSame(
    answer.children.map((c) => c.kind),
    ['Pod', 'InstanceActivity']
  )
})
