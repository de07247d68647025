/**
 * The service lifecycle of an Instance (docs/instance.md, "The Service"), one test per rule,
 * played through Metacontroller's dynamic apply and the API server's allocations
 * (tests/support/server-defaults.ts).
 */
import t from 'tap'
import { finalize } from '../../hooks/instance/finalize.ts'
import { sync } from '../../hooks/instance/sync.ts'
import type { KubeObject } from '../../hooks/k8s/objects.ts'
import { InstanceWorld, POD_STATUS, baseSpec, instanceType, namespaceObject } from './fixtures/instance.ts'

const twoPorts = { ports: [{ port: 8888, name: 'jupyter' }, { port: 6006 }] }

/** A running Instance with its Service's node ports allocated and its Pod running. */
function running(spec: Record<string, unknown> = baseSpec(twoPorts)): InstanceWorld {
  const world = new InstanceWorld(spec, { related: [instanceType(), instanceType({ families: ['Whole'] }, 'h100'), namespaceObject()] })
  world.settle(sync)
  world.stampPod(POD_STATUS.running)
  world.settle(sync)
  return world
}
/** Stops the Instance and lets the stop settle. */
function stop(world: InstanceWorld): void {
  world.edit({ stop: true })
  world.settle(sync)
}
/** Stops the Instance, sets spec.ports while it is stopped (undefined clears them), and starts it again. */
function restartWithPorts(world: InstanceWorld, ports: unknown[] | undefined): void {
  stop(world)
  world.edit({ ports })
  world.edit({ stop: false })
  world.settle(sync)
}
const statusPorts = (world: InstanceWorld): unknown =>
  world.parent.status === undefined ? undefined : (world.parent.status as { ports?: unknown }).ports
const selector = (svc: KubeObject | undefined): Record<string, string> => (svc?.spec as { selector: Record<string, string> }).selector
const selects = (svc: KubeObject | undefined, pod: KubeObject | undefined): boolean =>
  pod !== undefined && Object.entries(selector(svc)).every(([k, v]) => pod.metadata.labels?.[k] === v)

t.test('an Instance listing spec.ports is reached through a NodePort Service named after it', async (t) => {
  const world = running()
  const svc = world.service()
  t.equal(svc?.metadata.name, 'ws')
  t.equal((svc?.spec as { type: string }).type, 'NodePort')
  t.ok(selects(svc, world.pod()), 'the Service selects the Pod')
})

t.test('status.ports reports the node port allocated for each of them', async (t) => {
  const world = running()
  const nodePorts = world.nodePorts()
  t.strictSame(statusPorts(world), [
    { name: 'jupyter', port: 8888, protocol: 'TCP', nodePort: nodePorts['8888/TCP'] },
    { name: 'tcp-6006', port: 6006, protocol: 'TCP', nodePort: nodePorts['6006/TCP'] }
  ])
  t.ok((nodePorts['8888/TCP'] ?? 0) >= 30000 && (nodePorts['6006/TCP'] ?? 0) >= 30000, 'both allocated')
})

t.test('stopping the Instance deletes the Pod but retains the Service', async (t) => {
  const world = running()
  stop(world)
  t.equal(world.pod(), undefined)
  t.not(world.service(), undefined)
  t.equal((world.parent.status as { phase: string }).phase, 'Stopped')
})

t.test('the node ports a user already connected to stay allocated while stopped', async (t) => {
  const world = running()
  const before = world.nodePorts()
  stop(world)
  t.strictSame(world.nodePorts(), before)
})

t.test('starting it again builds a new Pod and reports the same node ports', async (t) => {
  const world = running()
  const oldPodUid = world.pod()?.metadata.uid
  const reported = statusPorts(world)
  stop(world)
  world.edit({ stop: false })
  world.settle(sync)
  world.stampPod(POD_STATUS.running)
  world.settle(sync)
  t.not(world.pod(), undefined)
  t.not(world.pod()?.metadata.uid, oldPodUid, 'a new Pod')
  t.equal(world.pod()?.metadata.annotations?.['worker.gpustack.ai/instance-generation'], '3')
  t.strictSame(statusPorts(world), reported)
})

