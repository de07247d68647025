/**
 * The Instance controller on a real node (docs/instance.md): kubelet runs the
 * Pod exactly as the hook rendered it, the scheduler places it on the node's advertised
 * accelerator resources, kube-proxy carries the node port. An Instance running a small HTTP server
 * answers at its `status.accessAddresses`; stopped, the port refuses; started again, the same node
 * port answers; ports edited while stopped apply at start; a force-deleted Pod is rebuilt; an
 * image that cannot be pulled shows in the status. The `gpuhooks-instance` driver plays
 * Metacontroller, syncing as its watches would while the kubelet changes the Pod.
 */
import t from 'tap'
import { startNodeScenario } from './support/node-scenario.ts'
import { probeFromHost } from './support/node-probe.ts'
import { HAMI_TYPE, webInstance } from './support/node-workloads.ts'
import { apply, createNamespaces, getJson as getJsonOf } from './support/kubectl.ts'
import { importImages } from './support/node-images.ts'
import { driveInstance } from './support/node-drive.ts'
import type { JsonObject } from '../support/merge.ts'
import { condition } from './support/reads.ts'

type Obj = any

const env = await startNodeScenario()
const { cluster, node } = env
const image = (await importImages(node)).node
const NS = 'web'

async function patchInstance(name: string, patch: JsonObject): Promise<void> {
  await cluster.kubectl(['patch', 'instance', name, '-n', NS, '--type=merge', '-p', JSON.stringify(patch)])
}
const getJson = (args: string[]): Promise<Obj> => getJsonOf(cluster, args)
const drive = (name: string, what: string, until: (instance: Obj) => boolean): Promise<Obj> =>
  driveInstance(env, { namespace: NS, name }, what, until)
const running = (i: Obj): boolean => i.status?.phase === 'Running' && (i.status?.accessAddresses ?? []).length > 0
/** The node port of `port`/TCP on the Instance's Service. */
const nodePortOf = (i: Obj, port: number): number =>
  (i.status.ports as Obj[]).find((p) => p.port === port && p.protocol === 'TCP')?.nodePort

t.before(async () => {
  await createNamespaces(cluster, [NS])
  await apply(cluster, HAMI_TYPE)
})

const web = (name: string, spec: JsonObject): JsonObject => webInstance(NS, name, image, spec)

