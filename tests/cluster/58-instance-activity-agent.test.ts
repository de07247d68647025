// The agent's activity controller on a real API server (docs/workload.md, "Instance activity"),
// as its ServiceAccount under exactly deploy/agent-rbac/infrastructure-cluster.yaml and the
// admission policy metacontroller/agent-instance-policy.yaml, against a loopback stand-in for
// Prometheus's /api/v1/query: it writes InstanceActivity status (Observed, NoSeries, and
// PrometheusUnreachable while the stand-in is down), carries out a requested stop once (spec.stop,
// the annotation gpustack.ai/stopped-by, the Event IdleStopped), leaves a request for an old Pod
// alone (PodChanged), and may not write anything more to an Instance. The InstanceActivities are
// written by the test as the Instance hook would (that hook is tested on its own). The agent runs
// for Instances alone (CELL_POOLS=false) on an API server without the cells.kubeswift.io CRDs: it
// turns Ready and starts no cell pool informer.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import t from 'tap'
import { startAgentAsServiceAccount } from './support/agent.ts'
import { startCluster } from './support/cluster.ts'
import { eventually, installCrds } from './support/env.ts'
import { KubeClient, loadKubeconfig, type ResourceRef } from './support/kube.ts'
import { binariesDir } from './support/workload-cluster.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

const ROOT = join(import.meta.dirname, '..', '..')
const AGENT_NS = 'gpuhooks'
const AS = `system:serviceaccount:${AGENT_NS}:gpuhooks-workload-agent`
const NS = 'team'
const WORKER = 'worker.gpustack.ai/v1alpha1'

// The stand-in Prometheus: the utilization of each Instance by name; down: connections reset.
const uids = new Map<string, string>()
const utilization = new Map<string, number>()
let down = false
let queries = 0
const prometheus = createServer((req, res) => {
  if (down) {
    req.socket.destroy()
    return
  }
  queries += 1
  const result = [...uids.entries()]
    .filter(([name]) => utilization.has(name))
    .map(([name, uid]) => ({
      metric: { namespace: NS, instance_name: name, instance_uid: uid },
      value: [Date.now() / 1000, String(utilization.get(name))]
    }))
  res
    .writeHead(200, { 'content-type': 'application/json' })
    .end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }))
})
await new Promise<void>((resolve) => prometheus.listen(0, '127.0.0.1', resolve))
t.teardown(() => {
  prometheus.closeAllConnections()
  prometheus.close()
})

const cluster = await startCluster({ binDir: binariesDir() })
const kube = new KubeClient(loadKubeconfig(cluster.kubeconfig))
t.teardown(async () => {
  kube.close()
  await cluster.stop()
})
await installCrds(
  cluster,
  ['instances', 'instanceactivities'].map((plural) => join(ROOT, 'crds', `${plural}.worker.gpustack.ai.yaml`))
)
await cluster.kubectl(['create', 'namespace', AGENT_NS])
await cluster.kubectl(['create', 'namespace', NS])
await cluster.kubectl(['apply', '-f', join(ROOT, 'deploy', 'agent-rbac', 'infrastructure-cluster.yaml')])
await cluster.kubectl(['apply', '-f', join(ROOT, 'metacontroller', 'agent-instance-policy.yaml')])

const instanceRef = (name?: string): ResourceRef => ({ apiVersion: WORKER, resource: 'instances', namespace: NS, name })
const activityRef = (name?: string): ResourceRef => ({ apiVersion: WORKER, resource: 'instanceactivities', namespace: NS, name })
/** An Instance, its Pod (never scheduled: only its uid matters) and its InstanceActivity with `spec` added. */
async function workspace(name: string, spec: Loose = {}): Promise<{ uid: string; podUID: string }> {
  const instance = (
    await kube.create(instanceRef(), {
      apiVersion: WORKER,
      kind: 'Instance',
      metadata: { name, namespace: NS, annotations: { 'team.example/owner': 'ana' } },
      spec: { type: 'a100', image: 'quay.io/jupyter/base-notebook:2025-01-01' }
    })
  ).body as Loose
  const uid = String(instance.metadata.uid)
  uids.set(name, uid)
  const pod = (
    await kube.create(
      { apiVersion: 'v1', resource: 'pods', namespace: NS },
      { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS }, spec: { containers: [{ name: 'main', image: 'x' }] } }
    )
  ).body as Loose
  const podUID = String(pod.metadata.uid)
  await kube.create(activityRef(), {
    apiVersion: WORKER,
    kind: 'InstanceActivity',
    metadata: {
      name,
      namespace: NS,
      ownerReferences: [{ apiVersion: WORKER, kind: 'Instance', name, uid, controller: true, blockOwnerDeletion: true }]
    },
    spec: { instanceUID: uid, podName: name, podUID, idleThreshold: 5, ...spec }
  })
  return { uid, podUID }
}

