/**
 * A DRA Instance on the real node (docs/dra.md, "On a real node"): Kubernetes' own DRA test driver
 * (`test/e2e/dra/test-driver` of the k8s.io/kubernetes module, built with the node's programs) runs
 * as the node's kubelet plugin and publishes one device. The hook renders the Instance's
 * ResourceClaimTemplate; the resourceclaim controller makes the Pod's claim from it; the scheduler
 * allocates the device; kubelet asks the plugin to prepare the claim (a CDI spec written for it)
 * before it starts the Pod. Checked: a Whole DRA Instance Running with its claim allocated,
 * reserved and prepared, `main` holding the claim and the SSH sidecar none; a second Instance
 * Pending while the one device is taken; SSH entering `main`; stop unpreparing and deleting the
 * claim, which lets the second Instance start; start taking the device again with a new claim; the
 * node ports kept throughout. The `gpuhooks-instance` driver plays Metacontroller.
 *
 * Debian's containerd 1.6 has no CDI (it came in 1.7): kubelet hands it the claim's CDI device and
 * it starts the container without the spec's edits. The test reads the containerd it runs and
 * expects the claim's environment in `main` exactly when that containerd has CDI.
 */
import t, { type Test } from 'tap'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { newKey, type Key } from '../images/support/ssh-client.ts'
import { runCommand } from './support/cluster.ts'
import { eventually } from './support/env.ts'
import { apply, createNamespaces, getJson } from './support/kubectl.ts'
import { driveInstance } from './support/node-drive.ts'
import { importImages } from './support/node-images.ts'
import { HTTP_SERVER, sshOnce } from './support/node-probe.ts'
import { startNodeScenario } from './support/node-scenario.ts'
import { condition } from './support/reads.ts'
import type { JsonObject } from '../support/merge.ts'

type Obj = any

/** The driver name the plugin publishes under, and the DeviceClass that selects its devices. */
const DRIVER = 'test-driver.cdi.k8s.io'
const CLASS = 'test-gpu'
const NS = 'dra-node'