t.test('an HTTP server Instance across run, stop, edit, start and a force-deleted Pod', async (t) => {
  const name = 'lab'
  await apply(cluster, web(name, { ports: [{ port: 8080 }] }))
  const first = await drive(name, 'Running with an access address', running)
  const nodePort = nodePortOf(first, 8080)

  await t.test('kubelet runs the Pod as rendered, on the advertised accelerators', async (t) => {
    const pod = await getJson(['pod', name, '-n', NS])
    t.equal(pod.spec.nodeName, node.name, 'the scheduler placed it on the node')
    t.same(pod.spec.containers[0].resources.limits['nvidia.com/gpu'], '1')
    t.equal(pod.status.hostIP, node.address)
    t.same(first.status.accessAddresses, [`${node.address}:${nodePort}`])
    const host = node.address.includes(':') ? `[${node.address}]` : node.address
    t.same(
      first.status.connect,
      { address: node.address, ports: [{ name: 'tcp-8080', port: 8080, protocol: 'TCP', endpoint: `${host}:${nodePort}` }] },
      'status.connect: the host IP (no instance-access-address) and the endpoint of the spec port'
    )
    t.same([condition(first, 'Ready')?.status, first.status.podName, first.status.nodeName], ['True', name, node.name])
  })

  await t.test('the access address answers, from the Pod named in the status', async (t) => {
    const [host, port] = (first.status.accessAddresses[0] as string).split(':') as [string, string]
    // Running says the Pod is Ready; kube-proxy programs its endpoint on the node port on its own
    // schedule (docs/instance.md, "Status"), so the first answer is waited for as every later one is.
    const answer = await eventuallyProbe(host, Number(port), (r) => r.open)
    t.match(answer, { open: true, answer: new RegExp(`^${name} 8080 `) })
  })

  await t.test('stopped: no Pod, the node port kept, and the port refuses', async (t) => {
    await patchInstance(name, { spec: { stop: true } })
    const stopped = await drive(name, 'Stopped', (i) => i.status?.phase === 'Stopped')
    t.equal(nodePortOf(stopped, 8080), nodePort, 'the Service keeps the node port')
    t.notOk(stopped.status.accessAddresses?.length, 'no access address while stopped')
    const pods = await cluster.kubectl(['get', 'pods', '-n', NS, '-o', 'name'])
    t.equal(pods.stdout.trim(), '', 'no Pod')
    // kube-proxy programs the endpoint's removal on its own schedule: the refusal is waited for.
    const refused = await eventuallyProbe(node.address, nodePort, (r) => !r.open)
    t.match(refused, { open: false, error: 'ECONNREFUSED' })
  })

  await t.test('ports edited while stopped apply at start; the kept port answers on the same node port', async (t) => {
    await patchInstance(name, { spec: { ports: [{ port: 8080 }, { port: 8081 }] } })
    const still = await drive(name, 'Stopped after the edit', (i) => i.status?.phase === 'Stopped')
    t.same(
      still.status.ports.map((p: Obj) => p.port),
      [8080],
      'while stopped the Service keeps the ports it had'
    )
    await patchInstance(name, { spec: { stop: false } })
    const started = await drive(name, 'Running with two access addresses', (i) => running(i) && i.status.accessAddresses.length === 2)
    t.equal(nodePortOf(started, 8080), nodePort, 'the same node port for 8080')
    const added = nodePortOf(started, 8081)
    t.not(added, nodePort)
    t.match(await eventuallyProbe(node.address, nodePort, (r) => r.open), { open: true, answer: new RegExp(`^${name} 8080 `) })
    t.match(await eventuallyProbe(node.address, added, (r) => r.open), { open: true, answer: new RegExp(`^${name} 8081 `) })
  })

  await t.test('a force-deleted Pod is rebuilt and the node port answers again', async (t) => {
    const before = await getJson(['pod', name, '-n', NS])
    await cluster.kubectl(['delete', 'pod', name, '-n', NS, '--force', '--grace-period=0'])
    const rebuilt = await drive(name, 'Running on a new Pod', (i) => running(i))
    const after = await getJson(['pod', name, '-n', NS])
    t.not(after.metadata.uid, before.metadata.uid, 'a new Pod')
    t.equal(nodePortOf(rebuilt, 8080), nodePort)
    t.match(await eventuallyProbe(node.address, nodePort, (r) => r.open), { open: true, answer: new RegExp(`^${name} 8080 `) })
  })
})

t.test('an image that cannot be pulled shows in the status', async (t) => {
  const name = 'nopull'
  // A registry on loopback port 1: nothing listens there, so the pull fails at once, on this machine.
  await apply(cluster, web(name, { image: '127.0.0.1:1/gpuhooks/absent:1' }))
  const failing = await drive(name, 'a pull failure in the Ready condition', (i) =>
    ['ErrImagePull', 'ImagePullBackOff'].includes(condition(i, 'Ready')?.reason)
  )
  t.equal(failing.status.phase, 'Starting')
  t.equal(condition(failing, 'Ready').status, 'False')
  t.match(condition(failing, 'Ready').message ?? '', /container main is waiting \((ErrImagePull|ImagePullBackOff)\)/)
  // kubelet's own account, on the Pod: the image, and why the pull failed.
  const pod = await getJson(['pod', name, '-n', NS])
  t.match(pod.status.containerStatuses[0].state.waiting.message, /127\.0\.0\.1:1\/gpuhooks\/absent:1.*connection refused/s)
})

t.test('the node leaves nothing on the machine', async (t) => {
  t.same(await node.stop(), [], 'every step of the stop succeeded')
  t.same(await node.leftovers(), [], 'no link, netns, iptables chain, ipset, mount or cgroup of the node is left')
})

/** Probes until `accept` holds (kube-proxy applies changes on its own schedule), at most 60 s. */
async function eventuallyProbe(host: string, port: number, accept: (r: Awaited<ReturnType<typeof probeFromHost>>) => boolean) {
  const deadline = Date.now() + 60_000
  for (;;) {
    const result = await probeFromHost(host, port)
    if (accept(result) || Date.now() > deadline) return result
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}