t.test('the Service selects the Pod by the part-of label the two share', async (t) => {
  const world = running()
  t.equal(selector(world.service())['app.kubernetes.io/part-of'], 'ws')
  t.equal(world.pod()?.metadata.labels?.['app.kubernetes.io/part-of'], 'ws')
})

t.test('the Service keeps routing across the Pod replacement and a change of the Instance type', async (t) => {
  const world = running()
  const svcUid = world.service()?.metadata.uid
  const before = world.nodePorts()
  stop(world)
  world.edit({ type: 'h100' })
  world.settle(sync)
  world.edit({ stop: false })
  world.settle(sync)
  t.equal(world.pod()?.metadata.labels?.['worker.gpustack.ai/instance-type'], 'h100')
  t.ok(selects(world.service(), world.pod()), 'the same Service selects the new Pod')
  t.equal(world.service()?.metadata.uid, svcUid, 'the Service was never recreated')
  t.strictSame(world.nodePorts(), before)
})

t.test('spec.ports edited while stopped takes effect on the Service only when the Instance starts again', async (t) => {
  const world = running()
  const before = world.nodePorts()
  stop(world)
  world.edit({ ports: [{ port: 8888 }, { port: 7000 }] })
  world.settle(sync)
  t.strictSame(world.nodePorts(), before, 'no change while stopped')
  world.edit({ stop: false })
  world.settle(sync)
  t.strictSame(Object.keys(world.nodePorts()), ['8888/TCP', '7000/TCP'])
})

t.test('ports left unchanged keep their allocated node port', async (t) => {
  const world = running()
  const before = world.nodePorts()
  restartWithPorts(world, [{ port: 8888 }, { port: 7000, protocol: 'UDP' }])
  t.equal(world.nodePorts()['8888/TCP'], before['8888/TCP'])
})

t.test('a port added while stopped is allocated a new one at start', async (t) => {
  const world = running()
  const before = world.nodePorts()
  restartWithPorts(world, [...twoPorts.ports, { port: 7000 }])
  const added = world.nodePorts()['7000/TCP']
  t.ok(added !== undefined && added >= 30000, 'allocated')
  t.notOk(Object.values(before).includes(added as number), 'a new node port')
})

t.test('a port whose protocol changed is allocated a new node port at start', async (t) => {
  const world = running(baseSpec({ ports: [{ port: 8888 }, { port: 5000 }] }))
  const before = world.nodePorts()
  restartWithPorts(world, [{ port: 8888 }, { port: 5000, protocol: 'UDP' }])
  t.strictSame(Object.keys(world.nodePorts()), ['8888/TCP', '5000/UDP'])
  t.not(world.nodePorts()['5000/UDP'], before['5000/TCP'])
})

t.test('a port removed from spec.ports is dropped from the Service', async (t) => {
  const world = running()
  restartWithPorts(world, [{ port: 8888 }])
  t.strictSame(Object.keys(world.nodePorts()), ['8888/TCP'])
})

t.test('clearing spec.ports deletes the Service along with its allocations', async (t) => {
  const world = running()
  const before = Object.values(world.nodePorts())
  restartWithPorts(world, undefined)
  t.equal(world.service(), undefined)
  t.equal((world.parent.status as { ports?: unknown }).ports, undefined)
  // The allocations are free again: the server can hand them to another Service.
  for (const port of before) t.doesNotThrow(() => world.server.reserveNodePort(port, 'other/svc'), `node port ${port} is free`)
})

t.test('deleting the Instance itself also deletes the Service', async (t) => {
  const world = running()
  world.parent = { ...world.parent, metadata: { ...world.parent.metadata, deletionTimestamp: '2026-02-03T04:00:00Z' } }
  let answer = world.pass(finalize, true)
  t.equal(world.pod(), undefined, 'the Pod goes first')
  t.not(world.service(), undefined, 'the Service is kept while the Pod goes')
  t.equal(answer.finalized, false)
  answer = world.pass(finalize, true)
  t.equal(world.service(), undefined, 'then the Service')
  t.equal(answer.finalized, false)
  answer = world.pass(finalize, true)
  t.equal(answer.finalized, true, 'finalized once nothing is observed')
})
