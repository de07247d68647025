/**
 * Entitlement and queueing in the Instance sync hook (docs/access.md): `spec.access` checked against
 * the namespace's labels at sync (TypeNotPermitted, no new Pod; a running Pod kept, AccessRevoked),
 * `spec.queue` as Kueue's labels on the Pod, and the Pod as Kueue changes it read into the phase
 * Queued and the conditions Admitted and Evicted. Expectations are written out from the design.
 */
import t from 'tap'
import { sync } from '../../hooks/instance/sync.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import type { CompositeResponse } from '../../hooks/metacontroller/schemas.ts'
import { NOW, POD_STATUS, baseSpec, instance, instanceType, namespaceObject, observedPod, request } from './fixtures/instance.ts'

type Status = Record<string, any>
const A100 = { families: ['Whole'] }
const queued = (extra: Record<string, unknown> = {}) => ({ ...A100, queue: { localQueueName: 'gpu-a100', ...extra } })
const tier = (value: string) => ({ ...A100, access: { namespaceSelector: { matchLabels: { 'gpu-tier': value } } } })
const condition = (status: Status, type: string) => (status.conditions as Status[]).find((c) => c.type === type)
const brief = (c: Status | undefined) => (c === undefined ? undefined : { status: c.status, reason: c.reason })
const podOf = (answer: CompositeResponse): KubeObject | undefined => answer.children?.find((c) => c.kind === 'Pod')
const accelerated = baseSpec({ resources: { accelerator: { count: 1 } }, ports: [{ port: 8888 }] })

function answer(
  options: {
    type?: Record<string, unknown>
    labels?: Record<string, string>
    pod?: KubeObject
    status?: unknown
    related?: KubeObject[]
  } = {}
) {
  return sync(
    request({
      parent: instance(accelerated, options.status === undefined ? {} : { status: options.status }),
      children: options.pod === undefined ? [] : [options.pod],
      related: options.related ?? [instanceType(options.type ?? A100), namespaceObject(options.labels ?? {})]
    }),
    NOW
  )
}
/** The Pod the hook renders for `type`, as observed once created, with what Kueue's webhook adds. */
function kueuePod(type: Record<string, unknown>, status: unknown, gated: boolean, extra: Record<string, unknown> = {}): KubeObject {
  const rendered = podOf(answer({ type }))
  if (rendered === undefined) throw new Error('no Pod rendered')
  const pod = observedPod(rendered, status)
  pod.metadata.labels = { ...pod.metadata.labels, 'kueue.x-k8s.io/managed': 'true' }
  pod.metadata.finalizers = ['kueue.x-k8s.io/managed']
  pod.metadata.annotations = { ...pod.metadata.annotations, 'kueue.x-k8s.io/role-hash': 'a1b2c3' }
  if (gated)
    pod.spec = { ...(pod.spec as object), schedulingGates: [{ name: 'kueue.x-k8s.io/admission' }, { name: 'kueue.x-k8s.io/topology' }] }
  Object.assign(pod.metadata, extra)
  return pod
}
const GATED = {
  phase: 'Pending',
  conditions: [
    { type: 'PodScheduled', status: 'False', reason: 'SchedulingGated', message: 'Scheduling is blocked due to non-empty scheduling gates' }
  ]
}

t.test('access: a namespace the selector admits gets its Pod; one it does not gets TypeNotPermitted and none', async (t) => {
  const admitted = answer({ type: tier('a100'), labels: { 'gpu-tier': 'a100' } })
  t.ok(podOf(admitted), 'the Pod is rendered')
  t.strictSame(brief(condition(admitted.status, 'SpecValid')), { status: 'True', reason: 'Valid' })
  const refused = answer({ type: tier('a100'), labels: { 'gpu-tier': 'h100' } })
  t.equal(podOf(refused), undefined, 'no Pod')
  const specValid = condition(refused.status, 'SpecValid')
  t.strictSame(brief(specValid), { status: 'False', reason: 'TypeNotPermitted' })
  t.equal(
    specValid?.message,
    "spec.type a100: InstanceType a100 is not available in namespace team-a (its spec.access.namespaceSelector, gpu-tier=a100, does not match the namespace's labels); ask an admin for access or choose another type."
  )
  t.equal(refused.status.phase, 'Failed')
})

