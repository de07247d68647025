/**
 * The idle stop's hook side on a real API server (docs/lifecycle.md): the test plays the agent.
 * An InstanceType with a lifecycle of seconds (through the type, as any admin would write it),
 * an Instance whose Pod the test stamps Running; the `gpuhooks-instance` driver plays
 * Metacontroller and creates the InstanceActivity; the InstanceActivity's status written as the
 * agent's service account (impersonation) drives StopScheduled, then `spec.stop.requested`. The
 * ValidatingAdmissionPolicy `gpuhooks-instance-activity-writers` refuses a tenant's status write
 * and a spec write by anyone but Metacontroller's identity (here the driver's, substituted into
 * the file as the chart substitutes its value).
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { eventually } from './support/env.ts'
import { startScenario } from './support/scenario.ts'
import { apply } from './support/kubectl.ts'
import { condition, reader, refs } from './support/reads.ts'
import type { JsonObject } from '../support/merge.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const env = await startScenario()
const { kube, cluster } = env
const driver = env.driver('gpuhooks-instance')
const NS = 'idle'
const NAME = 'lab'
const AGENT = 'system:serviceaccount:gpuhooks:gpuhooks-workload-agent'
const TENANT = 'alice'

type Obj = any
const { get, must } = reader<Obj>(kube)
const activityRef = { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instanceactivities', namespace: NS, name: NAME }
const sync = () => driver.syncOnce({ namespace: NS, name: NAME })
const kubectlAs = (as: string, args: string[]) => cluster.kubectl([`--as=${as}`, ...args], { allowFail: true })
const patchActivity = (as: string, patch: JsonObject, status: boolean) =>
  kubectlAs(as, [
    'patch',
    'instanceactivity',
    NAME,
    '-n',
    NS,
    ...(status ? ['--subresource=status'] : []),
    '--type=merge',
    '-p',
    JSON.stringify(patch)
  ])

t.before(async () => {
  await cluster.kubectl(['create', 'namespace', NS])
  await cluster.kubectl(['wait', '--for=create', '-n', NS, 'serviceaccount/default', '--timeout=60s'])
  // RBAC lets the agent and the tenant write; the policy is what holds the tenant back.
  await apply(cluster, {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: { name: 'activity-writers' },
    rules: [
      {
        apiGroups: ['worker.gpustack.ai'],
        resources: ['instanceactivities', 'instanceactivities/status'],
        verbs: ['get', 'list', 'patch', 'update']
      }
    ]
  })
  for (const [name, subject] of [
    ['agent', { kind: 'ServiceAccount', name: 'gpuhooks-workload-agent', namespace: 'gpuhooks' }],
    ['tenant', { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: TENANT }]
  ] as const) {
    await apply(cluster, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `activity-writers-${name}` },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'activity-writers' },
      subjects: [subject]
    })
  }
  const whoami = await cluster.kubectl(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}'])
  const policy = readFileSync(join(ROOT, 'metacontroller', 'instance-activity-policy.yaml'), 'utf8').replaceAll(
    'system:serviceaccount:metacontroller:metacontroller',
    whoami.stdout.trim()
  )
  await cluster.kubectl(['apply', '-f', '-'], { input: policy })
  await apply(cluster, {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'InstanceType',
    metadata: { name: 'idle-seconds' },
    spec: { families: ['Whole'], lifecycle: { idleStopAfter: '20s', stopNotice: '3s', maxPostpone: '0' } }
  })
})

t.test('the CRD refuses a malformed lifecycle, naming the field', async (t) => {
  const res = await apply(
    cluster,
    {
      apiVersion: 'worker.gpustack.ai/v1alpha1',
      kind: 'InstanceType',
      metadata: { name: 'bad' },
      spec: { lifecycle: { idleStopAfter: '2 hours' } }
    },
    { allowFail: true }
  )
  t.not(res.code, 0)
  t.match(res.stderr, 'spec.lifecycle.idleStopAfter must be a positive duration')
})

t.test('the InstanceActivity appears for the running Pod; the agent’s observation drives the notice, then the stop', async (t) => {
  await apply(cluster, {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name: NAME, namespace: NS },
    spec: { type: 'idle-seconds', image: 'busybox:1.36' }
  })
  await driver.settle({ namespace: NS, name: NAME }, { maxPasses: 3 })
  t.equal(await get(activityRef), undefined, 'no InstanceActivity before the Pod runs')

  // The kubelet's part: the Pod started ten minutes ago and is Running.
  const pod = await must(refs.pod(NS, NAME))
  const started = new Date(Date.now() - 600_000).toISOString().replace(/\.\d+Z$/, 'Z')
  pod.status = {
    phase: 'Running',
    startTime: started,
    conditions: [
      { type: 'PodScheduled', status: 'True' },
      { type: 'Ready', status: 'True' }
    ]
  }
  await kube.updateStatus(refs.pod(NS, NAME), pod)
  await driver.settle({ namespace: NS, name: NAME }, { maxPasses: 3 })
  const instance = await must(refs.instance(NS, NAME))
  const activity = await must(activityRef)
  t.match(activity.spec, { instanceUID: instance.metadata.uid, podName: NAME, podUID: pod.metadata.uid, idleThreshold: 5 })
  t.same(
    activity.metadata.ownerReferences.map((r: Obj) => [r.kind, r.uid]),
    [['Instance', instance.metadata.uid]]
  )
  t.match(condition(instance, 'StopScheduled'), { status: 'False', reason: 'ActivityUnknown' })

  const refused = await eventually('the policy to refuse a tenant status write', async () => {
    const res = await patchActivity(TENANT, { status: { podUID: pod.metadata.uid } }, true)
    return res.code !== 0 && /may not/.test(res.stderr) ? res : undefined
  })
  t.match(refused.stderr, `only ${AGENT} (the gpuhooks agent) may write the status of an InstanceActivity; ${TENANT} may not`)
  const spec = await patchActivity(TENANT, { spec: { stop: { requested: true, reason: 'Idle', at: started } } }, false)
  t.not(spec.code, 0, 'a tenant may not request a stop')
  t.match(spec.stderr, '(Metacontroller) may create an InstanceActivity or write its spec')
  const agentSpec = await patchActivity(AGENT, { spec: { idleThreshold: 100 } }, false)
  t.not(agentSpec.code, 0, 'nor may the agent write the spec')

  const observed = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
  const status = {
    podUID: pod.metadata.uid,
    observedTime: observed,
    roundSeconds: 60,
    source: 'test',
    conditions: [{ type: 'Observed', status: 'True', reason: 'Observed', message: 'a series', lastTransitionTime: observed }]
  }
  const written = await patchActivity(AGENT, { status }, true)
  t.equal(written.code, 0, `the agent writes the status: ${written.stderr}`)

  await sync()
  const noticed = await must(refs.instance(NS, NAME))
  t.match(condition(noticed, 'StopScheduled'), {
    status: 'True',
    reason: 'Idle',
    message: new RegExp(`No GPU activity since ${started}; stops at .* unless used \\(InstanceType idle-seconds allows no postponing\\)`)
  })
  const noticeTime = (await must(activityRef)).spec.noticeTime
  t.ok(typeof noticeTime === 'string', 'the notice is recorded in the spec')
  t.equal(noticed.status.lifecycle.idleSince, started)
  t.equal(Date.parse(noticed.status.lifecycle.stopAt) - Date.parse(noticeTime), 3000, 'the stop comes stopNotice after the notice')
  t.equal((await must(activityRef)).spec.stop, undefined, 'not yet requested')

  const stopped = await eventually(
    'the stop to be requested',
    async () => {
      await sync()
      const a = await must(activityRef)
      return a.spec.stop?.requested === true ? a : undefined
    },
    30_000
  )
  t.equal(stopped.spec.stop.reason, 'Idle')
  t.ok(Date.parse(stopped.spec.stop.at) >= Date.parse(noticeTime) + 3000, 'never before the notice ran its course')
  const last = await must(refs.instance(NS, NAME))
  t.match(last.status.lifecycle, { stopReason: 'Idle', stopRequested: true })
  t.match(condition(last, 'StopScheduled'), { status: 'True', reason: 'Idle', message: /The stop came due at/ })

  // The agent's act: spec.stop and the annotation; the InstanceActivity goes with the Pod.
  await cluster.kubectl([
    'patch',
    'instance',
    NAME,
    '-n',
    NS,
    '--type=merge',
    '-p',
    JSON.stringify({ metadata: { annotations: { 'gpustack.ai/stopped-by': `Idle ${stopped.spec.stop.at}` } }, spec: { stop: true } })
  ])
  await driver.settle({ namespace: NS, name: NAME }, { maxPasses: 3 })
  const off = await must(refs.instance(NS, NAME))
  t.same(off.status.lifecycle, { stoppedBy: { reason: 'Idle', at: stopped.spec.stop.at } })
  t.match(condition(off, 'StopScheduled'), { status: 'False', reason: 'StoppedByLifecycle' })
  t.equal(await get(activityRef), undefined, 'the InstanceActivity went with the Pod')
})
