/**
 * The Helm chart: lint, reviewed snapshots of `helm template` (default values; cert-manager),
 * the generated parts up to date (CRDs and Metacontroller manifests copied from the repository,
 * the plain manifest), and the promises of the install: no key in any manifest, webhooks on and
 * failing closed, CRDs kept, hooks pointed at the release's Service; each controller installed by
 * its switch, the cell pool controller (with its CRDs, webhook and agent) and its Cluster API
 * child types by default only where the cluster serves what they need. Unless a test says
 * otherwise, the chart is rendered as on a cluster that serves KubeSwift.
 *
 * Helm is `$GPUHOOKS_HELM` or the one tests/cluster/build-helm.sh builds once per machine (Go
 * needed). Without either these tests are skipped with that reason, except in CI.
 */
import t from 'tap'
import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseAllDocuments } from 'yaml'
import {
  CHART,
  PLAIN_MANIFEST,
  PLAIN_MANIFEST_CELLPOOL,
  ROOT,
  cellPoolCapabilities,
  staleCopies,
  stalePlainManifest
} from '../../deploy/chart/generate.ts'
import { clusterApiManifestPath } from '../../deploy/chart/controllers.ts'
import { readAgentConfig } from '../../hooks/agent/runtime/config.ts'
import { findHelm } from '../support/tools.ts'

type Doc = {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> }
  [k: string]: unknown
}