utilization.set('busy', 60)
utilization.set('stopme', 0)
const busy = await workspace('busy')
await workspace('quiet')

// The agent's credentials: a token of its ServiceAccount, nothing else.
const agent = await startAgentAsServiceAccount(cluster, AGENT_NS, {
  CELL_POOLS: 'false',
  PROMETHEUS_URL: `http://127.0.0.1:${(prometheus.address() as AddressInfo).port}`,
  ACTIVITY_STOPS: 'true',
  ACTIVITY_ROUND_SECONDS: '5',
  ACTIVITY_STATUS_REFRESH_SECONDS: '10'
})
t.teardown(() => agent.stop())

function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  return eventually(what, check, timeoutMs, () => `agent log:\n${agent.logTail()}`)
}
const activity = async (name: string): Promise<Loose> => (await kube.get(activityRef(name))).body
const observed = (a: Loose): Loose => (a.status?.conditions ?? []).find((c: Loose) => c.type === 'Observed')

t.test('without the cells.kubeswift.io CRDs and CELL_POOLS=false: Ready, and no cell pool informer', async (t) => {
  t.notOk(
    (await kube.list({ apiVersion: 'apiextensions.k8s.io/v1', resource: 'customresourcedefinitions' })).body.some((crd: Loose) =>
      String(crd.metadata.name).endsWith('.cells.kubeswift.io')
    )
  )
  const ready = await until('/readyz 200', async () => {
    const answer = await fetch(`http://127.0.0.1:${agent.port}/readyz`).catch(() => undefined)
    return answer?.status === 200 ? answer.json() : undefined
  })
  t.match(ready, { status: 'ready' })
  const log = agent.logTail(1_000_000)
  t.match(log, /"cellPools":false/)
  t.notMatch(log, /"informer":"(cellnodesets|cellinfrastructures|resourceslices|resourceclaims)"/, 'no cell pool informer')
})

t.test('the status: activity above the threshold, no series, one query per round', async (t) => {
  const a = await until('busy observed', async () => {
    const a = await activity('busy')
    return observed(a)?.reason === 'Observed' ? a : undefined
  })
  t.match(a.status, {
    podUID: busy.podUID,
    roundSeconds: 10,
    source: /^http:\/\/127\.0\.0\.1:\d+ max by \(namespace, instance_name, instance_uid\)/
  })
  t.equal(a.status.lastActiveTime, a.status.observedTime, 'active this round')
  const q = await until('quiet has no series', async () => {
    const q = await activity('quiet')
    return observed(q)?.reason === 'NoSeries' ? q : undefined
  })
  t.equal(observed(q).status, 'False')
  t.equal(q.status.lastActiveTime, undefined, 'no activity made up')
  const rounds = agent
    .logTail(100000)
    .split('\n')
    .filter((l) => l.includes('"msg":"activity round"')).length
  t.ok(rounds >= 1 && queries <= rounds + 1, `one query per round (${queries} queries, ${rounds} rounds logged)`)
})

t.test('a requested stop: spec.stop, the annotation and the Event, once', async (t) => {
  const { uid } = await workspace('stopme', {
    stop: { requested: true, reason: 'Idle', at: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }
  })
  const stopped = await until('stopme stopped', async () => {
    const i = (await kube.get(instanceRef('stopme'))).body as Loose
    return i.spec.stop === true ? i : undefined
  })
  t.equal(stopped.metadata.uid, uid)
  t.match(stopped.metadata.annotations, { 'team.example/owner': 'ana', 'gpustack.ai/stopped-by': /^Idle \d{4}-\d\d-\d\dT[\d:]+Z$/ })
  const events = await until('the Event', async () => {
    const list = (await kube.list({ apiVersion: 'v1', resource: 'events', namespace: NS })).body.filter(
      (e: Loose) => e.involvedObject?.name === 'stopme' && e.reason === 'IdleStopped'
    )
    return list.length > 0 ? list : undefined
  })
  t.match(events[0], { type: 'Normal', involvedObject: { kind: 'Instance', uid }, source: { component: 'gpuhooks-workload-agent' } })
  // The tenant starts it again while the request is still there: it is not stopped again.
  await kube.patch(instanceRef('stopme'), { spec: { stop: false } }, 'merge')
  const seen = queries
  await until('two more rounds', async () => (queries >= seen + 2 ? true : undefined))
  t.equal(((await kube.get(instanceRef('stopme'))).body as Loose).spec.stop, false, 'the request was carried out already')
})