t.test('access: absent, empty and expression selectors', async (t) => {
  const cases: Array<[string, Record<string, unknown> | undefined, Record<string, string>, boolean]> = [
    ['no access', undefined, {}, true],
    ['empty selector', {}, {}, true],
    ['In matches', { matchExpressions: [{ key: 'gpu-tier', operator: 'In', values: ['a100', 'h100'] }] }, { 'gpu-tier': 'h100' }, true],
    ['In without the key', { matchExpressions: [{ key: 'gpu-tier', operator: 'In', values: ['a100'] }] }, {}, false],
    ['NotIn without the key', { matchExpressions: [{ key: 'gpu-tier', operator: 'NotIn', values: ['a100'] }] }, {}, true],
    [
      'NotIn with the value',
      { matchExpressions: [{ key: 'gpu-tier', operator: 'NotIn', values: ['a100'] }] },
      { 'gpu-tier': 'a100' },
      false
    ],
    ['Exists', { matchExpressions: [{ key: 'gpus', operator: 'Exists' }] }, { gpus: '' }, true],
    ['DoesNotExist', { matchExpressions: [{ key: 'frozen', operator: 'DoesNotExist' }] }, { frozen: 'yes' }, false],
    [
      'In with no values (stored past the CRD)',
      { matchExpressions: [{ key: 'gpu-tier', operator: 'In', values: [] }] },
      { 'gpu-tier': 'a' },
      false
    ]
  ]
  for (const [what, selector, labels, runs] of cases) {
    const type = selector === undefined ? A100 : { ...A100, access: { namespaceSelector: selector } }
    const got = answer({ type, labels })
    t.equal(podOf(got) !== undefined, runs, what)
    if (!runs) t.equal(condition(got.status, 'SpecValid')?.reason, 'TypeNotPermitted', `${what}: the reason`)
  }
})

t.test('access: a namespace the request does not show admits nothing', async (t) => {
  const got = answer({ type: tier('a100'), related: [instanceType(tier('a100'))] })
  t.equal(podOf(got), undefined)
  t.match(condition(got.status, 'SpecValid')?.message, "the namespace's labels are not observed yet")
})

t.test('access revoked: a running Pod is kept, UpToDate says AccessRevoked; stop still stops', async (t) => {
  const running = observedPod(podOf(answer({ type: tier('a100'), labels: { 'gpu-tier': 'a100' } })) as KubeObject, POD_STATUS.running)
  const got = answer({ type: tier('a100'), labels: { 'gpu-tier': 'h100' }, pod: running })
  t.ok(podOf(got), 'the running Pod is answered as it is')
  t.strictSame(brief(condition(got.status, 'UpToDate')), { status: 'False', reason: 'AccessRevoked' })
  t.equal(
    condition(got.status, 'UpToDate')?.message,
    'InstanceType a100 no longer admits namespace team-a; Pod ws keeps running, and the next start is refused.'
  )
  t.equal(got.status.phase, 'Running')
  const stopped = sync(
    request({
      parent: instance({ ...accelerated, stop: true }),
      children: [running],
      related: [instanceType(tier('a100')), namespaceObject({ 'gpu-tier': 'h100' })]
    }),
    NOW
  )
  t.equal(podOf(stopped), undefined, 'stop removes the Pod')
})

t.test('queue: the Pod carries the LocalQueue and priority class labels; a type without one carries neither', async (t) => {
  const pod = podOf(answer({ type: queued({ workloadPriorityClassName: 'interactive' }) })) as KubeObject
  t.equal(pod.metadata.labels?.['kueue.x-k8s.io/queue-name'], 'gpu-a100')
  t.equal(pod.metadata.labels?.['kueue.x-k8s.io/priority-class'], 'interactive')
  t.equal((pod.spec as Record<string, unknown>).schedulingGates, undefined, 'no gate of its own: Kueue adds it')
  const plain = podOf(answer()) as KubeObject
  t.strictSame(
    Object.keys(plain.metadata.labels ?? {}).filter((k) => k.startsWith('kueue.x-k8s.io/')),
    [],
    'no Kueue label without spec.queue'
  )
  t.notOk(condition(answer().status, 'Admitted'), 'no Admitted condition without a queue')
  t.strictSame(brief(condition(answer({ type: queued() }).status, 'Admitted')), { status: 'False', reason: 'NoPod' })
})

t.test("queue: Kueue's gate makes the Instance Queued; lifted, Admitted; what Kueue added never makes the Pod look changed", async (t) => {
  const type = queued()
  const gated = kueuePod(type, GATED, true)
  const waiting = answer({ type, pod: gated })
  const status = waiting.status
  t.equal(status.phase, 'Queued')
  t.equal(status.message, 'Pod ws is waiting for quota in LocalQueue gpu-a100.')
  t.strictSame(brief(condition(status, 'Admitted')), { status: 'False', reason: 'Queued' })
  t.strictSame(brief(condition(status, 'UpToDate')), { status: 'True', reason: 'UpToDate' })
  t.strictSame(
    podOf(waiting)?.metadata.annotations?.['worker.gpustack.ai/pod-hash'],
    gated.metadata.annotations?.['worker.gpustack.ai/pod-hash'],
    'the observed Pod is kept as it is'
  )
  t.notOk(condition(status, 'Evicted'), 'never evicted: no Evicted condition')
  const admitted = answer({ type, pod: kueuePod(type, POD_STATUS.running, false) })
  t.equal(admitted.status.phase, 'Running')
  t.strictSame(brief(condition(admitted.status, 'Admitted')), { status: 'True', reason: 'Admitted' })
  t.strictSame(brief(condition(admitted.status, 'UpToDate')), { status: 'True', reason: 'UpToDate' })
})

