// Isolation independent of namespace size (docs/isolation.md, "Inputs"), against a real API server:
// once a Namespace carries `gpustack.ai/holds-instances: "true"`, no isolation sync carries its
// Instances, however many it holds: a fresh customize relates none, and the answer cached from
// before the label relates them through a Namespace selector that the label makes match nothing.
// The driver plays Metacontroller through a transport that records every isolation hook request.
//
// Namespaces of the scenario:
//   control        one Instance, unlabelled at first: the first sync carries it and labels the
//                  namespace (which shows the count below can see Instances when they are sent);
//                  the label removed by hand is set again by the next sync
//   tenant-scale   created with the label; the 1st to the 200th Instance are created one by one,
//                  with a namespace sync after each
//   tenant-fresh   created without the label; the 1st to the 200th Instance are created one by
//                  one, each followed by a namespace sync where its watch event asks for one
import t from 'tap'
import { isObject, type JsonObject } from '../support/merge.ts'
import { Driver } from './support/driver.ts'
import { fetchTransport, type HookTransport } from './support/driver-protocol.ts'
import { startScenario } from './support/scenario.ts'
import { refs } from './support/reads.ts'

const CONTROLLER = 'gpuhooks-instance-isolation'
const POLICY = 'gpustack-instance-isolation'
const HOLDS_INSTANCES = 'gpustack.ai/holds-instances'
const INSTANCE_KEY = 'Instance.worker.gpustack.ai/v1alpha1'
const SETTING = { apiVersion: 'gpustack.ai/v1alpha1', resource: 'settings', name: 'instance-isolation-pod-cidrs' }
const INSTANCES = 200

const env = await startScenario({ webhooks: false })
const { kube } = env

/** One isolation hook request as the service received it. */
interface Call {
  path: string
  /** How many Instances the request carries in `related`. */
  instances: number
  /** Whether the customize answer relates Instances (customize calls only). */
  relatesInstances: boolean
}
const calls: Call[] = []

const instancesIn = (body: JsonObject): number => {
  const related = isObject(body.related) ? body.related : {}
  const instances = related[INSTANCE_KEY]
  return isObject(instances) ? Object.keys(instances).length : 0
}

/** fetch, recording each isolation request: how many Instances it carries, what customize relates. */
const recording: HookTransport = async (url, body, timeoutMs) => {
  const res = await fetchTransport(url, body, timeoutMs)
  const path = new URL(url).pathname
  if (path.startsWith('/hooks/isolation/')) {
    let relatesInstances = false
    if (path.endsWith('/customize')) {
      const answer = JSON.parse(res.body) as { relatedResources?: Array<{ resource?: string }> }
      relatesInstances = (answer.relatedResources ?? []).some((r) => r.resource === 'instances')
    }
    calls.push({ path, instances: instancesIn(body), relatesInstances })
  }
  return res
}

/** A driver with an empty customize cache, as Metacontroller is once its cached answer expired. */
const freshDriver = (): Driver =>
  new Driver({ kube, controller: env.driver(CONTROLLER).options.controller, hookBaseUrl: env.service.hooksUrl, transport: recording })

const meta = (o: JsonObject): JsonObject => (isObject(o.metadata) ? o.metadata : {})
const labelsOf = async (name: string): Promise<Record<string, string>> => {
  const m = meta((await kube.get(refs.namespace(name))).body)
  return isObject(m.labels) ? (m.labels as Record<string, string>) : {}
}

async function createInstance(namespace: string, name: string): Promise<void> {
  await kube.create(refs.instance(namespace, name), {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name, namespace },
    spec: { type: 'hami', image: 'busybox:1.36', command: ['sleep', 'infinity'] }
  })
}

await kube.create(SETTING, {
  apiVersion: 'gpustack.ai/v1alpha1',
  kind: 'Setting',
  metadata: { name: SETTING.name },
  value: '10.244.0.0/16'
})

t.test('the first sync that sees an Instance carries it and labels the namespace; from then on, none is carried', async (t) => {
  await kube.create(refs.namespace('control'), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'control' } })
  await createInstance('control', 'ws')
  calls.length = 0
  const driver = freshDriver()
  const first = await driver.settle({ name: 'control' })
  t.same(
    first.passes[0]?.writes.map((w) => `${w.verb} ${w.target}`),
    ['parent namespaces /control', `create NetworkPolicy.networking.k8s.io/v1 control/${POLICY}`]
  )
  t.same(
    calls.map((c) => `${c.path} ${c.instances}`),
    ['/hooks/isolation/customize 0', '/hooks/isolation/sync 1', '/hooks/isolation/sync 0'],
    'customize relates the Instance; the first sync carries it, the next one (same cached answer, label on) none'
  )
  t.equal((await labelsOf('control'))[HOLDS_INSTANCES], 'true', 'the namespace is labelled')

  // Someone removes the label: with the same cached answer, the next sync sees the Instance again.
  const stored = (await kube.get(refs.namespace('control'))).body
  const { [HOLDS_INSTANCES]: _removed, ...rest } = meta(stored).labels as Record<string, string>
  meta(stored).labels = rest
  await kube.update(refs.namespace('control'), stored)
  calls.length = 0
  const healed = await driver.settle({ name: 'control' })
  t.same(
    calls.map((c) => `${c.path} ${c.instances}`),
    ['/hooks/isolation/sync 1', '/hooks/isolation/sync 0'],
    'the label removed by hand: the next sync carries the Instance and sets it back'
  )
  t.same(
    healed.passes[0]?.writes.map((w) => `${w.verb} ${w.target}`),
    ['parent namespaces /control']
  )
  t.equal((await labelsOf('control'))[HOLDS_INSTANCES], 'true', 'labelled again')

  calls.length = 0
  const later = await freshDriver().settle({ name: 'control' })
  t.equal(later.passes.length, 1, 'nothing left to do')
  t.same(
    calls,
    [
      { path: '/hooks/isolation/customize', instances: 0, relatesInstances: false },
      { path: '/hooks/isolation/sync', instances: 0, relatesInstances: false }
    ],
    'a fresh customize relates no Instances for the labelled namespace'
  )
  t.ok((await kube.get(refs.policy('control', POLICY))).body.spec !== undefined, 'and the policy stays')
})

