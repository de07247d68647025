/**
 * Installing gpuhooks as a user with KubeSwift does, on a real API server (no kubelet, no
 * Metacontroller: its CRDs are stood in by tests/cluster/fixtures/metacontroller-crds.yaml, and
 * KubeSwift's by kubeswift-crds.yaml, so that the cell pool controller is installed too;
 * 61-chart-parts.test.ts installs without them):
 *
 * - `helm install`: every object of the release accepted, the Settings seeded from values;
 * - `helm upgrade` with changed values and a changed CRD: the CRD upgraded, a Setting edited at
 *   runtime kept, the new values applied; `helm uninstall` keeps the CRDs and Settings;
 * - the plain manifest with cell pools applied with `kubectl apply`: every object accepted, no certificate in it,
 *   so the webhook fails closed until the certificate entry point has run;
 * - the certificate entry point run as its Job runs it: the TLS Secret and both caBundles written,
 *   a second run changes nothing, a configuration created after the run started is waited for, one
 *   that never comes fails the run; the hook service started with that Secret's certificate, and the
 *   API server calling the webhook through the caBundle the entry point wrote.
 */
import t from 'tap'
import { execFile, spawn } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { parseAllDocuments } from 'yaml'
import { CHART, PLAIN_MANIFEST_CELLPOOL } from '../../deploy/chart/generate.ts'
import { helmRunner } from './support/helm.ts'
import { freePorts } from '../support/ports.ts'
import { startService } from '../support/service.ts'
import { startCluster } from './support/cluster.ts'
import { KUBESWIFT_CRDS, eventually, installCrds } from './support/env.ts'

const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '..', '..')
const TSX = join(ROOT, 'node_modules', '.bin', 'tsx')
const NS = 'gpuhooks-system'
// The aggregation controller fills Kubernetes' edit and admin roles from the chart's labelled roles.
const cluster = await startCluster({ extraControllers: ['clusterrole-aggregation-controller'] })
t.teardown(() => cluster.stop())
const helmRun = helmRunner(cluster.kubeconfig)
const work = mkdtempSync(join(tmpdir(), 'gpuhooks-chart-'))
t.teardown(() => rmSync(work, { recursive: true, force: true }))

async function getJson(args: string[]): Promise<
  Record<string, unknown> & {
    metadata: { name: string; resourceVersion: string; labels?: Record<string, string>; annotations?: Record<string, string> }
  }
> {
  return JSON.parse((await cluster.kubectl(['get', ...args, '-o', 'json'])).stdout) as never
}

/** `kubectl auth can-i` as `user` in `namespace` (team by default). */
async function canI(user: string, verb: string, resource: string, namespace = 'team'): Promise<boolean> {
  const result = await cluster.kubectl(['auth', 'can-i', verb, resource, '-n', namespace, `--as=${user}`], { allowFail: true })
  if (!['yes', 'no'].includes(result.stdout.trim())) throw new Error(`kubectl auth can-i: ${result.stdout}${result.stderr}`)
  return result.stdout.trim() === 'yes'
}

async function settingValue(name: string): Promise<unknown> {
  return (await getJson(['setting', name])).value
}

/** Every object of a manifest (multi-document YAML) as `kind/namespace/name`. */
function objectsOf(manifest: string): string[] {
  return parseAllDocuments(manifest, { version: '1.1' })
    .map((d) => d.toJS() as { kind?: string; metadata?: { name?: string; namespace?: string } } | null)
    .filter((o) => o !== null && typeof o.kind === 'string')
    .map((o) => `${o?.kind}/${o?.metadata?.namespace ?? ''}/${o?.metadata?.name ?? ''}`)
    .sort()
}

