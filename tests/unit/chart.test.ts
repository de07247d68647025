/**
 * The Helm chart: lint, reviewed snapshots of `helm template` (default values; cert-manager),
 * the generated parts up to date (CRDs and Metacontroller manifests copied from the repository,
 * the plain manifest), and the promises of the install: no key in any manifest, webhooks on and
 * failing closed, CRDs kept, hooks pointed at the release's Service, the agent and the cell pool
 * webhook present exactly when the GPUCellPool CRD is.
 *
 * Helm is `$GPUHOOKS_HELM` or the one tests/cluster/build-helm.sh builds once per machine (Go
 * needed). Without either these tests are skipped with that reason, except in CI.
 */
import t from 'tap'
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import { CHART, PLAIN_MANIFEST, ROOT, helmPath, staleCopies, stalePlainManifest } from '../../deploy/chart/generate.ts'

type Doc = { apiVersion: string, kind: string, metadata: { name: string, namespace?: string, annotations?: Record<string, string> }, [k: string]: unknown }

/**
 * `$GPUHOOKS_HELM`, else the cached build (the script only checks it), else in CI a build;
 * elsewhere a missing Helm skips these tests rather than build it inside a unit test's timeout.
 */
function findHelm(): string | undefined {
  const cached = join(homedir(), '.cache', 'gpuhooks', 'helm-v3.22.0', 'helm')
  if (process.env['GPUHOOKS_HELM'] === undefined && !existsSync(cached) && process.env['CI'] === undefined) return undefined
  return helmPath()
}

