/**
 * Entitlement and quota on a real node (docs/access.md): the real Kueue manager (built from
 * sigs.k8s.io/kueue, support/kueue.ts) gates the Pods of a queued InstanceType, the access policy
 * (metacontroller/instance-access-policy.yaml) refuses a namespace the type does not admit, and the
 * `gpuhooks-instance` driver plays Metacontroller while kubelet runs the admitted Pods.
 *
 * A ClusterQueue of 2 GPUs (HAMi's gpucores and gpumem-percentage covered beside them): three
 * one-GPU Instances give two Running and one Queued; stopping one admits the third;
 * `stopPolicy: HoldAndDrain` evicts the running ones, which report `Evicted` and come back on the
 * same node ports once it is lifted; a type changed afterwards gives `TypeNotPermitted`, no Pod,
 * and `AccessRevoked` on a running one; a LocalQueue that does not exist leaves the Instance Queued.
 *
 * The workload takes 5 seconds to shut down on SIGTERM, as a workspace saving its files does: the
 * hook reports `Evicted` from the evicted Pod it observes (Kueue's TerminationTarget condition),
 * and the driver syncs once a second, so a Pod gone within a second would leave no trace here
 * (Metacontroller syncs on the Pod's own update event; docs/access.md says what that means).
 */
import t from 'tap'
import { startNodeScenario } from './support/node-scenario.ts'
import { HAMI_TYPE, webInstance } from './support/node-workloads.ts'
import { HTTP_SERVER } from './support/node-probe.ts'
import { apply, createNamespaces, getJson as getJsonOf } from './support/kubectl.ts'
import { importImages } from './support/node-images.ts'
import { startKueue, KUEUE_API } from './support/kueue.ts'
import { condition } from './support/reads.ts'
import { join } from 'node:path'
import type { JsonObject } from '../support/merge.ts'

type Obj = any

const ROOT = join(import.meta.dirname, '..', '..')
const env = await startNodeScenario()
const { cluster, kube } = env
const image = (await importImages(env.node)).node
const NS = 'tenant-a'
const OUTSIDER = 'tenant-b'
const TYPE = 'a100'
const QUEUE = 'gpu-a100'
const driver = env.driver('gpuhooks-instance')

const EXAMPLES_NS = 'gpu-workspaces'
const kueue = await startKueue(cluster, kube, [NS, OUTSIDER, EXAMPLES_NS])
t.teardown(() => kueue.close())

const getJson = (args: string[]): Promise<Obj> => getJsonOf(cluster, args)
const instance = (name: string): Promise<Obj> => getJson(['instance', name, '-n', NS])
const patch = async (kind: string, name: string, body: JsonObject, namespace?: string): Promise<void> => {
  await cluster.kubectl([
    'patch',
    kind,
    name,
    ...(namespace !== undefined ? ['-n', namespace] : []),
    '--type=merge',
    '-p',
    JSON.stringify(body)
  ])
}

/** Syncs every named Instance, round after round as watch events would, until `until` holds on all of them. */
async function driveAll(names: readonly string[], what: string, until: (all: Obj[]) => boolean, timeoutMs = 180_000): Promise<Obj[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    for (const name of names) await driver.syncOnce({ namespace: NS, name })
    const all = await Promise.all(names.map(instance))
    if (process.env['KUEUE_DEBUG'] !== undefined) {
      const pods = await getJson(['pods', '-n', NS])
      process.stderr.write(
        JSON.stringify({
          instances: all.map((i) => [
            i.metadata.name,
            i.status?.phase,
            i.status?.conditions?.map((c: Obj) => `${c.type}=${c.status}/${c.reason}`)
          ]),
          pods: pods.items.map((p: Obj) => [
            p.metadata.name,
            p.metadata.deletionTimestamp,
            p.status?.conditions?.map((c: Obj) => `${c.type}=${c.status}/${c.reason}`)
          ])
        }) + '\n'
      )
    }
    if (until(all)) return all
    if (Date.now() > deadline) {
      throw new Error(
        `not ${what} after ${timeoutMs} ms: ${JSON.stringify(all.map((i) => [i.metadata.name, i.status?.phase, i.status?.message]))}`
      )
    }
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}
const phases = (all: Obj[]): string[] => all.map((i) => String(i.status?.phase)).sort()
const nodePortOf = (i: Obj): number => (i.status.ports as Obj[]).find((p) => p.port === 8080)?.nodePort