t.test('a request for an old Pod is ignored: PodChanged, the Instance runs', async (t) => {
  await workspace('oldpod', { podUID: 'an-old-pod-uid', stop: { requested: true, reason: 'MaxRunDuration', at: '2026-01-01T00:00:00Z' } })
  await until('PodChanged', async () => (observed(await activity('oldpod'))?.reason === 'PodChanged' ? true : undefined))
  t.not(((await kube.get(instanceRef('oldpod'))).body as Loose).spec.stop, true)
})

t.test('Prometheus down: Observed False, PrometheusUnreachable, and the observation kept as it was', async (t) => {
  const before = await activity('busy')
  down = true
  const a = await until('unreachable', async () => {
    const a = await activity('busy')
    return observed(a)?.reason === 'PrometheusUnreachable' ? a : undefined
  })
  t.equal(observed(a).status, 'False')
  t.ok(Date.parse(a.status.observedTime) >= Date.parse(before.status.observedTime), 'observedTime not advanced past what was seen')
  t.equal(a.status.lastActiveTime, a.status.observedTime, 'the last activity is what was observed, nothing more')
  down = false
  await until('observed again', async () => (observed(await activity('busy'))?.reason === 'Observed' ? true : undefined))
})

t.test('the agent may write nothing more to an Instance, nor any spec of an InstanceActivity', async (t) => {
  await workspace('guarded')
  const as = async (args: string[]): Promise<{ code: number; stderr: string }> =>
    cluster.kubectl([...args, `--as=${AS}`, '-n', NS], { allowFail: true })
  const patch = (body: unknown, type = 'merge'): Promise<{ code: number; stderr: string }> =>
    as(['patch', 'instance', 'guarded', `--type=${type}`, '-p', JSON.stringify(body)])
  for (const [what, body] of [
    ['another spec field', { spec: { image: 'evil:latest' } }],
    ['spec.stop false', { spec: { stop: false } }],
    ['another annotation', { metadata: { annotations: { 'team.example/owner': 'mallory' } } }],
    ['a label', { metadata: { labels: { x: 'y' } } }],
    ['a junk stopped-by', { spec: { stop: true }, metadata: { annotations: { 'gpustack.ai/stopped-by': 'because' } } }]
  ] as const) {
    const result = await patch(body)
    t.not(result.code, 0, `refused: ${what}`)
    t.match(result.stderr, /ValidatingAdmissionPolicy 'gpuhooks-agent-instance-stop'/, `${what}: by the policy`)
  }
  t.match((await as(['delete', 'instance', 'guarded'])).stderr, /forbidden/, 'no delete')
  t.not(
    (await as(['patch', 'instanceactivity', 'guarded', '--type=merge', '-p', '{"spec":{"idleThreshold":99}}'])).code,
    0,
    'no spec write'
  )
  t.not((await as(['create', 'deployment', 'x', '--image=x'])).code, 0, 'nothing else created')
  t.not((await as(['get', 'secrets'])).code, 0, 'no list of Secrets')
  const allowed = await patch({
    spec: { stop: true },
    metadata: { annotations: { 'gpustack.ai/stopped-by': 'Idle 2026-12-03T10:00:00Z' } }
  })
  t.equal(allowed.code, 0, `the stop itself passes: ${allowed.stderr}`)
  const guarded = (await kube.get(instanceRef('guarded'))).body as Loose
  t.match(guarded, {
    spec: { stop: true, image: 'quay.io/jupyter/base-notebook:2025-01-01' },
    metadata: { annotations: { 'team.example/owner': 'ana' } }
  })
})

t.test('the agent met no refusal of its own rights', async (t) => {
  const refused = agent
    .logTail(1_000_000)
    .split('\n')
    .filter((l) => /forbidden|HTTP-Code: 403/i.test(l))
  t.same(refused, [])
})