const helm = findHelm()
if (helm === undefined) {
  t.plan(0, 'helm is not available: run bash tests/cluster/build-helm.sh (needs Go) or set GPUHOOKS_HELM')
} else {
  const template = (args: string[] = [], chart = CHART, namespace = 'gpuhooks-system'): string =>
    execFileSync(helm, ['template', 'gpuhooks', chart, '--namespace', namespace, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 })
  const docs = (text: string): Doc[] => parseAllDocuments(text).map((d) => d.toJS() as Doc).filter((d) => d !== null)
  const find = (all: Doc[], kind: string, name?: string): Doc[] => all.filter((d) => d.kind === kind && (name === undefined || d.metadata.name === name))

  t.test('helm lint passes with default values and with cert-manager', async (t) => {
    for (const args of [[], ['--set', 'webhook.certManager.enabled=true']]) {
      const result = spawnSync(helm, ['lint', CHART, ...args], { encoding: 'utf8' })
      t.equal(result.status, 0, `helm lint ${args.join(' ')}: ${result.stdout}${result.stderr}`)
    }
  })

  t.test('helm template with default values (reviewed snapshot)', async (t) => {
    t.matchSnapshot(template(), 'default values')
  })

  t.test('helm template with cert-manager (reviewed snapshot)', async (t) => {
    t.matchSnapshot(template(['--set', 'webhook.certManager.enabled=true']), 'webhook.certManager.enabled=true')
  })

  t.test('the chart\'s copies of crds/ and metacontroller/ are up to date (npm run chart)', async (t) => {
    t.same(staleCopies().map((s) => s.path), [])
  })

  t.test('the plain manifest is the chart rendered with default values (npm run chart)', async (t) => {
    t.same(stalePlainManifest(helm).map((s) => s.path), [])
  })

  t.test('no manifest carries a certificate or a key', async (t) => {
    for (const [name, text] of [['plain', readFileSync(PLAIN_MANIFEST, 'utf8')], ['default', template()], ['cert-manager', template(['--set', 'webhook.certManager.enabled=true'])]] as const) {
      t.notMatch(text, /BEGIN [A-Z ]*(PRIVATE KEY|CERTIFICATE)/, name)
      t.same(find(docs(text), 'Secret'), [], `${name}: no Secret`)
    }
  })

  t.test('the Instance webhook is on, fails closed, and covers create and update of Instances only', async (t) => {
    const [vwc] = find(docs(template()), 'ValidatingWebhookConfiguration', 'gpuhooks-instance')
    t.ok(vwc)
    t.same((vwc as unknown as { webhooks: unknown[] }).webhooks, [{
      name: 'instances.worker.gpustack.ai',
      admissionReviewVersions: ['v1'],
      sideEffects: 'None',
      failurePolicy: 'Fail',
      matchPolicy: 'Equivalent',
      timeoutSeconds: 10,
      clientConfig: { service: { name: 'gpuhooks', namespace: 'gpuhooks-system', port: 443, path: '/admission/instance' } },
      rules: [{ apiGroups: ['worker.gpustack.ai'], apiVersions: ['v1alpha1'], resources: ['instances'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' }]
    }])
  })

  t.test('without cert-manager a Job issues the certificate; with it, cert-manager does and its cainjector writes the caBundle', async (t) => {
    const plain = docs(template())
    t.equal(find(plain, 'Job').length, 1)
    t.equal(find(plain, 'CronJob').length, 1)
    t.same(find(plain, 'Certificate'), [])
    const cm = docs(template(['--set', 'webhook.certManager.enabled=true']))
    t.same(find(cm, 'Job'), [])
    const [cert] = find(cm, 'Certificate', 'gpuhooks-webhook')
    t.match(cert, { spec: { secretName: 'gpuhooks-webhook-tls', dnsNames: ['gpuhooks.gpuhooks-system.svc', 'gpuhooks.gpuhooks-system.svc.cluster.local'], issuerRef: { name: 'gpuhooks-selfsigned', kind: 'Issuer' } } })
    t.equal(find(cm, 'Issuer', 'gpuhooks-selfsigned').length, 1)
    const [vwc] = find(cm, 'ValidatingWebhookConfiguration', 'gpuhooks-instance')
    t.equal(vwc?.metadata.annotations?.['cert-manager.io/inject-ca-from'], 'gpuhooks-system/gpuhooks-webhook')
  })

  t.test('the hook Deployment: two replicas spread over nodes, probes, non-root, read-only root, no token', async (t) => {
    const [deployment] = find(docs(template()), 'Deployment', 'gpuhooks')
    t.match(deployment, {
      spec: {
        replicas: 2,
        template: {
          spec: {
            automountServiceAccountToken: false,
            securityContext: { runAsNonRoot: true },
            containers: [{
              command: ['node', 'dist/hooks/main.js'],
              readinessProbe: { httpGet: { path: '/readyz' } },
              livenessProbe: { httpGet: { path: '/healthz' } },
              resources: { requests: { cpu: String, memory: String }, limits: { memory: String } },
              securityContext: { readOnlyRootFilesystem: true, runAsNonRoot: true, allowPrivilegeEscalation: false }
            }],
            affinity: { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ podAffinityTerm: { topologyKey: 'kubernetes.io/hostname' } }] } },
            topologySpreadConstraints: [{ topologyKey: 'kubernetes.io/hostname' }]
          }
        }
      }
    })
    const [service] = find(docs(template()), 'Service', 'gpuhooks')
    t.match(service, { spec: { ports: [{ port: 80, targetPort: 'http' }, { port: 443, targetPort: 'webhook' }] } })
    t.equal(find(docs(template()), 'PodDisruptionBudget', 'gpuhooks').length, 1)
  })

  t.test('CRDs are templates kept on uninstall, and the controllers call the release\'s Service', async (t) => {
    const all = docs(template([], CHART, 'elsewhere'))
    const crds = find(all, 'CustomResourceDefinition')
    t.same(crds.map((c) => c.metadata.name).sort(), staleCopiesSource())
    for (const crd of crds) t.equal(crd.metadata.annotations?.['helm.sh/resource-policy'], 'keep', crd.metadata.name)
    const controllers = [...find(all, 'CompositeController'), ...find(all, 'DecoratorController')]
    t.same(controllers.map((c) => c.metadata.name).sort(), ['gpuhooks-instance', 'gpuhooks-instance-isolation'])
    for (const controller of controllers) {
      const hooks = (controller as unknown as { spec: { hooks: Record<string, { webhook: { service: { name: string, namespace: string } } }> } }).spec.hooks
      for (const [name, hook] of Object.entries(hooks)) t.same(hook.webhook.service, { ...hook.webhook.service, name: 'gpuhooks', namespace: 'elsewhere' }, `${controller.metadata.name} ${name}`)
    }
  })

  t.test('namespace users read the resources and write only Instances, through the aggregated roles', async (t) => {
    const all = docs(template())
    const [view] = find(all, 'ClusterRole', 'gpuhooks-view')
    const [edit] = find(all, 'ClusterRole', 'gpuhooks-edit')
    t.equal(view?.metadata && (view as unknown as { metadata: { labels: Record<string, string> } }).metadata.labels['rbac.authorization.k8s.io/aggregate-to-view'], 'true')
    t.same((edit as unknown as { rules: unknown[] }).rules, [
      { apiGroups: ['worker.gpustack.ai'], resources: ['instances'], verbs: ['create', 'update', 'patch', 'delete', 'deletecollection'] }
    ])
    t.same((view as unknown as { rules: { verbs: string[] }[] }).rules.flatMap((r) => r.verbs), ['get', 'list', 'watch', 'get', 'list', 'watch'])
  })

  t.test('Settings are seeded from values as post-install hooks, and not at all in the plain manifest', async (t) => {
    const all = docs(template(['--set', 'worker.instanceIsolationPodCIDRs=10.244.0.0/16', '--set', 'worker.sshServerImage=registry.local/sshd:1']))
    const settings = find(all, 'Setting')
    t.same(settings.map((s) => [s.metadata.name, (s as unknown as { value: string }).value]), [
      ['instance-isolation-pod-cidrs', '10.244.0.0/16'],
      ['instance-ssh-server-image', 'registry.local/sshd:1']
    ])
    for (const s of settings) t.equal(s.metadata.annotations?.['helm.sh/hook'], 'post-install,post-upgrade')
    t.same(find(docs(readFileSync(PLAIN_MANIFEST, 'utf8')), 'Setting'), [])
  })

  t.test('with the GPUCellPool CRD in the chart: the agent with its RBAC and the cell pool webhook', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-chart-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const chart = join(dir, 'gpuhooks')
    cpSync(CHART, chart, { recursive: true })
    const before = docs(template([], chart))
    t.same(find(before, 'Deployment').map((d) => d.metadata.name), ['gpuhooks'], 'no agent before')
    writeFileSync(join(chart, 'files', 'crds', 'gpucellpools.cells.kubeswift.io.yaml'), [
      'apiVersion: apiextensions.k8s.io/v1', 'kind: CustomResourceDefinition', 'metadata: {name: gpucellpools.cells.kubeswift.io}',
      'spec: {group: cells.kubeswift.io, names: {kind: GPUCellPool, plural: gpucellpools}, scope: Namespaced, versions: []}', ''
    ].join('\n'))
    const after = docs(template(['--set', 'agent.secretNamespaces={team-a}'], chart))
    const [agent] = find(after, 'Deployment', 'gpuhooks-agent')
    t.match(agent, { spec: { replicas: 2, template: { spec: { serviceAccountName: 'gpuhooks-agent', containers: [{ command: ['node', 'dist/hooks/agent/main.js'], env: [{ name: 'PORT', value: '8081' }] }] } } } })
    const [role] = find(after, 'ClusterRole', 'gpuhooks-agent')
    t.same((role as unknown as { rules: unknown[] }).rules, [
      { apiGroups: ['cells.kubeswift.io'], resources: ['cellnodesets'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: ['cells.kubeswift.io'], resources: ['cellnodesets/status'], verbs: ['update', 'patch'] },
      { apiGroups: ['cells.kubeswift.io'], resources: ['gpucellpools'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch'] }
    ])
    t.same(find(after, 'RoleBinding', 'gpuhooks-agent-secrets').map((b) => b.metadata.namespace), ['team-a'])
    t.same(find(after, 'ClusterRoleBinding', 'gpuhooks-agent-secrets'), [], 'no cluster-wide Secret access when namespaces are listed')
    const [vwc] = find(after, 'ValidatingWebhookConfiguration', 'gpuhooks-cellpool')
    t.match(vwc, { webhooks: [{ failurePolicy: 'Fail', clientConfig: { service: { path: '/admission/cellpool' } }, rules: [{ resources: ['gpucellpools'], operations: ['CREATE', 'UPDATE'] }] }] })
    const [job] = find(after, 'Job')
    t.match(job, { spec: { template: { spec: { containers: [{ env: [{}, {}, {}, { name: 'WEBHOOK_CONFIGURATIONS', value: 'gpuhooks-instance,gpuhooks-cellpool' }] }] } } } })
  })

  t.test('a multi-document file of metacontroller/ renders every document, Metacontroller\'s identity from values', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-chart-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const chart = join(dir, 'gpuhooks')
    cpSync(CHART, chart, { recursive: true })
    writeFileSync(join(chart, 'files', 'metacontroller', 'policy.yaml'), [
      '# a policy and its binding',
      'apiVersion: admissionregistration.k8s.io/v1', 'kind: ValidatingAdmissionPolicy', 'metadata: {name: only-metacontroller}',
      'spec:', '  validations:', '    - expression: request.userInfo.username == "system:serviceaccount:metacontroller:metacontroller"',
      '---',
      'apiVersion: admissionregistration.k8s.io/v1', 'kind: ValidatingAdmissionPolicyBinding', 'metadata: {name: only-metacontroller}',
      'spec: {policyName: only-metacontroller, validationActions: [Deny]}', ''
    ].join('\n'))
    const all = docs(template(['--set', 'metacontroller.serviceAccount=system:serviceaccount:mc:controller'], chart))
    const [policy] = find(all, 'ValidatingAdmissionPolicy', 'only-metacontroller')
    t.match(policy, { spec: { validations: [{ expression: 'request.userInfo.username == "system:serviceaccount:mc:controller"' }] } })
    t.equal(find(all, 'ValidatingAdmissionPolicyBinding', 'only-metacontroller').length, 1)
    t.equal(find(all, 'CompositeController').length, 1, 'the other files still render')
  })

  t.test('the certificate Job names both webhook configurations when cell pools are in the chart', async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-chart-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const chart = join(dir, 'gpuhooks')
    cpSync(CHART, chart, { recursive: true })
    writeFileSync(join(chart, 'files', 'crds', 'gpucellpools.cells.kubeswift.io.yaml'), 'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gpucellpools.cells.kubeswift.io}\n')
    const [job] = find(docs(template([], chart)), 'Job')
    t.match(job, { spec: { template: { spec: { containers: [{ env: [{}, {}, {}, { name: 'WEBHOOK_CONFIGURATIONS', value: 'gpuhooks-instance,gpuhooks-cellpool' }] }] } } } })
  })
}

/** The CRD names of the repository's crds/ (files are named `<plural>.<group>.yaml`, the CRD's name). */
function staleCopiesSource(): string[] {
  return readdirSync(join(ROOT, 'crds')).filter((f) => f.endsWith('.yaml')).map((f) => f.slice(0, -'.yaml'.length)).sort()
}
