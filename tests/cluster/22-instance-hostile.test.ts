/**
 * Hostile names against a real API server: an Instance whose `spec.type` names a member of every
 * JavaScript object (`constructor` is also a valid object name) is created through kubectl, and
 * the controller reports `SpecValid=False` (`InstanceTypeNotFound`) and creates no Pod, however
 * many GPUs it asks for. An InstanceType that really is named `constructor` is then found and
 * used, placement included.
 */
import t from 'tap'
import { startScenario } from './support/scenario.ts'
import { apply } from './support/kubectl.ts'
import { condition, reader, refs } from './support/reads.ts'

const env = await startScenario()
const { kube, cluster } = env
const driver = env.driver('gpuhooks-instance')

// Loose views of what the API server returns; every read is checked by value below.
type Obj = any
const { instance: instanceRef, pod: podRef } = refs
const { get, must } = reader<Obj>(kube)

const NS = 'hostile'
const WORKSPACE = { image: 'docker.io/library/python:3.12-slim', command: ['sleep', 'infinity'] }

t.before(async () => {
  await cluster.kubectl(['create', 'namespace', NS])
  await cluster.kubectl(['wait', '--for=create', '-n', NS, 'serviceaccount/default', '--timeout=60s'])
})

const HOSTILE_TYPES = ['constructor', 'toString', 'valueOf', 'hasOwnProperty']

for (const [i, type] of HOSTILE_TYPES.entries()) {
  t.test(`an Instance of type ${type} reports InstanceTypeNotFound and gets no Pod`, async (t) => {
    const name = `greedy-${i}`
    await apply(cluster, {
      apiVersion: 'worker.gpustack.ai/v1alpha1',
      kind: 'Instance',
      metadata: { name, namespace: NS },
      spec: { type, ...WORKSPACE, resources: { accelerator: { count: 8 } } }
    })
    await driver.settle({ namespace: NS, name }, { maxPasses: 3 })
    const inst = await must(instanceRef(NS, name))
    const specValid = condition(inst, 'SpecValid')
    t.same({ status: specValid?.status, reason: specValid?.reason }, { status: 'False', reason: 'InstanceTypeNotFound' })
    t.match(specValid?.message, new RegExp(`spec.type ${type} names no InstanceType`))
    t.equal(inst.status.phase, 'Failed')
    t.equal(await get(podRef(NS, name)), undefined, 'no Pod was created')
  })
}

t.test('an InstanceType really named constructor is used, with its node selector', async (t) => {
  await apply(cluster, {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'InstanceType',
    metadata: { name: 'constructor' },
    spec: { devicePlugin: 'HAMi', families: ['Whole'], maxCount: 2, nodeSelector: { gpu: 'on' } }
  })
  const name = 'greedy-0'
  await driver.settle({ namespace: NS, name }, { maxPasses: 3 })
  const inst = await must(instanceRef(NS, name))
  t.same(
    { status: condition(inst, 'SpecValid')?.status, reason: condition(inst, 'SpecValid')?.reason },
    { status: 'False', reason: 'AcceleratorNotOffered' }
  )
  t.match(condition(inst, 'SpecValid')?.message, /count 8 is over the maxCount of InstanceType constructor; at most 2/)
  t.equal(await get(podRef(NS, name)), undefined, 'still no Pod: 8 is over the limit of the real InstanceType')

  await cluster.kubectl([
    'patch',
    'instance',
    name,
    '-n',
    NS,
    '--type=merge',
    '-p',
    JSON.stringify({ spec: { resources: { accelerator: { count: 2 } } } })
  ])
  await driver.settle({ namespace: NS, name }, { maxPasses: 3 })
  const pod = await must(podRef(NS, name))
  t.same(pod.spec.nodeSelector, { gpu: 'on' })
  t.equal(pod.spec.containers[0].resources.limits['nvidia.com/gpu'], '2')
  t.equal(condition(await must(instanceRef(NS, name)), 'SpecValid')?.status, 'True')
})
