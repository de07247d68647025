// The test cluster itself: the API server of the pinned release, with the
// admission plugins, allocators and controllers that the other cluster tests
// rely on.
import t from 'tap'
import { startCluster } from './support/cluster.ts'

const KUBERNETES_VERSION = 'v1.37.2'
const NAMESPACE = 'cluster-smoke'

const startedAt = Date.now()
const cluster = await startCluster()
t.teardown(() => cluster.stop())
t.comment(`cluster ready at ${cluster.server} in ${((Date.now() - startedAt) / 1000).toFixed(1)}s`)

/** Parses kubectl's `-o json` output. */
function json<T>(stdout: string): T {
  return JSON.parse(stdout) as T
}

/** Polls `check` every half second until it holds or `timeoutMs` has passed. */
async function eventually(timeoutMs: number, check: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (await check()) return true
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

t.test(`the API server reports Kubernetes ${KUBERNETES_VERSION}`, async (t) => {
  const { stdout } = await cluster.kubectl(['version', '--output=json'])
  const version = json<{ serverVersion?: { gitVersion?: string; major?: string; minor?: string } }>(stdout)
  t.equal(version.serverVersion?.gitVersion, KUBERNETES_VERSION)
  t.equal(version.serverVersion?.major, '1')
  t.equal(version.serverVersion?.minor, '37')
})

t.test('a new namespace gets its default ServiceAccount', async (t) => {
  await cluster.kubectl(['create', 'namespace', NAMESPACE])
  const { code, stderr } = await cluster.kubectl(
    ['wait', '--for=create', `--namespace=${NAMESPACE}`, 'serviceaccount/default', '--timeout=60s'],
    { allowFail: true }
  )
  t.equal(code, 0, stderr)
})

t.test('DefaultTolerationSeconds adds the not-ready and unreachable tolerations to a Pod', async (t) => {
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'pending', namespace: NAMESPACE },
    spec: { containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }] }
  }
  const { stdout } = await cluster.kubectl(['create', '--filename=-', '--output=json'], {
    input: JSON.stringify(pod)
  })
  const created = json<{ spec: { tolerations?: unknown[] }; status?: { phase?: string } }>(stdout)
  t.same(created.spec.tolerations, [
    { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
    { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }
  ])
  t.equal(created.status?.phase, 'Pending', 'no scheduler, so the Pod stays Pending')
})

t.test('a NodePort Service gets a node port from the default range', async (t) => {
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'ssh', namespace: NAMESPACE },
    spec: { type: 'NodePort', selector: { app: 'ssh' }, ports: [{ name: 'ssh', port: 22 }] }
  }
  const { stdout } = await cluster.kubectl(['create', '--filename=-', '--output=json'], {
    input: JSON.stringify(service)
  })
  const created = json<{ spec: { clusterIP?: string; ports: { nodePort?: number }[] } }>(stdout)
  const nodePort = created.spec.ports[0]?.nodePort ?? 0
  t.ok(nodePort >= 30000 && nodePort <= 32767, `node port ${nodePort} is in 30000-32767`)
  t.match(created.spec.clusterIP, /^10\.96\./, 'the cluster IP comes from 10.96.0.0/16')
})

t.test('the garbage collector deletes a dependent once its owner is gone', async (t) => {
  const { stdout } = await cluster.kubectl(['create', 'configmap', 'owner', `--namespace=${NAMESPACE}`, '--output=json'])
  const owner = json<{ metadata: { uid: string } }>(stdout)
  const dependent = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: 'dependent',
      namespace: NAMESPACE,
      ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: owner.metadata.uid }]
    },
    data: { hello: 'world' }
  }
  await cluster.kubectl(['create', '--filename=-'], { input: JSON.stringify(dependent) })
  await cluster.kubectl(['delete', 'configmap', 'owner', `--namespace=${NAMESPACE}`, '--wait=true'])

  const gone = await eventually(60_000, async () => {
    const { stdout } = await cluster.kubectl([
      'get',
      'configmap',
      'dependent',
      `--namespace=${NAMESPACE}`,
      '--ignore-not-found',
      '--output=name'
    ])
    return stdout.trim() === ''
  })
  t.ok(gone, 'the dependent ConfigMap is deleted within 60s')
})