const queuedType: JsonObject = {
  ...HAMI_TYPE,
  metadata: { name: TYPE },
  spec: {
    ...(HAMI_TYPE.spec as JsonObject),
    access: { namespaceSelector: { matchLabels: { 'gpu-tier': 'a100' } } },
    queue: { localQueueName: QUEUE }
  }
}
const EXIT_AT_ONCE = "process.on('SIGTERM', () => process.exit(0))"
const LINGERING_SERVER = HTTP_SERVER.replace(EXIT_AT_ONCE, "process.on('SIGTERM', () => setTimeout(() => process.exit(0), 5000))")
if (LINGERING_SERVER === HTTP_SERVER) throw new Error('the HTTP server no longer exits on SIGTERM as this file expects')
const web = (name: string, spec: JsonObject = {}): JsonObject =>
  webInstance(NS, name, image, { type: TYPE, command: ['node', '-e', LINGERING_SERVER], ...spec })

t.before(async () => {
  await createNamespaces(cluster, [NS, OUTSIDER])
  await cluster.kubectl(['label', 'namespace', NS, 'gpu-tier=a100'])
  await cluster.kubectl(['apply', '-f', join(ROOT, 'metacontroller', 'instance-access-policy.yaml')])
  await apply(cluster, queuedType)
  const kueueObject = (kind: string, name: string, spec: JsonObject, namespace?: string): JsonObject => ({
    apiVersion: KUEUE_API,
    kind,
    metadata: { name, ...(namespace !== undefined ? { namespace } : {}) },
    spec
  })
  await apply(cluster, kueueObject('ResourceFlavor', 'a100', {}))
  await apply(
    cluster,
    kueueObject('ClusterQueue', 'a100', {
      namespaceSelector: {},
      resourceGroups: [
        {
          coveredResources: ['cpu', 'memory', 'nvidia.com/gpu', 'nvidia.com/gpucores', 'nvidia.com/gpumem-percentage'],
          flavors: [
            {
              name: 'a100',
              resources: [
                { name: 'cpu', nominalQuota: '8' },
                { name: 'memory', nominalQuota: '8Gi' },
                { name: 'nvidia.com/gpu', nominalQuota: 2 },
                { name: 'nvidia.com/gpucores', nominalQuota: 200 },
                { name: 'nvidia.com/gpumem-percentage', nominalQuota: 200 }
              ]
            }
          ]
        }
      ]
    })
  )
  await apply(cluster, kueueObject('LocalQueue', QUEUE, { clusterQueue: 'a100' }, NS))
  // The policy's binding takes effect once the API server has loaded it and the InstanceType.
  await waitForPolicy()
})

/** Until the access policy refuses a dry-run Instance in the outsider namespace. */
async function waitForPolicy(): Promise<void> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const probe = webInstance(OUTSIDER, 'probe', image, { type: TYPE })
    const res = await apply(cluster, probe, { args: ['--dry-run=server'], allowFail: true })
    if (res.code !== 0) return
    if (Date.now() > deadline) throw new Error('the access policy did not refuse the outsider namespace within 60 s')
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}

t.test('the access policy refuses a namespace the type does not admit, at kubectl apply', async (t) => {
  const res = await apply(cluster, webInstance(OUTSIDER, 'denied', image, { type: TYPE }), { allowFail: true })
  t.not(res.code, 0, 'kubectl apply fails')
  t.match(
    res.stderr,
    `InstanceType ${TYPE} is not available in namespace ${OUTSIDER} (its spec.access.namespaceSelector does not match the namespace's labels)`
  )
  const listed = await getJson(['instances', '-n', OUTSIDER])
  t.same(listed.items, [], 'nothing was stored')
  const allowed = await apply(cluster, web('allowed-probe'), { args: ['--dry-run=server'], allowFail: true })
  t.equal(allowed.code, 0, `the labelled namespace is admitted: ${allowed.stderr}`)
})