const found = findHelm()
if ('skip' in found) {
  t.plan(0, found.skip)
} else {
  const helm = found.path
  /** `helm template`, as on a cluster that serves KubeSwift's SwiftSeedProfiles and SwiftGuests. */
  const template = (args: string[] = [], chart = CHART, namespace = 'gpuhooks-system'): string =>
    bare([...cellPoolCapabilities(), ...args], chart, namespace)
  /** `helm template` as on a cluster that serves only Kubernetes' own APIs. */
  const bare = (args: string[] = [], chart = CHART, namespace = 'gpuhooks-system'): string =>
    execFileSync(helm, ['template', 'gpuhooks', chart, '--namespace', namespace, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 })
  const docs = (text: string): Doc[] =>
    parseAllDocuments(text)
      .map((d) => d.toJS() as Doc)
      .filter((d) => d !== null)
  const find = (all: Doc[], kind: string, name?: string): Doc[] =>
    all.filter((d) => d.kind === kind && (name === undefined || d.metadata.name === name))

  t.test('helm lint passes with default values and with cert-manager', async (t) => {
    for (const args of [[], ['--set', 'webhook.certManager.enabled=true']]) {
      const result = spawnSync(helm, ['lint', CHART, ...args], { encoding: 'utf8' })
      t.equal(result.status, 0, `helm lint ${args.join(' ')}: ${result.stdout}${result.stderr}`)
    }
  })

  t.test('helm template with default values (reviewed snapshot)', async (t) => {
    t.matchSnapshot(template(), 'default values')
  })

  t.test('helm template with cert-manager: what differs from the default values (reviewed snapshot)', async (t) => {
    // Documents as helm prints them; one that is the same in both renderings is not repeated.
    const split = (text: string): string[] => text.split(/^---\n/m).filter((d) => d.trim() !== '')
    const named = (doc: string): string => {
      const o = parseAllDocuments(doc)[0]?.toJS() as Doc | null
      return o === null || o === undefined ? (doc.split('\n')[0] ?? '') : `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`
    }
    const plain = split(template())
    const certManager = split(template(['--set', 'webhook.certManager.enabled=true']))
    const removed = plain.filter((d) => !certManager.includes(d)).map(named)
    const addedOrChanged = certManager.filter((d) => !plain.includes(d))
    t.ok(addedOrChanged.length > 0, 'cert-manager changes the rendering')
    t.matchSnapshot({ removed, addedOrChanged: addedOrChanged.join('---\n') }, 'webhook.certManager.enabled=true')
  })

  t.test("the chart's copies of crds/ and metacontroller/ are up to date (npm run chart)", async (t) => {
    t.same(
      staleCopies().map((s) => s.path),
      []
    )
  })

  t.test('the plain manifest is the chart rendered with default values (npm run chart)', async (t) => {
    t.same(
      stalePlainManifest(helm).map((s) => s.path),
      []
    )
  })

  t.test('no manifest carries a certificate or a key', async (t) => {
    for (const [name, text] of [
      ['plain', readFileSync(PLAIN_MANIFEST, 'utf8')],
      ['plain with cell pools', readFileSync(PLAIN_MANIFEST_CELLPOOL, 'utf8')],
      ['default', template()],
      ['cert-manager', template(['--set', 'webhook.certManager.enabled=true'])]
    ] as const) {
      t.notMatch(text, /BEGIN [A-Z ]*(PRIVATE KEY|CERTIFICATE)/, name)
      t.same(find(docs(text), 'Secret'), [], `${name}: no Secret`)
    }
  })

  t.test('the Instance webhook is on, fails closed, and covers create and update of Instances only', async (t) => {
    const [vwc] = find(docs(template()), 'ValidatingWebhookConfiguration', 'gpuhooks-instance')
    t.ok(vwc)
    t.same((vwc as unknown as { webhooks: unknown[] }).webhooks, [
      {
        name: 'instances.worker.gpustack.ai',
        admissionReviewVersions: ['v1'],
        sideEffects: 'None',
        failurePolicy: 'Fail',
        matchPolicy: 'Equivalent',
        timeoutSeconds: 10,
        clientConfig: { service: { name: 'gpuhooks', namespace: 'gpuhooks-system', port: 443, path: '/admission/instance' } },
        rules: [
          {
            apiGroups: ['worker.gpustack.ai'],
            apiVersions: ['v1alpha1'],
            resources: ['instances'],
            operations: ['CREATE', 'UPDATE'],
            scope: 'Namespaced'
          }
        ]
      }
    ])
  })

  t.test(
    'without cert-manager a Job issues the certificate; with it, cert-manager does and its cainjector writes the caBundle',
    async (t) => {
      const plain = docs(template())
      t.equal(find(plain, 'Job').length, 1)
      t.equal(find(plain, 'CronJob').length, 1)
      t.same(find(plain, 'Certificate'), [])
      const cm = docs(template(['--set', 'webhook.certManager.enabled=true']))
      t.same(find(cm, 'Job'), [])
      const [cert] = find(cm, 'Certificate', 'gpuhooks-webhook')
      t.match(cert, {
        spec: {
          secretName: 'gpuhooks-webhook-tls',
          dnsNames: ['gpuhooks.gpuhooks-system.svc', 'gpuhooks.gpuhooks-system.svc.cluster.local'],
          issuerRef: { name: 'gpuhooks-selfsigned', kind: 'Issuer' }
        }
      })
      t.equal(find(cm, 'Issuer', 'gpuhooks-selfsigned').length, 1)
      const [vwc] = find(cm, 'ValidatingWebhookConfiguration', 'gpuhooks-instance')
      t.equal(vwc?.metadata.annotations?.['cert-manager.io/inject-ca-from'], 'gpuhooks-system/gpuhooks-webhook')
    }
  )

  t.test('the hook Deployment: two replicas spread over nodes, probes, non-root, read-only root, no token', async (t) => {
    const [deployment] = find(docs(template()), 'Deployment', 'gpuhooks')
    t.match(deployment, {
      spec: {
        replicas: 2,
        template: {
          spec: {
            automountServiceAccountToken: false,
            securityContext: { runAsNonRoot: true },
            containers: [
              {
                command: ['node', 'dist/hooks/main.js'],
                readinessProbe: { httpGet: { path: '/readyz' } },
                livenessProbe: { httpGet: { path: '/healthz' } },
                resources: { requests: { cpu: String, memory: String }, limits: { memory: String } },
                securityContext: { readOnlyRootFilesystem: true, runAsNonRoot: true, allowPrivilegeEscalation: false }
              }
            ],
            affinity: {
              podAntiAffinity: {
                preferredDuringSchedulingIgnoredDuringExecution: [{ podAffinityTerm: { topologyKey: 'kubernetes.io/hostname' } }]
              }
            },
            topologySpreadConstraints: [{ topologyKey: 'kubernetes.io/hostname' }]
          }
        }
      }
    })
    const [service] = find(docs(template()), 'Service', 'gpuhooks')
    t.match(service, {
      spec: {
        ports: [
          { port: 80, targetPort: 'http' },
          { port: 443, targetPort: 'webhook' }
        ]
      }
    })
    t.equal(find(docs(template()), 'PodDisruptionBudget', 'gpuhooks').length, 1)
  })

  t.test("CRDs are templates kept on uninstall, and the controllers call the release's Service", async (t) => {
    const all = docs(template([], CHART, 'elsewhere'))
    const crds = find(all, 'CustomResourceDefinition')
    t.same(crds.map((c) => c.metadata.name).sort(), staleCopiesSource())
    for (const crd of crds) t.equal(crd.metadata.annotations?.['helm.sh/resource-policy'], 'keep', crd.metadata.name)
    const controllers = [...find(all, 'CompositeController'), ...find(all, 'DecoratorController')]
    t.same(controllers.map((c) => c.metadata.name).sort(), ['gpuhooks-cellpool', 'gpuhooks-instance', 'gpuhooks-instance-isolation'])
    for (const controller of controllers) {
      const hooks = (
        controller as unknown as { spec: { hooks: Record<string, { webhook: { service: { name: string; namespace: string } } }> } }
      ).spec.hooks
      for (const [name, hook] of Object.entries(hooks))
        t.same(
          hook.webhook.service,
          { ...hook.webhook.service, name: 'gpuhooks', namespace: 'elsewhere' },
          `${controller.metadata.name} ${name}`
        )
    }
  })

  t.test("each controller's resync period is a value", async (t) => {
    const periods = (args: string[] = []): Record<string, unknown> => {
      const all = docs(template(args))
      return Object.fromEntries(
        [...find(all, 'CompositeController'), ...find(all, 'DecoratorController')].map((c) => [
          c.metadata.name,
          (c as unknown as { spec: { resyncPeriodSeconds?: unknown } }).spec.resyncPeriodSeconds
        ])
      )
    }
    t.same(periods(), { 'gpuhooks-cellpool': 30, 'gpuhooks-instance': 600, 'gpuhooks-instance-isolation': 300 })
    t.same(
      periods([
        '--set',
        'controllers.cellpool.resyncPeriodSeconds=45',
        '--set',
        'controllers.instance.resyncPeriodSeconds=60',
        '--set',
        'controllers.isolation.resyncPeriodSeconds=90'
      ]),
      { 'gpuhooks-cellpool': 45, 'gpuhooks-instance': 60, 'gpuhooks-instance-isolation': 90 }
    )
  })

  t.test('the agent has a disruption budget when it has a standby, and none with one replica', async (t) => {
    const [pdb] = find(docs(template()), 'PodDisruptionBudget', 'gpuhooks-agent')
    t.match(pdb, {
      metadata: { namespace: 'gpuhooks-system' },
      spec: {
        minAvailable: 1,
        selector: { matchLabels: { 'app.kubernetes.io/name': 'gpuhooks', 'app.kubernetes.io/component': 'agent' } }
      }
    })
    t.same(find(docs(template(['--set', 'agent.replicas=1'])), 'PodDisruptionBudget', 'gpuhooks-agent'), [])
  })

  t.test(
    'namespace users read the resources and write only Instances through the aggregated roles; pools have a role of their own',
    async (t) => {
      const all = docs(template())
      const [view] = find(all, 'ClusterRole', 'gpuhooks-view')
      const [edit] = find(all, 'ClusterRole', 'gpuhooks-edit')
      const [pools] = find(all, 'ClusterRole', 'gpuhooks-cellpool-edit')
      const labels = (role: unknown): Record<string, string> => (role as { metadata: { labels: Record<string, string> } }).metadata.labels
      const aggregation = (role: unknown): string[] =>
        Object.keys(labels(role))
          .filter((k) => k.startsWith('rbac.authorization.k8s.io/aggregate-to-'))
          .sort()
      t.same(aggregation(view), [
        'rbac.authorization.k8s.io/aggregate-to-admin',
        'rbac.authorization.k8s.io/aggregate-to-edit',
        'rbac.authorization.k8s.io/aggregate-to-view'
      ])
      t.same(aggregation(edit), ['rbac.authorization.k8s.io/aggregate-to-admin', 'rbac.authorization.k8s.io/aggregate-to-edit'])
      t.same(
        (edit as unknown as { rules: unknown[] }).rules,
        [
          {
            apiGroups: ['worker.gpustack.ai'],
            resources: ['instances'],
            verbs: ['create', 'update', 'patch', 'delete', 'deletecollection']
          }
        ],
        'edit writes Instances only: no GPUCellPool (root on the GPU hosts), no CellNodeSet'
      )
      t.same(aggregation(pools), [], 'the pool writers’ role joins no namespace role by default')
      t.same((pools as unknown as { rules: unknown[] }).rules, [
        {
          apiGroups: ['cells.kubeswift.io'],
          resources: ['gpucellpools'],
          verbs: ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection']
        },
        {
          apiGroups: ['cells.kubeswift.io'],
          resources: ['gpucellpools/status', 'cellnodesets', 'cellnodesets/status'],
          verbs: ['get', 'list', 'watch']
        }
      ])
      t.same((view as unknown as { rules: unknown[] }).rules, [
        {
          apiGroups: ['worker.gpustack.ai'],
          resources: ['instances', 'instances/status', 'instancetypes', 'instanceactivities', 'instanceactivities/status'],
          verbs: ['get', 'list', 'watch']
        },
        {
          apiGroups: ['cells.kubeswift.io'],
          resources: ['cellnodesets', 'cellnodesets/status', 'gpucellpools', 'gpucellpools/status'],
          verbs: ['get', 'list', 'watch']
        }
      ])

      const [aggregated] = find(
        docs(template(['--set', 'controllers.cellpool.aggregateToEdit=true'])),
        'ClusterRole',
        'gpuhooks-cellpool-edit'
      )
      t.same(
        aggregation(aggregated),
        ['rbac.authorization.k8s.io/aggregate-to-admin', 'rbac.authorization.k8s.io/aggregate-to-edit'],
        'aggregateToEdit puts pool writes back into edit and admin'
      )
      t.same(
        find(docs(template(['--set', 'controllers.cellpool.enabled=false'])), 'ClusterRole', 'gpuhooks-cellpool-edit'),
        [],
        'no pools, no role'
      )
    }
  )

  t.test('permittedNodeKeys reaches the hook service and the agent as PERMITTED_NODE_KEYS, and nothing is set without it', async (t) => {
    const envOf = (all: Doc[], name: string): Record<string, unknown> => {
      const [deployment] = find(all, 'Deployment', name) as unknown as Array<{
        spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } }
      }>
      return Object.fromEntries((deployment?.spec.template.spec.containers[0]?.env ?? []).map((e) => [e.name, e.value]))
    }
    const set = docs(
      template(['--set', 'controllers.cellpool.permittedNodeKeys={node-restriction.kubernetes.io/,node-role.kubernetes.io/master}'])
    )
    for (const name of ['gpuhooks', 'gpuhooks-agent'])
      t.equal(envOf(set, name).PERMITTED_NODE_KEYS, 'node-restriction.kubernetes.io/,node-role.kubernetes.io/master', name)
    const plain = docs(template())
    for (const name of ['gpuhooks', 'gpuhooks-agent']) t.notOk('PERMITTED_NODE_KEYS' in envOf(plain, name), `${name}: unset by default`)
  })

  t.test('Settings are seeded from values as post-install hooks, and not at all in the plain manifest', async (t) => {
    const all = docs(
      template(['--set', 'worker.instanceIsolationPodCIDRs=10.244.0.0/16', '--set', 'worker.sshServerImage=registry.local/sshd:1'])
    )
    const settings = find(all, 'Setting')
    t.same(
      settings.map((s) => [s.metadata.name, (s as unknown as { value: string }).value]),
      [
        ['instance-isolation-pod-cidrs', '10.244.0.0/16'],
        ['instance-ssh-server-image', 'registry.local/sshd:1']
      ]
    )
    for (const s of settings) t.equal(s.metadata.annotations?.['helm.sh/hook'], 'post-install,post-upgrade')
    t.same(find(docs(readFileSync(PLAIN_MANIFEST, 'utf8')), 'Setting'), [])
  })

  t.test(
    'on a cluster without KubeSwift, or with the cell pool controller off: no cell pool controller, CRD, webhook or agent',
    async (t) => {
      const cellPoolParts = (all: Doc[]): string[] =>
        all
          .filter(
            (d) =>
              /cellpool|agent|cellnodeset/.test(d.metadata.name) ||
              (d.kind === 'CustomResourceDefinition' && d.metadata.name.endsWith('.cells.kubeswift.io'))
          )
          .map((d) => `${d.kind}/${d.metadata.name}`)
      for (const [what, all] of [
        ['no KubeSwift served', docs(bare())],
        ['only SwiftGuests served', docs(bare(['--api-versions', 'swift.kubeswift.io/v1alpha1/SwiftGuest']))],
        ['forced off', docs(template(['--set', 'controllers.cellpool.enabled=false']))]
      ] as const) {
        t.same(cellPoolParts(all), [], `${what}: nothing of cell pools`)
        t.same(
          find(all, 'Deployment').map((d) => d.metadata.name),
          ['gpuhooks'],
          `${what}: no agent`
        )
        t.same(
          [...find(all, 'CompositeController'), ...find(all, 'DecoratorController')].map((c) => c.metadata.name),
          ['gpuhooks-instance', 'gpuhooks-instance-isolation'],
          `${what}: the Instance and isolation controllers`
        )
        t.same(
          find(all, 'ValidatingWebhookConfiguration').map((d) => d.metadata.name),
          ['gpuhooks-instance'],
          `${what}: the Instance webhook only`
        )
      }
      // Served, or forced on without it: the whole cell pool part.
      for (const all of [docs(template()), docs(bare(['--set', 'controllers.cellpool.enabled=true']))]) {
        t.same(cellPoolParts(all).sort(), [
          'ClusterRole/gpuhooks-agent',
          'ClusterRole/gpuhooks-agent-secrets',
          'ClusterRole/gpuhooks-cellpool-edit',
          'ClusterRoleBinding/gpuhooks-agent',
          'ClusterRoleBinding/gpuhooks-agent-secrets',
          'CompositeController/gpuhooks-cellpool',
          'CustomResourceDefinition/cellinfrastructures.cells.kubeswift.io',
          'CustomResourceDefinition/cellnodesets.cells.kubeswift.io',
          'CustomResourceDefinition/gpucellpools.cells.kubeswift.io',
          'Deployment/gpuhooks-agent',
          'PodDisruptionBudget/gpuhooks-agent',
          'Role/gpuhooks-agent-leader',
          'RoleBinding/gpuhooks-agent-leader',
          'ServiceAccount/gpuhooks-agent',
          'ValidatingAdmissionPolicy/gpuhooks-agent-instance-stop',
          'ValidatingAdmissionPolicy/gpuhooks-cellnodeset-spec-writers',
          'ValidatingAdmissionPolicyBinding/gpuhooks-agent-instance-stop',
          'ValidatingAdmissionPolicyBinding/gpuhooks-cellnodeset-spec-writers',
          'ValidatingWebhookConfiguration/gpuhooks-cellpool'
        ])
      }
    }
  )

  t.test('each controller has its switch; a switch that is neither true, false nor auto is refused, named', async (t) => {
    const installed = (args: string[]): string[] =>
      docs(template(args))
        .filter((d) => d.kind === 'CompositeController' || d.kind === 'DecoratorController' || d.kind === 'ValidatingWebhookConfiguration')
        .map((d) => `${d.kind}/${d.metadata.name}`)
    t.same(installed(['--set', 'controllers.instance.enabled=false']), [
      'CompositeController/gpuhooks-cellpool',
      'DecoratorController/gpuhooks-instance-isolation',
      'ValidatingWebhookConfiguration/gpuhooks-cellpool'
    ])
    t.same(installed(['--set', 'controllers.isolation.enabled=false']), [
      'CompositeController/gpuhooks-cellpool',
      'CompositeController/gpuhooks-instance',
      'ValidatingWebhookConfiguration/gpuhooks-instance',
      'ValidatingWebhookConfiguration/gpuhooks-cellpool'
    ])
    // With no webhook left, the certificate Job may touch no configuration (an empty resourceNames would grant every one).
    const none = docs(
      template([
        '--set',
        'controllers.instance.enabled=false',
        '--set',
        'controllers.isolation.enabled=false',
        '--set',
        'controllers.cellpool.enabled=false'
      ])
    )
    t.same((find(none, 'ClusterRole', 'gpuhooks-certs')[0] as unknown as { rules: unknown[] }).rules, [])
    t.same(find(none, 'Setting'), [], 'no Setting seeded without a controller that reads Settings, nor their CRD')
    t.same(
      find(none, 'CustomResourceDefinition').map((d) => d.metadata.name),
      []
    )
    for (const [value, field] of [
      ['controllers.cellpool.enabled=maybe', 'controllers.cellpool.enabled is maybe'],
      ['controllers.instance.enabled=yes', 'controllers.instance.enabled is yes'],
      ['controllers.cellpool.clusterAPI=on', 'controllers.cellpool.clusterAPI is on']
    ] as const) {
      const refused = spawnSync(helm, ['template', 'gpuhooks', CHART, ...cellPoolCapabilities(), '--set', value], { encoding: 'utf8' })
      t.not(refused.status, 0, value)
      t.match(refused.stderr, `${field}; it takes true, false or auto`)
    }
  })

  t.test('the agent: two replicas, a Lease named after the release in its namespace, RBAC as docs/workload.md lists it', async (t) => {
    const all = docs(template())
    const [agent] = find(all, 'Deployment', 'gpuhooks-agent')
    t.match(agent, {
      spec: {
        replicas: 2,
        template: {
          spec: {
            serviceAccountName: 'gpuhooks-agent',
            containers: [
              {
                command: ['node', 'dist/hooks/agent/main.js'],
                readinessProbe: { httpGet: { path: '/readyz', port: 'http' } },
                livenessProbe: { httpGet: { path: '/healthz', port: 'http' } },
                ports: [{ name: 'http', containerPort: 8081 }]
              }
            ]
          }
        }
      }
    })
    const env =
      (
        agent as unknown as {
          spec: { template: { spec: { containers: { env: { name: string; value?: string; valueFrom?: unknown }[] }[] } } }
        }
      ).spec.template.spec.containers[0]?.env ?? []
    t.same(
      env.map((e) => e.name),
      [
        'PORT',
        'LOG_LEVEL',
        'WATCH_NAMESPACE',
        'RESYNC_SECONDS',
        'AGENT_PASS_TIMEOUT_SECONDS',
        'AGENT_PASS_WORKERS',
        'AGENT_NAMESPACE_PASS_WORKERS',
        'AGENT_MAX_ANSWER_BYTES',
        'AGENT_MAX_PASS_BYTES',
        'AGENT_MAX_PENDING_PODS',
        'POD_NAME',
        'LEASE_NAME',
        'PROMETHEUS_URL',
        'ACTIVITY_STOPS',
        'ACTIVITY_ROUND_SECONDS',
        'ACTIVITY_STATUS_REFRESH_SECONDS',
        'POD_NAMESPACE'
      ],
      'names hooks/agent/runtime/config.ts reads'
    )
    t.same(
      env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value]),
      [
        ['PORT', '8081'],
        ['LOG_LEVEL', 'info'],
        ['WATCH_NAMESPACE', ''],
        ['RESYNC_SECONDS', '15'],
        ['AGENT_PASS_TIMEOUT_SECONDS', '60'],
        ['AGENT_PASS_WORKERS', '4'],
        ['AGENT_NAMESPACE_PASS_WORKERS', '2'],
        ['AGENT_MAX_ANSWER_BYTES', '8388608'],
        ['AGENT_MAX_PASS_BYTES', '16777216'],
        ['AGENT_MAX_PENDING_PODS', '5000'],
        ['LEASE_NAME', 'gpuhooks-agent'],
        ['PROMETHEUS_URL', ''],
        ['ACTIVITY_STOPS', 'true'],
        ['ACTIVITY_ROUND_SECONDS', '60'],
        ['ACTIVITY_STATUS_REFRESH_SECONDS', '300']
      ]
    )
    const fixed = Object.fromEntries(env.filter((e) => e.value !== undefined).map((e) => [e.name, e.value]))
    t.same(readAgentConfig(fixed).passes, readAgentConfig({}).passes, "the chart's pass bounds are the agent's own defaults")
    t.same(
      readAgentConfig(fixed).activity,
      { ...readAgentConfig({}).activity, stops: true },
      "the chart's activity settings are the agent's defaults, with the stops carried out"
    )
    t.same(
      env.find((e) => e.name === 'POD_NAMESPACE')?.valueFrom,
      { fieldRef: { fieldPath: 'metadata.namespace' } },
      "the Lease in the Pod's namespace"
    )
    const [role] = find(all, 'ClusterRole', 'gpuhooks-agent')
    t.same((role as unknown as { rules: unknown[] }).rules, [
      { apiGroups: ['cells.kubeswift.io'], resources: ['cellnodesets'], verbs: ['get', 'list', 'watch', 'patch'] },
      { apiGroups: ['cells.kubeswift.io'], resources: ['cellnodesets/status'], verbs: ['update', 'patch'] },
      { apiGroups: ['cells.kubeswift.io'], resources: ['gpucellpools'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
      { apiGroups: ['cells.kubeswift.io'], resources: ['cellinfrastructures'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['cells.kubeswift.io'], resources: ['cellinfrastructures/status'], verbs: ['update', 'patch'] },
      { apiGroups: ['resource.k8s.io'], resources: ['resourceslices', 'resourceclaims'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['worker.gpustack.ai'], resources: ['instanceactivities'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: ['worker.gpustack.ai'], resources: ['instanceactivities/status'], verbs: ['patch'] },
      { apiGroups: ['worker.gpustack.ai'], resources: ['instances'], verbs: ['get', 'patch'] },
      { apiGroups: [''], resources: ['pods'], verbs: ['get'] },
      { apiGroups: ['cluster.x-k8s.io'], resources: ['machines'], verbs: ['get', 'patch'] },
      { apiGroups: ['infrastructure.cluster.x-k8s.io'], resources: ['kubeswiftmachines'], verbs: ['get', 'create'] },
      { apiGroups: ['bootstrap.cluster.x-k8s.io'], resources: ['kubeadmconfigs'], verbs: ['get', 'create'] },
      { apiGroups: ['bootstrap.cluster.x-k8s.io'], resources: ['kubeadmconfigtemplates'], verbs: ['get'] }
    ])
    const [leader] = find(all, 'Role', 'gpuhooks-agent-leader')
    t.equal(leader?.metadata.namespace, 'gpuhooks-system')
    t.same((leader as unknown as { rules: unknown[] }).rules, [
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['gpuhooks-agent'], verbs: ['get', 'update'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] }
    ])
    t.same(
      find(all, 'RoleBinding', 'gpuhooks-agent-leader').map((b) => b.metadata.namespace),
      ['gpuhooks-system']
    )
    t.equal(find(all, 'ClusterRoleBinding', 'gpuhooks-agent-secrets').length, 1, 'no namespaces listed: Secrets read cluster-wide')
  })

  t.test('the agent for Instances alone: with the activity controller on, only its rights, CELL_POOLS=false', async (t) => {
    type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] }
    const agentParts = (all: Doc[]): string[] => all.filter((d) => /agent/.test(d.metadata.name)).map((d) => `${d.kind}/${d.metadata.name}`)
    const envOf = (all: Doc[]): Record<string, string> => {
      const [deployment] = find(all, 'Deployment', 'gpuhooks-agent') as unknown as Array<{
        spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } }
      }>
      return Object.fromEntries(
        (deployment?.spec.template.spec.containers[0]?.env ?? []).flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]]))
      )
    }
    const resources = (all: Doc[]): string[] =>
      ((find(all, 'ClusterRole', 'gpuhooks-agent')[0] as unknown as { rules: Rule[] } | undefined)?.rules ?? []).flatMap((r) =>
        r.resources.map((res) => `${r.apiGroups[0] ?? ''}/${res}`)
      )
    const activityRights = ['/events', 'worker.gpustack.ai/instanceactivities', 'worker.gpustack.ai/instanceactivities/status']
    for (const [what, args] of [
      ['nothing set', []],
      ['activity off', ['--set', 'agent.activity.enabled=false', '--set', 'agent.activity.prometheusURL=http://p:9090']],
      ['the Instance controller off', ['--set', 'controllers.instance.enabled=false', '--set', 'agent.activity.enabled=true']]
    ] as const)
      t.same(agentParts(docs(bare([...args]))), [], `${what}: no agent, no agent policy`)
    for (const [what, args] of [
      ['enabled', ['--set', 'agent.activity.enabled=true']],
      ['a Prometheus named', ['--set', 'agent.activity.prometheusURL=http://prometheus.monitoring:9090']]
    ] as const) {
      const all = docs(bare([...args]))
      t.same(
        agentParts(all).sort(),
        [
          ...['ClusterRole', 'ClusterRoleBinding', 'Deployment', 'PodDisruptionBudget'].map((kind) => `${kind}/gpuhooks-agent`),
          ...['Role', 'RoleBinding'].map((kind) => `${kind}/gpuhooks-agent-leader`),
          'ServiceAccount/gpuhooks-agent',
          ...['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'].map((kind) => `${kind}/gpuhooks-agent-instance-stop`)
        ],
        `${what}: the agent, no Secret access`
      )
      t.same(resources(all), [...activityRights, 'worker.gpustack.ai/instances', '/pods'], `${what}: the activity controller's rights only`)
      const env = envOf(all)
      t.equal(env.CELL_POOLS, 'false', what)
      t.notOk('WATCH_NAMESPACE' in env || 'AGENT_PASS_WORKERS' in env, `${what}: no cell pool settings`)
      t.match(readAgentConfig(env), { cellPools: false, activity: { stops: true } }, `${what}: the agent starts on what the chart passes`)
    }
    const cellsOnly = docs(template(['--set', 'agent.activity.enabled=false']))
    t.notOk(
      resources(cellsOnly).some((r) => r.startsWith('worker.gpustack.ai/')),
      'cell pools without activity: no Instance rights'
    )
    t.same(find(cellsOnly, 'ValidatingAdmissionPolicy', 'gpuhooks-agent-instance-stop'), [], 'nor the policy on them')
    t.notOk(
      'ACTIVITY_STOPS' in envOf(cellsOnly) || 'CELL_POOLS' in envOf(cellsOnly),
      'the agent with its defaults: cell pools, no activity'
    )
    t.notOk(resources(docs(template())).includes('worker.gpustack.ai/pods'))
    for (const [args, message] of [
      [
        ['--set', 'agent.activity.enabled=true', '--set', 'agent.activity.stops=false'],
        'agent.activity.enabled is true, but with agent.activity.stops false and no agent.activity.prometheusURL the activity controller has nothing to do'
      ],
      [['--set', 'agent.activity.enabled=maybe'], 'agent.activity.enabled is maybe; it takes true, false or auto']
    ] as const) {
      const refused = spawnSync(helm, ['template', 'gpuhooks', CHART, ...args], { encoding: 'utf8' })
      t.not(refused.status, 0, args.join(' '))
      t.match(refused.stderr, message)
    }
  })

  t.test("the chart's agent RBAC grants what deploy/agent-rbac/infrastructure-cluster.yaml does", async (t) => {
    type Rule = { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] }
    const rules = (all: Doc[], kind: string, name: string): Rule[] =>
      (find(all, kind, name)[0] as unknown as { rules: Rule[] } | undefined)?.rules ?? []
    const norm = (rs: Rule[]): string[] =>
      rs
        .flatMap((r) =>
          r.apiGroups.flatMap((g) =>
            r.resources.flatMap((res) => r.verbs.map((v) => `${g}/${res}${r.resourceNames === undefined ? '' : '/<named>'}:${v}`))
          )
        )
        .sort()
    const chart = docs(template())
    const manual = docs(readFileSync(join(ROOT, 'deploy', 'agent-rbac', 'infrastructure-cluster.yaml'), 'utf8'))
    t.same(norm(rules(chart, 'ClusterRole', 'gpuhooks-agent')), norm(rules(manual, 'ClusterRole', 'gpuhooks-workload-agent')))
    t.same(
      norm(rules(chart, 'ClusterRole', 'gpuhooks-agent-secrets')),
      norm(rules(manual, 'ClusterRole', 'gpuhooks-workload-agent-secrets'))
    )
    t.same(norm(rules(chart, 'Role', 'gpuhooks-agent-leader')), norm(rules(manual, 'Role', 'gpuhooks-workload-agent-leader')))
  })

  t.test('the agent reads Secrets by name only: get, no list or watch', async (t) => {
    const [role] = find(docs(template()), 'ClusterRole', 'gpuhooks-agent-secrets')
    t.same((role as unknown as { rules: unknown[] }).rules, [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }])
  })

  t.test('agent Secret access limited to listed namespaces: RoleBindings there, whatever namespace it watches', async (t) => {
    for (const watched of [[], ['--set', 'agent.watchNamespace=team-a']]) {
      const after = docs(template(['--set', 'agent.secretNamespaces={team-a,team-b}', ...watched]))
      t.same(
        find(after, 'RoleBinding', 'gpuhooks-agent-secrets').map((b) => b.metadata.namespace),
        ['team-a', 'team-b']
      )
      t.same(find(after, 'ClusterRoleBinding', 'gpuhooks-agent-secrets'), [], 'no cluster-wide Secret access when namespaces are listed')
    }
  })

  t.test('with the GPUCellPool CRD in the chart: the cell pool webhook and controller', async (t) => {
    const after = docs(template())
    const [vwc] = find(after, 'ValidatingWebhookConfiguration', 'gpuhooks-cellpool')
    t.match(vwc, {
      webhooks: [
        {
          failurePolicy: 'Fail',
          clientConfig: { service: { path: '/admission/cellpool' } },
          rules: [{ resources: ['gpucellpools'], operations: ['CREATE', 'UPDATE'] }]
        }
      ]
    })
    const [controller] = find(after, 'CompositeController', 'gpuhooks-cellpool')
    t.match(controller, { spec: { parentResource: { apiVersion: 'cells.kubeswift.io/v1alpha1', resource: 'gpucellpools' } } })
    t.same(
      (controller as unknown as { spec: { childResources: { apiVersion: string; resource: string }[] } }).spec.childResources.map(
        (c) => `${c.apiVersion} ${c.resource}`
      ),
      [
        'v1 secrets',
        'seed.kubeswift.io/v1alpha1 swiftseedprofiles',
        'swift.kubeswift.io/v1alpha1 swiftguests',
        'cells.kubeswift.io/v1alpha1 cellnodesets',
        'cells.kubeswift.io/v1alpha1 cellinfrastructures'
      ]
    )
    // controllers.cellpool.clusterAPI: the Machines join the children, where Cluster API's Machines are served (auto)
    // or when forced, never without the cell pool controller; as metacontroller/clusterapi/cellpool.yaml lists them.
    const machines = (args: string[], render = template): unknown[] | undefined =>
      (
        find(docs(render(args)), 'CompositeController', 'gpuhooks-cellpool')[0] as unknown as
          { spec: { childResources: unknown[] } } | undefined
      )?.spec.childResources.slice(5)
    const entry = [{ apiVersion: 'cluster.x-k8s.io/v1beta2', resource: 'machines', updateStrategy: { method: 'InPlace' } }]
    t.same(machines(['--set', 'controllers.cellpool.clusterAPI=true']), entry)
    t.same(machines(['--api-versions', 'cluster.x-k8s.io/v1beta2/Machine']), entry)
    t.same(machines([]), [], 'auto: not served, no Machines')
    t.same(machines(['--api-versions', 'cluster.x-k8s.io/v1beta2/Machine', '--set', 'controllers.cellpool.clusterAPI=false']), [])
    t.equal(machines(['--set', 'controllers.cellpool.clusterAPI=true'], bare), undefined, 'no cell pool controller, no Machines')
    const [byHand] = docs(readFileSync(clusterApiManifestPath(ROOT), 'utf8'))
    t.same((byHand as unknown as { spec: { childResources: unknown[] } }).spec.childResources.slice(5), entry)
    t.same(
      (byHand as unknown as { spec: { childResources: unknown[] } }).spec.childResources.slice(0, 5),
      (controller as unknown as { spec: { childResources: unknown[] } }).spec.childResources,
      'the by-hand variant is metacontroller/cellpool.yaml with the Machines'
    )
  })

  t.test("a multi-document file of metacontroller/ renders every document, Metacontroller's identity from values", async (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-chart-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const chart = join(dir, 'gpuhooks')
    cpSync(CHART, chart, { recursive: true })
    writeFileSync(
      join(chart, 'files', 'metacontroller', 'policy.yaml'),
      [
        '# a policy and its binding',
        'apiVersion: admissionregistration.k8s.io/v1',
        'kind: ValidatingAdmissionPolicy',
        'metadata: {name: only-metacontroller}',
        'spec:',
        '  validations:',
        '    - expression: request.userInfo.username == "system:serviceaccount:metacontroller:metacontroller"',
        '---',
        'apiVersion: admissionregistration.k8s.io/v1',
        'kind: ValidatingAdmissionPolicyBinding',
        'metadata: {name: only-metacontroller}',
        'spec: {policyName: only-metacontroller, validationActions: [Deny]}',
        ''
      ].join('\n')
    )
    const all = docs(template(['--set', 'metacontroller.serviceAccount=system:serviceaccount:mc:controller'], chart))
    const [policy] = find(all, 'ValidatingAdmissionPolicy', 'only-metacontroller')
    t.match(policy, { spec: { validations: [{ expression: 'request.userInfo.username == "system:serviceaccount:mc:controller"' }] } })
    t.equal(find(all, 'ValidatingAdmissionPolicyBinding', 'only-metacontroller').length, 1)
    t.same(
      find(all, 'CompositeController')
        .map((c) => c.metadata.name)
        .sort(),
      ['gpuhooks-cellpool', 'gpuhooks-instance'],
      'the other files still render'
    )
  })

  t.test("the CellNodeSet policy and its binding render, only Metacontroller's identity (a value) writing the spec", async (t) => {
    const source = readFileSync(join(ROOT, 'metacontroller', 'cellnodeset-policy.yaml'), 'utf8')
    t.match(
      source,
      'expression: "\'system:serviceaccount:metacontroller:metacontroller\'"',
      'the repository file names the default identity literally'
    )
    for (const [args, identity] of [
      [[], 'system:serviceaccount:metacontroller:metacontroller'],
      [['--set', 'metacontroller.serviceAccount=system:serviceaccount:mc:mc-metacontroller'], 'system:serviceaccount:mc:mc-metacontroller']
    ] as const) {
      const all = docs(template([...args]))
      const [policy] = find(all, 'ValidatingAdmissionPolicy', 'gpuhooks-cellnodeset-spec-writers')
      t.match(
        policy,
        {
          spec: {
            failurePolicy: 'Fail',
            matchConstraints: {
              resourceRules: [{ apiGroups: ['cells.kubeswift.io'], resources: ['cellnodesets'], operations: ['CREATE', 'UPDATE'] }]
            },
            variables: [{ name: 'writer', expression: `'${identity}'` }]
          }
        },
        identity
      )
      t.notMatch(JSON.stringify(policy), args.length > 0 ? 'metacontroller:metacontroller' : 'mc:mc-metacontroller')
      const [binding] = find(all, 'ValidatingAdmissionPolicyBinding', 'gpuhooks-cellnodeset-spec-writers')
      t.match(binding, { spec: { policyName: 'gpuhooks-cellnodeset-spec-writers', validationActions: ['Deny'] } })
    }
  })

  t.test("the agent's Instance policy renders with the release's agent as the one identity it judges", async (t) => {
    const source = readFileSync(join(ROOT, 'metacontroller', 'agent-instance-policy.yaml'), 'utf8')
    t.match(source, "request.userInfo.username == 'system:serviceaccount:gpuhooks:gpuhooks-workload-agent'", 'the plain manifests name')
    const [policy] = find(docs(template()), 'ValidatingAdmissionPolicy', 'gpuhooks-agent-instance-stop')
    t.match(policy, {
      spec: {
        failurePolicy: 'Fail',
        matchConditions: [{ expression: "request.userInfo.username == 'system:serviceaccount:gpuhooks-system:gpuhooks-agent'" }]
      }
    })
    t.notMatch(JSON.stringify(policy), 'gpuhooks-workload-agent')
  })

  t.test("the InstanceActivity policy renders with Metacontroller's identity (a value) and the release's agent", async (t) => {
    for (const [args, metacontroller, agent] of [
      [[], 'system:serviceaccount:metacontroller:metacontroller', 'system:serviceaccount:gpuhooks-system:gpuhooks-agent'],
      [
        ['--set', 'metacontroller.serviceAccount=system:serviceaccount:mc:mc-metacontroller'],
        'system:serviceaccount:mc:mc-metacontroller',
        'system:serviceaccount:gpuhooks-system:gpuhooks-agent'
      ]
    ] as const) {
      const all = docs(template([...args]))
      const [policy] = find(all, 'ValidatingAdmissionPolicy', 'gpuhooks-instance-activity-writers')
      t.match(policy, {
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: { resourceRules: [{ resources: ['instanceactivities', 'instanceactivities/status'] }] },
          variables: [
            { name: 'specWriter', expression: `'${metacontroller}'` },
            { name: 'statusWriter', expression: `'${agent}'` }
          ]
        }
      })
      t.equal(find(all, 'ValidatingAdmissionPolicyBinding', 'gpuhooks-instance-activity-writers').length, 1)
    }
    const other = docs(template([], CHART, 'platform'))
    const [policy] = find(other, 'ValidatingAdmissionPolicy', 'gpuhooks-instance-activity-writers')
    t.match(policy, { spec: { variables: [{}, { name: 'statusWriter', expression: "'system:serviceaccount:platform:gpuhooks-agent'" }] } })
  })

  t.test('the certificate Job names both webhook configurations when cell pools are in the chart', async (t) => {
    const [job] = find(docs(template()), 'Job')
    t.match(job, {
      spec: {
        template: {
          spec: { containers: [{ env: [{}, {}, {}, { name: 'WEBHOOK_CONFIGURATIONS', value: 'gpuhooks-instance,gpuhooks-cellpool' }] }] }
        }
      }
    })
  })
}

/** The CRD names of the repository's crds/ (files are named `<plural>.<group>.yaml`, the CRD's name). */
function staleCopiesSource(): string[] {
  return readdirSync(join(ROOT, 'crds'))
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => f.slice(0, -'.yaml'.length))
    .sort()
}