/** Whether each object of a manifest exists in the cluster (`kubectl get -f`), by `kind/namespace/name`. */
async function present(manifest: string): Promise<string[]> {
  const file = join(work, `check-${Math.random().toString(36).slice(2)}.yaml`)
  writeFileSync(file, manifest)
  const { stdout } = await cluster.kubectl(['get', '-f', file, '-o', 'json'])
  const list = JSON.parse(stdout) as {
    items?: { kind: string; metadata: { name: string; namespace?: string } }[]
    kind?: string
    metadata?: { name: string; namespace?: string }
  }
  const items = list.items ?? [list as { kind: string; metadata: { name: string; namespace?: string } }]
  return items.map((o) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`).sort()
}

await installCrds(cluster, [join(ROOT, 'tests', 'cluster', 'fixtures', 'metacontroller-crds.yaml'), KUBESWIFT_CRDS])

const instance = (name: string, spec: Record<string, unknown> = {}): string =>
  JSON.stringify({
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name, namespace: 'default' },
    spec: { type: 'probe', image: 'probe', ...spec }
  })

t.test('helm install, upgrade and uninstall', async (t) => {
  await helmRun([
    'install',
    'gpuhooks',
    CHART,
    '--namespace',
    NS,
    '--create-namespace',
    '--set',
    'worker.instanceIsolationPodCIDRs=10.244.0.0/16'
  ])

  await t.test('every object of the release is accepted', async (t) => {
    const manifest = await helmRun(['get', 'manifest', 'gpuhooks', '--namespace', NS])
    const expected = objectsOf(manifest)
    for (const object of [
      'CustomResourceDefinition//instances.worker.gpustack.ai',
      'CustomResourceDefinition//settings.gpustack.ai',
      'CompositeController//gpuhooks-instance',
      'DecoratorController//gpuhooks-instance-isolation',
      `Deployment/${NS}/gpuhooks`,
      `Service/${NS}/gpuhooks`,
      `PodDisruptionBudget/${NS}/gpuhooks`,
      'ValidatingWebhookConfiguration//gpuhooks-instance',
      `Job/${NS}/gpuhooks-certs-1`,
      `CronJob/${NS}/gpuhooks-certs`
    ])
      t.ok(expected.includes(object), `the release has ${object}`)
    t.same(await present(manifest), expected)
  })

  await t.test('the Settings are seeded from values', async (t) => {
    t.equal(await settingValue('instance-isolation-pod-cidrs'), '10.244.0.0/16')
  })

  await t.test("every Pod of the release passes Pod Security restricted, as the chart's securityContext promises", async (t) => {
    await cluster.kubectl(['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce=restricted', '--overwrite'])
    t.teardown(() => cluster.kubectl(['label', 'namespace', NS, 'pod-security.kubernetes.io/enforce-']))
    const manifest = await helmRun(['get', 'manifest', 'gpuhooks', '--namespace', NS])
    type Workload = { kind: string; metadata: { name: string }; spec: Record<string, unknown> }
    const templates = parseAllDocuments(manifest, { version: '1.1' })
      .map((d) => d.toJS() as Workload | null)
      .flatMap((o): Array<[string, unknown]> => {
        if (o === null) return []
        const spec = o.spec as { template?: { spec: unknown }; jobTemplate?: { spec: { template: { spec: unknown } } } }
        if (o.kind === 'Deployment' || o.kind === 'Job') return [[`${o.kind}/${o.metadata.name}`, spec.template?.spec]]
        if (o.kind === 'CronJob') return [[`${o.kind}/${o.metadata.name}`, spec.jobTemplate?.spec.template.spec]]
        return []
      })
    t.strictSame(
      templates.map(([name]) => name).sort(),
      ['CronJob/gpuhooks-certs', 'Deployment/gpuhooks', 'Deployment/gpuhooks-agent', 'Job/gpuhooks-certs-1'],
      'the hook service, the agent and the certificate Job and CronJob'
    )
    const create = (name: string, spec: unknown): Promise<{ code: number; stderr: string }> =>
      cluster.kubectl(['create', '--dry-run=server', '-n', NS, '-f', '-'], {
        input: JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS }, spec }),
        allowFail: true
      })
    for (const [name, spec] of templates) {
      const created = await create(`psa-${name.split('/')[1] ?? ''}`, spec)
      t.equal(created.code, 0, `a Pod of ${name} is admitted under enforce=restricted: ${created.stderr}`)
    }
    // The check is live: the SSH sidecar's capabilities are refused there.
    const sidecar = await create('psa-sidecar', {
      containers: [{ name: 'sshd', image: 'sshd', securityContext: { capabilities: { add: ['SYS_ADMIN'] } } }]
    })
    t.not(sidecar.code, 0)
    t.match(sidecar.stderr, /violates PodSecurity "restricted/)
  })

  await t.test(
    'a namespace editor writes Instances and not GPUCellPools; the pool role grants pool writes to whom it is bound',
    async (t) => {
      await cluster.kubectl(['create', 'namespace', 'team'])
      await cluster.kubectl(['create', 'rolebinding', 'editor', '-n', 'team', '--clusterrole=edit', '--user=alice'])
      await cluster.kubectl(['create', 'rolebinding', 'pools', '-n', 'team', '--clusterrole=gpuhooks-cellpool-edit', '--user=bob'])
      // Aggregation is the controller's: Instances reaching `edit` shows it has run over the chart's roles.
      await eventually('edit to include Instance writes', async () =>
        (await canI('alice', 'create', 'instances.worker.gpustack.ai')) ? true : undefined
      )
      t.ok(await canI('alice', 'create', 'instances.worker.gpustack.ai'), 'an editor creates Instances')
      t.notOk(
        await canI('alice', 'create', 'gpucellpools.cells.kubeswift.io'),
        'an editor does not create GPUCellPools (root on the GPU hosts)'
      )
      t.ok(await canI('alice', 'list', 'gpucellpools.cells.kubeswift.io'), 'an editor still reads them')
      t.ok(await canI('bob', 'create', 'gpucellpools.cells.kubeswift.io'), 'the pool role’s holder creates GPUCellPools')
      t.notOk(await canI('bob', 'create', 'cellnodesets.cells.kubeswift.io'), 'and never CellNodeSets')
      t.notOk(await canI('bob', 'create', 'gpucellpools.cells.kubeswift.io', 'default'), 'only where it is bound')
    }
  )

  await t.test('an upgrade upgrades the CRDs, applies new values and keeps a Setting edited at runtime', async (t) => {
    await cluster.kubectl(['patch', 'setting', 'instance-isolation-pod-cidrs', '--type=merge', '-p', '{"value":"10.245.0.0/16"}'])
    // The next chart version's CRD: a new label and a new printer column on Instances.
    const next = join(work, 'next')
    cpSync(CHART, next, { recursive: true })
    const crdFile = join(next, 'files', 'crds', 'instances.worker.gpustack.ai.yaml')
    const crd = readFileSync(crdFile, 'utf8')
    t.match(crd, /\n {2}labels:\n/)
    writeFileSync(crdFile, crd.replace(/\n {2}labels:\n/, '\n  labels:\n    gpuhooks.test/chart: next\n'))
    await helmRun([
      'upgrade',
      'gpuhooks',
      next,
      '--namespace',
      NS,
      '--set',
      'worker.instanceIsolationPodCIDRs=10.99.0.0/16',
      '--set',
      'hooks.replicas=3',
      // The hook Pods' NetworkPolicy (the API server here is a local process: its address).
      '--set',
      'networkPolicy.enabled=true',
      '--set',
      'networkPolicy.apiServerCIDRs={127.0.0.1/32}',
      '--set',
      'controllers.cellpool.aggregateToEdit=true'
    ])
    const upgraded = await getJson(['crd', 'instances.worker.gpustack.ai'])
    t.equal(upgraded.metadata.labels?.['gpuhooks.test/chart'], 'next', 'the CRD is upgraded')
    t.equal(await settingValue('instance-isolation-pod-cidrs'), '10.245.0.0/16', 'the runtime edit is kept')
    t.equal(
      (await getJson(['deployment', 'gpuhooks', '-n', NS])).spec !== undefined &&
        ((await getJson(['deployment', 'gpuhooks', '-n', NS])).spec as { replicas: number }).replicas,
      3
    )
    const manifest = await helmRun(['get', 'manifest', 'gpuhooks', '--namespace', NS])
    t.same(await present(manifest), objectsOf(manifest), 'every object of the upgraded release is there')
    t.ok(objectsOf(manifest).includes(`NetworkPolicy/${NS}/gpuhooks`), 'the NetworkPolicy among them, accepted by the API server')
    t.match(manifest, /name: gpuhooks-certs-2\n/, 'a certificate Job per revision')
    await eventually('edit to include GPUCellPool writes', async () =>
      (await canI('alice', 'create', 'gpucellpools.cells.kubeswift.io')) ? true : undefined
    )
    t.ok(await canI('alice', 'create', 'gpucellpools.cells.kubeswift.io'), 'aggregateToEdit puts pool writes into edit')
    // A second upgrade: the Setting, no longer part of the release, is still not touched.
    await helmRun(['upgrade', 'gpuhooks', next, '--namespace', NS, '--reuse-values'])
    t.equal(await settingValue('instance-isolation-pod-cidrs'), '10.245.0.0/16')
  })

  await t.test('uninstall keeps the CRDs and the Settings', async (t) => {
    await helmRun(['uninstall', 'gpuhooks', '--namespace', NS])
    t.equal((await getJson(['crd', 'instances.worker.gpustack.ai'])).metadata.name, 'instances.worker.gpustack.ai')
    t.equal(await settingValue('instance-isolation-pod-cidrs'), '10.245.0.0/16')
    const gone = await cluster.kubectl(['get', 'deployment', 'gpuhooks', '-n', NS], { allowFail: true })
    t.not(gone.code, 0, 'the hook Deployment is gone')
    const vwc = await cluster.kubectl(['get', 'validatingwebhookconfiguration', 'gpuhooks-instance'], { allowFail: true })
    t.not(vwc.code, 0, 'the webhook configuration is gone')
  })
})

t.test('the plain manifest, its certificate made in the cluster, and admission through it', async (t) => {
  const manifest = readFileSync(PLAIN_MANIFEST_CELLPOOL, 'utf8')
  t.notMatch(manifest, /PRIVATE KEY|BEGIN CERTIFICATE/, 'no certificate or key in the manifest')
  await cluster.kubectl(['apply', '-f', PLAIN_MANIFEST_CELLPOOL])
  t.same(await present(manifest), objectsOf(manifest), 'every object accepted')

  await t.test('before the certificate exists, the webhook fails closed', async (t) => {
    const refused = await cluster.kubectl(['create', '--dry-run=server', '-f', '-'], { input: instance('early'), allowFail: true })
    t.not(refused.code, 0)
    t.match(refused.stderr, /failed calling webhook "instances\.worker\.gpustack\.ai"/)
  })

  // The entry point as the Job runs it, reaching the API with a kubeconfig instead of a token.
  // The extra address: the webhook below is reached at 127.0.0.1 (no kube-proxy here).
  const certsEnv = {
    ...process.env,
    KUBECONFIG: cluster.kubeconfig,
    NAMESPACE: NS,
    SECRET_NAME: 'gpuhooks-webhook-tls',
    SERVICE_NAME: 'gpuhooks',
    WEBHOOK_CONFIGURATIONS: 'gpuhooks-instance,gpuhooks-cellpool',
    DEPLOYMENT_NAME: 'gpuhooks',
    EXTRA_SANS: '127.0.0.1'
  }
  const first = await run(TSX, ['hooks/certs/main.ts'], { env: certsEnv, cwd: ROOT })
  t.match(first.stdout, /certificate issued/)
  const secret = await getJson(['secret', 'gpuhooks-webhook-tls', '-n', NS])
  t.equal(secret.type, 'kubernetes.io/tls')
  const data = secret.data as Record<string, string>
  t.same(Object.keys(data).sort(), ['ca.crt', 'ca.key', 'tls.crt', 'tls.key'])
  const vwc = await getJson(['validatingwebhookconfiguration', 'gpuhooks-instance'])
  const webhooks = vwc.webhooks as { clientConfig: { caBundle?: string } }[]
  t.equal(webhooks[0]?.clientConfig.caBundle, data['ca.crt'], "the caBundle is the Secret's CA")

  await t.test('a second run keeps the valid certificate and writes nothing', async (t) => {
    const again = await run(TSX, ['hooks/certs/main.ts'], { env: certsEnv, cwd: ROOT })
    t.match(again.stdout, /certificate valid; kept/)
    t.equal((await getJson(['secret', 'gpuhooks-webhook-tls', '-n', NS])).metadata.resourceVersion, secret.metadata.resourceVersion)
    t.equal((await getJson(['validatingwebhookconfiguration', 'gpuhooks-instance'])).metadata.resourceVersion, vwc.metadata.resourceVersion)
    const deployment = await getJson(['deployment', 'gpuhooks', '-n', NS])
    t.notMatch(JSON.stringify(deployment), /certificate-issued/, 'a first certificate restarts nothing')
  })

  await t.test(
    'a configuration created after the run started is waited for and given the caBundle; one that never comes fails the run',
    async (t) => {
      // Helm and `kubectl apply` both create the Job before the configurations: a run may start first.
      const late = {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'ValidatingWebhookConfiguration',
        metadata: { name: 'gpuhooks-late' },
        webhooks: [
          {
            name: 'late.worker.gpustack.ai',
            admissionReviewVersions: ['v1'],
            sideEffects: 'None',
            failurePolicy: 'Ignore',
            clientConfig: { service: { name: 'gpuhooks', namespace: NS, path: '/admission/instance' } },
            rules: [{ apiGroups: ['worker.gpustack.ai'], apiVersions: ['v1alpha1'], resources: ['nothing'], operations: ['CREATE'] }]
          }
        ]
      }
      t.teardown(() => cluster.kubectl(['delete', 'validatingwebhookconfiguration', 'gpuhooks-late', '--ignore-not-found']))
      const child = spawn(TSX, ['hooks/certs/main.ts'], {
        cwd: ROOT,
        env: { ...certsEnv, WEBHOOK_CONFIGURATIONS: 'gpuhooks-instance,gpuhooks-late' },
        stdio: ['ignore', 'pipe', 'pipe']
      })
      let output = ''
      child.stdout?.on('data', (c: Buffer) => (output += c.toString()))
      child.stderr?.on('data', (c: Buffer) => (output += c.toString()))
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
      const deadline = Date.now() + 60_000
      while (!output.includes('not there yet')) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`the run did not wait:\n${output}`)
        await new Promise((r) => setTimeout(r, 100))
      }
      t.pass('the run waits for the missing configuration')
      await cluster.kubectl(['create', '-f', '-'], { input: JSON.stringify(late) })
      t.equal(await exited, 0, output)
      const written = await getJson(['validatingwebhookconfiguration', 'gpuhooks-late'])
      const lateHooks = written.webhooks as { clientConfig: { caBundle?: string } }[]
      t.equal(lateHooks[0]?.clientConfig.caBundle, data['ca.crt'], "the late configuration trusts the Secret's CA")

      const never = await run(TSX, ['hooks/certs/main.ts'], {
        env: { ...certsEnv, WEBHOOK_CONFIGURATIONS: 'gpuhooks-absent', WEBHOOK_WAIT_SECONDS: '1' },
        cwd: ROOT
      }).then(
        () => ({ code: 0, stderr: '' }),
        (err: { code: number; stderr: string }) => err
      )
      t.equal(never.code, 1, 'the run fails, so the Job retries')
      t.match(never.stderr, /ValidatingWebhookConfiguration gpuhooks-absent does not exist after 1 s \(WEBHOOK_WAIT_SECONDS\)/)
    }
  )

  await t.test('a certificate that no longer fits is replaced from the same CA, and the hook Pods restarted', async (t) => {
    // One more name wanted: the stored certificate lacks it.
    const renewed = await run(TSX, ['hooks/certs/main.ts'], { env: { ...certsEnv, EXTRA_SANS: '127.0.0.1,localhost' }, cwd: ROOT })
    t.match(renewed.stdout, /the certificate lacks localhost/)
    const after = await getJson(['secret', 'gpuhooks-webhook-tls', '-n', NS])
    const afterData = after.data as Record<string, string>
    t.equal(afterData['ca.crt'], data['ca.crt'], 'the CA is kept, so the caBundle stays')
    t.not(afterData['tls.crt'], data['tls.crt'], 'a new certificate')
    const deployment = await getJson(['deployment', 'gpuhooks', '-n', NS])
    const annotations =
      (deployment.spec as { template: { metadata: { annotations?: Record<string, string> } } }).template.metadata.annotations ?? {}
    t.match(annotations['gpuhooks.gpustack.ai/certificate-issued'], /^\d{4}-\d\d-\d\dT/, 'the Pod template changed, so the Pods restart')
    data['tls.crt'] = afterData['tls.crt'] as string
    data['tls.key'] = afterData['tls.key'] as string
  })

  await t.test("the hook service serves the Secret's certificate and the API server calls it", async (t) => {
    const certFile = join(work, 'tls.crt')
    const keyFile = join(work, 'tls.key')
    writeFileSync(certFile, Buffer.from(data['tls.crt'] as string, 'base64'))
    writeFileSync(keyFile, Buffer.from(data['tls.key'] as string, 'base64'))
    const [port, webhookPort] = (await freePorts(2)) as [number, number]
    const { child, exit } = await startService(
      { PORT: String(port), WEBHOOK_PORT: String(webhookPort), TLS_CERT_FILE: certFile, TLS_KEY_FILE: keyFile },
      2,
      { startTimeoutMs: 120_000 }
    )
    t.teardown(async () => {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exit
    })
    // The Service reference becomes an address: no kube-proxy or DNS on this API server. The
    // caBundle stays the one the entry point wrote.
    const patch = [
      {
        op: 'replace',
        path: '/webhooks/0/clientConfig',
        value: { url: `https://127.0.0.1:${webhookPort}/admission/instance`, caBundle: data['ca.crt'] }
      }
    ]
    await cluster.kubectl(['patch', 'validatingwebhookconfiguration', 'gpuhooks-instance', '--type=json', '-p', JSON.stringify(patch)])
    const answered = async (): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
      return text
        .split('\n')
        .filter((l) => l.startsWith('gpuhooks_hook_requests_total{hook="admission_instance",'))
        .reduce((n, l) => n + Number(l.split(' ').pop()), 0)
    }
    // The API server picks up a changed configuration within moments.
    let admitted: { code: number; stderr: string } = { code: 1, stderr: '' }
    for (let i = 0; i < 150; i++) {
      admitted = await cluster.kubectl(['create', '--dry-run=server', '-f', '-'], { input: instance('notebook'), allowFail: true })
      if (admitted.code === 0) break
      await new Promise((r) => setTimeout(r, 200))
    }
    t.equal(admitted.code, 0, `a valid Instance is admitted: ${admitted.stderr}`)
    const before = await answered()
    t.ok(before > 0, 'the API server called the webhook')
    // A rule only the webhook holds (no CRD rule can compare with the stored object): the spec of
    // a running Instance is fixed.
    await cluster.kubectl(['create', '-f', '-'], { input: instance('locked') })
    await cluster.kubectl([
      'patch',
      'instance',
      'locked',
      '-n',
      'default',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"podName":"locked"}}'
    ])
    const afterCreate = await answered()
    const denied = await cluster.kubectl(
      ['patch', 'instance', 'locked', '-n', 'default', '--type=merge', '-p', '{"spec":{"image":"other"}}'],
      { allowFail: true }
    )
    t.not(denied.code, 0)
    t.match(
      denied.stderr,
      /admission webhook "instances\.worker\.gpustack\.ai" denied the request: .*spec\.image cannot change while the Instance is running/
    )
    t.equal(await answered(), afterCreate + 1)
  })
})