t.test('two GPUs of quota: two Instances run, the third is Queued until a stop frees quota', async (t) => {
  const names = ['one', 'two', 'three']
  for (const name of names.slice(0, 2)) await apply(cluster, web(name))
  await driveAll(names.slice(0, 2), 'both Running', (all) => all.every((i) => i.status?.phase === 'Running'))
  await apply(cluster, web('three'))
  const all = await driveAll(names, 'two Running and one Queued', (all) => phases(all).join() === 'Queued,Running,Running')
  const third = all[2]
  t.equal(third.status.phase, 'Queued', 'the third waits')
  t.match(third.status.message, `waiting for quota in LocalQueue ${QUEUE}`)
  t.match(condition(third, 'Admitted'), { status: 'False', reason: 'Queued' })
  t.match(condition(all[0], 'Admitted'), { status: 'True', reason: 'Admitted' })
  const pod = await getJson(['pod', 'three', '-n', NS])
  t.ok(
    (pod.spec.schedulingGates ?? []).some((g: Obj) => g.name === 'kueue.x-k8s.io/admission'),
    "Kueue's admission gate holds the Pod"
  )
  t.equal(pod.metadata.labels['kueue.x-k8s.io/queue-name'], QUEUE, 'the Pod joined the LocalQueue')
  t.equal(pod.metadata.labels['kueue.x-k8s.io/managed'], 'true', 'Kueue manages it')
  t.match(pod.metadata.finalizers, ['kueue.x-k8s.io/managed'])
  t.match(condition(third, 'UpToDate'), { status: 'True' }, 'what Kueue added does not make the Pod look changed')

  await patch('instance', 'one', { spec: { stop: true } }, NS)
  const after = await driveAll(names, 'one Stopped, two and three Running', (all) => phases(all).join() === 'Running,Running,Stopped')
  t.equal(after[0].status.phase, 'Stopped')
  t.match(condition(after[2], 'Admitted'), { status: 'True' }, 'the third is admitted once the quota is free')
})

t.test('HoldAndDrain evicts the running Instances; lifted, they come back on the same node ports', async (t) => {
  const names = ['two', 'three']
  const before = await Promise.all(names.map(instance))
  const ports = before.map(nodePortOf)
  await patch('clusterqueue', 'a100', { spec: { stopPolicy: 'HoldAndDrain' } })
  const evicted = await driveAll(names, 'Evicted and Queued again', (all) =>
    all.every((i) => i.status?.phase === 'Queued' && condition(i, 'Evicted')?.status === 'True')
  )
  for (const i of evicted) {
    t.match(condition(i, 'Evicted'), { status: 'True', reason: /^WorkloadEvicted/ }, `${i.metadata.name}: Kueue's reason`)
    t.match(condition(i, 'Admitted'), { status: 'False', reason: 'Queued' })
  }
  t.same(evicted.map(nodePortOf), ports, 'the node ports are kept while evicted')
  await patch('clusterqueue', 'a100', { spec: { stopPolicy: 'None' } })
  const back = await driveAll(names, 'Running again', (all) => all.every((i) => i.status?.phase === 'Running'))
  t.same(back.map(nodePortOf), ports, 'the same node ports')
  for (const i of back) t.match(condition(i, 'Evicted'), { status: 'False', reason: 'Readmitted' })
})