t.test("queue: a type's queue changed after the Pod was built applies at the next start", async (t) => {
  const pod = kueuePod(queued(), POD_STATUS.running, false)
  const got = answer({ type: { ...A100, queue: { localQueueName: 'gpu-other' } }, pod })
  t.strictSame(brief(condition(got.status, 'UpToDate')), { status: 'False', reason: 'InstanceTypeChanged' })
  t.ok(podOf(got), 'the running Pod is kept')
})

t.test('eviction: TerminationTarget makes Evicted True with Kueue reason, carried until a later Pod is admitted', async (t) => {
  const type = queued()
  const target = {
    type: 'TerminationTarget',
    status: 'True',
    reason: 'WorkloadEvictedDueToClusterQueueStopped',
    message: 'The ClusterQueue is stopped'
  }
  const evictedPod = kueuePod(type, { ...POD_STATUS.running, conditions: [...POD_STATUS.running.conditions, target] }, false, {
    deletionTimestamp: '2026-02-03T04:00:00Z'
  })
  const first = answer({ type, pod: evictedPod })
  const s1 = first.status
  t.equal(podOf(first), undefined, 'the deleted Pod is left to go')
  t.strictSame(brief(condition(s1, 'Evicted')), { status: 'True', reason: 'WorkloadEvictedDueToClusterQueueStopped' })
  t.match(condition(s1, 'Evicted')?.message, 'the node ports are kept')
  // The Pod gone: a fresh one is rendered; Evicted stays while it is queued.
  const second = answer({ type, status: s1 })
  t.ok(podOf(second), 'a fresh Pod')
  const queuedAgain = answer({ type, pod: kueuePod(type, GATED, true), status: second.status })
  const s3 = queuedAgain.status
  t.equal(s3.phase, 'Queued')
  t.strictSame(brief(condition(s3, 'Evicted')), { status: 'True', reason: 'WorkloadEvictedDueToClusterQueueStopped' })
  t.equal(condition(s3, 'Evicted')?.lastTransitionTime, condition(s1, 'Evicted')?.lastTransitionTime, 'the transition time is kept')
  const back = answer({ type, pod: kueuePod(type, POD_STATUS.running, false), status: s3 })
  const s4 = back.status
  t.strictSame(brief(condition(s4, 'Evicted')), { status: 'False', reason: 'Readmitted' })
  const again = answer({ type, pod: kueuePod(type, POD_STATUS.running, false), status: s4 })
  t.strictSame(again.status.conditions, s4.conditions, 'a later sync writes the same status')
})

t.test('eviction: a carried reason that is not a condition reason becomes Evicted', async (t) => {
  const previous = {
    conditions: [{ type: 'Evicted', status: 'True', reason: 'not a reason!', message: 'x', lastTransitionTime: '2026-01-01T00:00:00Z' }]
  }
  const got = answer({ type: queued(), status: previous })
  t.strictSame(brief(condition(got.status, 'Evicted')), { status: 'True', reason: 'Evicted' })
  t.notMatch(condition(got.status, 'Evicted')?.message, 'not a reason', 'the stored message is not carried')
})

t.test("stopping: a deleted Pod that Kueue's finalizer holds says what it waits for", async (t) => {
  const type = queued()
  const pod = kueuePod(type, POD_STATUS.running, false, { deletionTimestamp: '2026-02-03T04:00:00Z' })
  const got = sync(
    request({ parent: instance({ ...accelerated, stop: true }), children: [pod], related: [instanceType(type), namespaceObject()] }),
    NOW
  )
  const status = got.status
  t.equal(status.phase, 'Stopping')
  t.match(status.message, 'and for Kueue to release it (finalizer kueue.x-k8s.io/managed)')
})

t.test("a Pod Kueue queued by a LocalQueue of its own choosing (the namespace's 'default') says so", async (t) => {
  const pod = kueuePod(A100, GATED, true)
  pod.metadata.labels = { ...pod.metadata.labels, 'kueue.x-k8s.io/queue-name': 'default' }
  const got = answer({ pod })
  t.equal(got.status.phase, 'Queued')
  t.equal(got.status.message, 'Pod ws is waiting for quota in LocalQueue default.')
  t.notOk(condition(got.status, 'Admitted'), 'the type has no queue: no Admitted condition')
})