const env = await startNodeScenario({}, { dra: { driverName: DRIVER, devices: 1 } })
const { cluster, node } = env
const images = await importImages(node, ['sshd', 'node'])
const work = mkdtempSync(join(tmpdir(), 'gpuhooks-node-dra-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))

const kubectl = (args: string[]) => cluster.kubectl(args)
const json = (args: string[]): Promise<Obj> => getJson(cluster, args)
const drive = (name: string, what: string, until: (instance: Obj) => boolean): Promise<Obj> =>
  driveInstance(env, { namespace: NS, name }, what, until)
const running = (i: Obj): boolean => i.status?.phase === 'Running'
const nodePorts = (i: Obj): Record<string, number> =>
  Object.fromEntries((i.status.ports as Obj[]).map((p) => [`${p.name ?? p.port}/${p.protocol}`, p.nodePort]))
const patchInstance = (name: string, spec: JsonObject) =>
  kubectl(['patch', 'instance', name, '-n', NS, '--type=merge', '-p', JSON.stringify({ spec })])

/** The claims of the namespace, by name. */
async function claims(): Promise<Obj[]> {
  return (await json(['resourceclaims', '-n', NS])).items
}

/** The CDI spec the plugin writes when kubelet asks it to prepare `claim` (one per request). */
const cdiSpecFile = (claim: Obj): string => join(node.cdiDir, `${DRIVER}-${claim.metadata.uid}-gpu.json`)
/** The variable the plugin's CDI edits set for a claim's request, as it spells it. */
const claimVariable = (claim: Obj): string => `claim_${claim.metadata.name}_gpu`.replace(/[^a-zA-Z0-9]/g, '_')

/** Whether the node's containerd applies CDI specs (containerd 1.7 and later). */
async function containerdHasCdi(): Promise<boolean> {
  const { stdout } = await runCommand('containerd', ['--version'])
  const version = /\s(\d+)\.(\d+)\.\d+/.exec(stdout)
  if (version === null) throw new Error(`cannot read containerd's version from: ${stdout}`)
  const [major, minor] = [Number(version[1]), Number(version[2])]
  return major > 1 || (major === 1 && minor >= 7)
}

let key: Key
t.before(async () => {
  await createNamespaces(cluster, [NS])
  key = await newKey(work, 'key')
  await kubectl(['create', 'secret', 'generic', 'keys', '-n', NS, `--from-file=authorized_keys=${key.file}.pub`])
  await apply(cluster, {
    apiVersion: 'gpustack.ai/v1alpha1',
    kind: 'Setting',
    metadata: { name: 'instance-ssh-server-image' },
    value: images.sshd
  })
  await apply(cluster, {
    apiVersion: 'resource.k8s.io/v1',
    kind: 'DeviceClass',
    metadata: { name: CLASS },
    spec: { selectors: [{ cel: { expression: `device.driver == '${DRIVER}'` } }] }
  })
  await apply(cluster, {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'InstanceType',
    metadata: { name: 'dra-test' },
    spec: {
      devicePlugin: 'DRA',
      dra: { deviceClassName: CLASS },
      families: ['Whole'],
      nodeSelector: { gpu: 'on' },
      defaults: { cpu: '100m', memory: '128Mi' }
    }
  })
})

/** An Instance of the DRA type with one whole device, an HTTP server on 8080 and SSH. */
function instance(name: string): JsonObject {
  return {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name, namespace: NS },
    spec: {
      type: 'dra-test',
      image: images.node,
      imagePullPolicy: 'Never',
      command: ['node', '-e', `require('node:fs').writeFileSync('/tmp/main-marker', 'main of ${name}'); ${HTTP_SERVER}`],
      resources: { accelerator: { count: 1 } },
      ports: [{ port: 8080 }],
      sshPublicKey: { name: 'keys' }
    }
  }
}

/** The claim of a Running Instance, checked allocated on the node's device, reserved and prepared. */
async function checkPrepared(t: Test, name: string, instance: Obj): Promise<Obj> {
  const claim = await json(['resourceclaim', instance.status.accelerator.claim, '-n', NS])
  t.same(
    (claim.status.allocation.devices.results as Obj[]).map((r) => [r.driver, r.pool, r.device, r.request]),
    [[DRIVER, node.name, 'device-00', 'gpu']],
    'the node’s one device, allocated by the scheduler'
  )
  t.same(
    (claim.status.reservedFor as Obj[]).map((r) => [r.resource, r.name]),
    [['pods', name]],
    'reserved for the Instance’s Pod'
  )
  const pod = await json(['pod', name, '-n', NS])
  t.equal(pod.spec.nodeName, node.name)
  t.same(pod.status.resourceClaimStatuses, [{ name: 'accelerator', resourceClaimName: claim.metadata.name }])
  t.same(
    (pod.spec.containers as Obj[]).map((c) => [c.name, c.resources?.claims ?? []]),
    [
      ['main', [{ name: 'accelerator' }]],
      ['sshd', []]
    ],
    'main holds the claim; the SSH sidecar holds none'
  )
  // kubelet called the plugin's NodePrepareResources before it started the containers.
  const spec = JSON.parse(readFileSync(cdiSpecFile(claim), 'utf8'))
  t.same(
    spec.devices.map((d: Obj) => [d.name, d.containerEdits.env]),
    [[`claim-${claim.metadata.uid}-gpu`, [`${claimVariable(claim)}=true`]]],
    'the plugin prepared the claim: its CDI spec is written'
  )
  const environment = (await kubectl(['exec', '-n', NS, name, '-c', 'main', '--', 'env'])).stdout
  const cdi = await containerdHasCdi()
  t.equal(
    environment.split('\n').includes(`${claimVariable(claim)}=true`),
    cdi,
    cdi ? 'containerd applied the CDI edits in main' : 'containerd 1.6 has no CDI: the claim’s edits do not reach main'
  )
  return claim
}

t.test('a Whole DRA Instance on the node’s plugin: prepared, entered by SSH, freed by stop, taken again by start', async (t) => {
  await apply(cluster, instance('shell'))
  const first = await drive('shell', 'Running', running)
  const ports = nodePorts(first)
  t.equal(condition(first, 'Ready')?.status, 'True')
  const firstClaim = await checkPrepared(t, 'shell', first)
  t.equal(first.status.accelerator.claim, firstClaim.metadata.name, 'status.accelerator.claim names it')

  await t.test('SSH enters main', async (t) => {
    const ssh = await sshOnce(key, node.address, ports['ssh/TCP'] as number, 'hostname; cat /tmp/main-marker')
    t.equal(ssh.code, 0, ssh.stderr)
    t.same(ssh.stdout.split('\n').slice(0, 2), ['shell', 'main of shell'], 'the session is in main')
  })

  await t.test('a second Instance waits while the one device is taken', async (t) => {
    await apply(cluster, instance('second'))
    const waiting = await drive(
      'second',
      'Pending with the scheduler’s reason',
      (i) => i.status?.phase === 'Pending' && /waiting to be scheduled: /.test(i.status?.message ?? '')
    )
    t.match(waiting.status.message, /claim/i, 'the scheduler says the claim cannot be allocated')
    const claim = await json(['resourceclaim', waiting.status.accelerator.claim, '-n', NS])
    t.equal(claim.status?.allocation, undefined, 'its claim is not allocated')
  })

  await t.test('stop: the claim is unprepared and deleted with the Pod, the device goes to the second Instance', async (t) => {
    await patchInstance('shell', { stop: true })
    const stopped = await drive('shell', 'Stopped', (i) => i.status?.phase === 'Stopped')
    t.same(nodePorts(stopped), ports, 'the Service keeps the node ports')
    t.equal(stopped.status.accelerator?.claim, undefined, 'no claim while stopped')
    await eventually('the first claim to be deleted', async () =>
      (await claims()).some((c) => c.metadata.uid === firstClaim.metadata.uid) ? undefined : true
    )
    t.notOk(existsSync(cdiSpecFile(firstClaim)), 'kubelet had the plugin unprepare it: its CDI spec is removed')
    const second = await drive('second', 'Running', running)
    const secondClaim = await checkPrepared(t, 'second', second)
    t.not(secondClaim.metadata.uid, firstClaim.metadata.uid)
  })

  await t.test('start: the device is taken again with a new claim, on the same node ports', async (t) => {
    await patchInstance('second', { stop: true })
    await drive('second', 'Stopped', (i) => i.status?.phase === 'Stopped')
    await patchInstance('shell', { stop: false })
    const again = await drive('shell', 'Running', running)
    t.same(nodePorts(again), ports, 'the same node ports')
    const claim = await checkPrepared(t, 'shell', again)
    t.not(claim.metadata.uid, firstClaim.metadata.uid, 'a new claim, made from the same template')
    const ssh = await sshOnce(key, node.address, ports['ssh/TCP'] as number, 'cat /tmp/main-marker')
    t.equal(ssh.code, 0, ssh.stderr)
    t.equal(ssh.stdout.trim(), 'main of shell', 'SSH enters the started workspace')
  })
})

t.test('the node leaves nothing on the machine', async (t) => {
  t.same(await node.stop(), [], 'every step of the stop succeeded, the plugin’s claims unprepared')
  t.same(await node.leftovers(), [], 'no link, netns, iptables chain, ipset, mount or cgroup of the node is left')
})
