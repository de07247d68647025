/**
 * The product's images on a real node (imported into its containerd, as a registry-less cluster
 * would side-load them): the chart installed as a user installs it, with its hook Deployment
 * turning Ready, its certificate Job completing, the API server calling both admission webhooks
 * through the hook Service, and the workload agent turning Ready. Metacontroller is played by the
 * driver, calling the hooks through the same Service. Then an SSH Instance: `ssh` through its node
 * port lands in `main`, with the Pod exactly as the hook rendered it (the SSH session's details
 * are tests/images' business).
 */
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CHART } from '../../deploy/chart/generate.ts'
import { helmRunner } from './support/helm.ts'
import { LAST_APPLIED_ANNOTATION } from '../support/merge.ts'
import { Driver } from './support/driver.ts'
import { loadControllers } from './support/driver-manifest.ts'
import { installCrds, KUBESWIFT_CRDS, WEBHOOKS, type ClusterEnv } from './support/env.ts'
import { KubeClient, loadKubeconfig } from './support/kube.ts'
import { driveInstance } from './support/node-drive.ts'
import { importImages } from './support/node-images.ts'
import { newKey, privilegeOf, unprivileged } from '../images/support/ssh-client.ts'
import { HTTP_SERVER, sshOnce } from './support/node-probe.ts'
import { startNodeCluster } from './support/node-scenario.ts'
import { HAMI_TYPE } from './support/node-workloads.ts'
import { apply, createNamespaces, getJson } from './support/kubectl.ts'

type Obj = any