t.test('a type changed afterwards: TypeNotPermitted and no Pod; a running Pod kept with AccessRevoked', async (t) => {
  await patch('instancetype', TYPE, { spec: { access: { namespaceSelector: { matchLabels: { 'gpu-tier': 'h100' } } } } })
  await patch('instance', 'one', { spec: { stop: false } }, NS)
  const [one, two] = await driveAll(
    ['one', 'two'],
    'refused and revoked',
    ([one, two]) => condition(one, 'SpecValid')?.reason === 'TypeNotPermitted' && condition(two, 'UpToDate')?.reason === 'AccessRevoked'
  )
  t.match(condition(one, 'SpecValid'), {
    status: 'False',
    message: new RegExp(`InstanceType ${TYPE} is not available in namespace ${NS}.*gpu-tier=h100`)
  })
  t.equal(one.status.phase, 'Failed')
  const pod = await cluster.kubectl(['get', 'pod', 'one', '-n', NS], { allowFail: true })
  t.not(pod.code, 0, 'no Pod for the refused start')
  t.equal(two.status.phase, 'Running', 'the running one keeps running')
  t.match(condition(two, 'UpToDate'), { status: 'False', reason: 'AccessRevoked' })
  await patch('instancetype', TYPE, { spec: { access: { namespaceSelector: { matchLabels: { 'gpu-tier': 'a100' } } } } })
})

t.test('a LocalQueue that does not exist leaves the Instance Queued, never a lost Pod', async (t) => {
  await apply(cluster, {
    ...queuedType,
    metadata: { name: 'nowhere' },
    spec: { ...(queuedType.spec as JsonObject), queue: { localQueueName: 'missing' } }
  })
  await apply(cluster, web('lost', { type: 'nowhere' }))
  const [lost] = await driveAll(['lost'], 'Queued', ([i]) => i.status?.phase === 'Queued')
  t.match(lost.status.message, 'waiting for quota in LocalQueue missing')
  t.match(condition(lost, 'Admitted'), { status: 'False', reason: 'Queued' })
  const pod = await getJson(['pod', 'lost', '-n', NS])
  t.equal(pod.metadata.labels['kueue.x-k8s.io/queue-name'], 'missing')
})

t.test('the examples in deploy/examples/kueue/ are accepted by Kueue and run an Instance', async (t) => {
  await createNamespaces(cluster, [EXAMPLES_NS])
  await cluster.kubectl(['label', 'namespace', EXAMPLES_NS, 'gpu-tier=a100'])
  const dir = join(ROOT, 'deploy', 'examples', 'kueue')
  await cluster.kubectl(['apply', '-f', join(dir, 'whole-gpu.yaml'), '-f', join(dir, 'hami.yaml')])
  for (const name of ['gpu-a100', 'gpu-hami']) {
    await cluster.kubectl(['wait', '--for=condition=Active', `clusterqueue/${name}`, '--timeout=60s'])
    t.pass(`ClusterQueue ${name} is Active: its flavors exist and its resources are well-formed`)
  }
  const name = 'example'
  await apply(
    cluster,
    webInstance(EXAMPLES_NS, name, image, { type: 'hami-queued', resources: { cpu: '100m', memory: '128Mi', accelerator: { count: 1 } } })
  )
  const driveExample = async (): Promise<Obj> => {
    const deadline = Date.now() + 180_000
    for (;;) {
      await driver.syncOnce({ namespace: EXAMPLES_NS, name })
      const got = await getJson(['instance', name, '-n', EXAMPLES_NS])
      if (got.status?.phase === 'Running') return got
      if (Date.now() > deadline) throw new Error(`the example Instance is not Running: ${JSON.stringify(got.status)}`)
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
  }
  const running = await driveExample()
  t.match(condition(running, 'Admitted'), { status: 'True' }, "admitted by the HAMi ClusterQueue, HAMi's shares covered")
  const workloads = await getJson(['workloads', '-n', EXAMPLES_NS])
  t.equal(workloads.items.length, 1, 'one Workload for the Pod')
  t.equal(workloads.items[0]?.status?.admission?.clusterQueue, 'gpu-hami')
  await cluster.kubectl(['delete', 'pods', '--all', '-n', EXAMPLES_NS, '--wait=true', '--timeout=120s'])
})

t.test('the Pods go while Kueue runs, so that no finalizer of its outlives it', async (t) => {
  await cluster.kubectl(['delete', 'pods', '--all', '-n', NS, '--wait=true', '--timeout=120s'])
  t.same((await getJson(['pods', '-n', NS])).items, [], 'every Pod is gone')
})