t.test(`in a labelled namespace, the 1st to the ${INSTANCES}th Instance cause no isolation call that carries Instances`, async (t) => {
  await kube.create(refs.namespace('tenant-scale'), {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name: 'tenant-scale', labels: { [HOLDS_INSTANCES]: 'true' } }
  })
  const driver = freshDriver()
  calls.length = 0
  const empty = await driver.settle({ name: 'tenant-scale' })
  t.same(
    empty.passes[0]?.writes.map((w) => `${w.verb} ${w.target}`),
    [`create NetworkPolicy.networking.k8s.io/v1 tenant-scale/${POLICY}`],
    'the label alone renders the policy'
  )

  for (let i = 1; i <= INSTANCES; i++) {
    await createInstance('tenant-scale', `ws-${i}`)
    // Where Metacontroller would still have synced the namespace on this Instance's event.
    const report = await driver.syncOnce({ name: 'tenant-scale' })
    if (report.writes.length > 0) t.fail(`after Instance ${i}: the sync wrote ${JSON.stringify(report.writes)}`)
  }
  const settled = await driver.settle({ name: 'tenant-scale' })
  t.equal(settled.passes.length, 1, 'the namespace is settled')

  const stored = (await kube.list({ apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', namespace: 'tenant-scale' })).body
  t.equal(stored.length, INSTANCES, `the namespace holds ${INSTANCES} Instances`)
  const syncs = calls.filter((c) => c.path === '/hooks/isolation/sync')
  t.equal(syncs.length, 1 + 1 + INSTANCES + 1, 'two settling passes, one sync per Instance, one final pass')
  t.same(
    calls.filter((c) => c.instances > 0),
    [],
    'no isolation request carried an Instance'
  )
  t.same(
    calls.filter((c) => c.path === '/hooks/isolation/customize'),
    [{ path: '/hooks/isolation/customize', instances: 0, relatesInstances: false }],
    'customize, asked once, relates no Instances'
  )
  t.equal((await labelsOf('tenant-scale'))[HOLDS_INSTANCES], 'true', 'the label stays')
  t.ok((await kube.get(refs.policy('tenant-scale', POLICY))).body.spec !== undefined, 'the policy stays')
})

t.test(`in a fresh namespace, only the first of ${INSTANCES} Instances causes an isolation call, which labels it`, async (t) => {
  await kube.create(refs.namespace('tenant-fresh'), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-fresh' } })
  const driver = freshDriver()
  await driver.settle({ name: 'tenant-fresh' })
  calls.length = 0
  let triggered = 0
  for (let i = 1; i <= INSTANCES; i++) {
    await createInstance('tenant-fresh', `ws-${i}`)
    // The Instance's watch event re-syncs the namespace only where the cached answer relates it.
    const instance = {
      apiVersion: 'worker.gpustack.ai/v1alpha1',
      kind: 'Instance',
      metadata: { name: `ws-${i}`, namespace: 'tenant-fresh' }
    }
    if ((await driver.relatedParents(instance)).length === 0) continue
    triggered++
    await driver.syncOnce({ name: 'tenant-fresh' })
  }
  t.equal(triggered, 1, 'only the first Instance re-synced the namespace')
  t.same(
    calls.map((c) => `${c.path} ${c.instances}`),
    ['/hooks/isolation/sync 1'],
    'that one sync carried one Instance, and customize was not asked again'
  )
  t.equal((await labelsOf('tenant-fresh'))[HOLDS_INSTANCES], 'true', 'it labelled the namespace')
  const settled = await driver.settle({ name: 'tenant-fresh' })
  t.equal(settled.passes.length, 1, 'the namespace is settled')
  t.same(calls.filter((c) => c.instances > 0).length, 1, `no later sync carries any of the ${INSTANCES} Instances`)
  t.ok((await kube.get(refs.policy('tenant-fresh', POLICY))).body.spec !== undefined, 'the policy is there')
})