const ROOT = join(import.meta.dirname, '..', '..')
const NS = 'gpuhooks-system'
const { cluster, node } = await startNodeCluster()
const helm = helmRunner(cluster.kubeconfig)
const work = mkdtempSync(join(tmpdir(), 'gpuhooks-node-images-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))

const refs = await importImages(node, ['hooks', 'sshd', 'node'])
// KubeSwift's CRDs too: the chart installs the cell pool controller and its agent where they are served.
await installCrds(cluster, [join(ROOT, 'tests', 'cluster', 'fixtures', 'metacontroller-crds.yaml'), KUBESWIFT_CRDS])

/** A reference split into repository and tag, as the chart's values take it. */
function repoAndTag(ref: string): [string, string] {
  const colon = ref.lastIndexOf(':')
  return [ref.slice(0, colon), ref.slice(colon + 1)]
}

t.test('the chart on the node: hooks Ready, certificate issued, webhooks called through the Service, agent Ready', async (t) => {
  const [repository, tag] = repoAndTag(refs.hooks)
  // The images are side-loaded: never pulled.
  const values = {
    'image.repository': repository,
    'image.tag': tag,
    'image.pullPolicy': 'Never',
    'worker.sshServerImage': refs.sshd
  }
  const sets = Object.entries(values).flatMap(([key, value]) => ['--set', `${key}=${value}`])
  await helm(['install', 'gpuhooks', CHART, `--namespace=${NS}`, '--create-namespace', ...sets])
  const wait = (what: string, condition: string) =>
    cluster.kubectl(['wait', '-n', NS, `--for=condition=${condition}`, what, '--timeout=300s'])
  await wait('job/gpuhooks-certs-1', 'Complete')
  t.pass('the certificate Job completed')
  await wait('deployment/gpuhooks', 'Available')
  const hooks = await getJson(cluster, ['deployment', 'gpuhooks', '-n', NS])
  t.equal(hooks.status.readyReplicas, hooks.spec.replicas, 'every hook replica is Ready')
  await wait('deployment/gpuhooks-agent', 'Available')
  t.ok((await getJson(cluster, ['deployment', 'gpuhooks-agent', '-n', NS])).status.readyReplicas >= 1, 'the agent is Ready')

  // Each webhook's probe (a valid object) created with a server-side dry run: admitted, and
  // counted by the hook Pods behind the Service, whose /metrics the test reads at their Pod IPs.
  for (const webhook of WEBHOOKS) {
    const before = await admissionCalls(webhook.hook)
    // (The cell pool probe is denied for what a real pool needs; the answer counts all the same.)
    const answer = await cluster.kubectl(['create', '--dry-run=server', '-f', '-'], {
      input: JSON.stringify(webhook.probe),
      allowFail: true
    })
    t.ok(answer.code === 0 || answer.stderr.includes(`admission webhook "${webhook.name}" denied the request`), answer.stderr)
    t.ok((await admissionCalls(webhook.hook)) > before, `the API server called ${webhook.name} through the Service`)
  }
})

/** How many admission requests of `hook` the hook Pods have answered, from their /metrics. */
async function admissionCalls(hook: string): Promise<number> {
  const pods = await getJson(cluster, ['pods', '-n', NS, '-l', 'app.kubernetes.io/component=hooks'])
  let total = 0
  for (const pod of pods.items as Obj[]) {
    const text = await (await fetch(`http://${pod.status.podIP}:8080/metrics`)).text()
    for (const line of text.split('\n')) {
      if (line.startsWith(`gpuhooks_hook_requests_total{hook="${hook}",`)) total += Number(line.split(' ').pop())
    }
  }
  return total
}

t.test('an SSH Instance through the in-cluster hooks: ssh through its node port lands in main', async (t) => {
  const service = await getJson(cluster, ['service', 'gpuhooks', '-n', NS])
  const hooksPort = (service.spec.ports as Obj[]).find((p) => p.name === 'http')?.port ?? 80
  const kube = new KubeClient(loadKubeconfig(cluster.kubeconfig))
  const drivers = new Map(
    loadControllers(join(ROOT, 'metacontroller')).map((controller) => [
      controller.name,
      new Driver({ kube, controller, hookBaseUrl: `http://${service.spec.clusterIP}:${hooksPort}` })
    ])
  )
  const env = { cluster, driver: (name: string) => drivers.get(name) } as unknown as ClusterEnv

  const ns = 'ssh'
  await createNamespaces(cluster, [ns])
  await apply(cluster, HAMI_TYPE)
  const key = await newKey(work, 'key')
  await cluster.kubectl(['create', 'secret', 'generic', 'keys', '-n', ns, `--from-file=authorized_keys=${key.file}.pub`])
  await apply(cluster, {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name: 'shell', namespace: ns },
    spec: {
      type: 'hami',
      image: refs.node,
      imagePullPolicy: 'Never',
      command: ['node', '-e', `require('node:fs').writeFileSync('/tmp/main-marker', 'main of shell'); ${HTTP_SERVER}`],
      resources: { accelerator: { count: 1 } },
      ports: [{ port: 8080 }],
      sshPublicKey: { name: 'keys' }
    }
  })
  const running = await driveInstance(env, { namespace: ns, name: 'shell' }, 'Running', (i: Obj) => i.status?.phase === 'Running')
  const sshPort = (running.status.ports as Obj[]).find((p) => p.name === 'ssh').nodePort
  t.ok(running.status.accessAddresses.includes(`${node.address}:${sshPort}`), 'the ssh node port is an access address')
  t.equal(running.status.connect?.ssh, `ssh -p ${sshPort} root@${node.address}`, 'status.connect.ssh is the command used below')

  const pod = await getJson(cluster, ['pod', 'shell', '-n', ns])
  const rendered = JSON.parse(pod.metadata.annotations[LAST_APPLIED_ANNOTATION])
  t.match(pod.spec, rendered.spec, 'the Pod kubelet runs is the Pod the hook rendered')
  t.same(
    pod.status.containerStatuses.map((c: Obj) => [c.name, c.ready]),
    [
      ['main', true],
      ['sshd', true]
    ]
  )

  const ssh = await sshOnce(key, node.address, sshPort, 'hostname; id -u; cat /tmp/main-marker; echo; cat /proc/self/status')
  t.equal(ssh.code, 0, ssh.stderr)
  // main's own user, as kubelet's exec into main sees it.
  const mainUid = (await cluster.kubectl(['exec', '-n', ns, 'shell', '-c', 'main', '--', 'id', '-u'])).stdout.trim()
  t.same(
    ssh.stdout.split('\n').slice(0, 3),
    ['shell', mainUid, 'main of shell'],
    'the session is in main: its hostname, its user, its files'
  )
  t.same(privilegeOf(ssh.stdout), unprivileged(Number(mainUid)), 'no capability in any set, no_new_privs')
  t.ok(key.line.startsWith('ssh-ed25519 '))
})

t.test('the node leaves nothing on the machine', async (t) => {
  t.same(await node.stop(), [], 'every step of the stop succeeded')
  t.same(await node.leftovers(), [], 'no link, netns, iptables chain, ipset, mount or cgroup of the node is left')
})
