/**
 * `gpuhooks render`: the request it builds is the one Metacontroller v2 sends (type keys, object
 * keys, declared types present, related objects as the customize hook selects them), its output is
 * the hook's answer, and bad input is named with its file and exits 2.
 */
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse, parseAllDocuments } from 'yaml'
import { asStored } from '../../hooks/cli/read.ts'
import { buildRequest, parseArgs, runRender } from '../../hooks/cli/run.ts'
import { sync as instanceSync } from '../../hooks/instance/sync.ts'
import { finalize as instanceFinalize } from '../../hooks/instance/finalize.ts'
import { sync as isolationSync } from '../../hooks/isolation/sync.ts'
import { childEnv } from '../support/child-env.ts'

const NOW = new Date('2026-03-04T05:06:07Z')
const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-render-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

function file(name: string, text: string): string {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

const instance = {
  apiVersion: 'worker.gpustack.ai/v1alpha1',
  kind: 'Instance',
  metadata: { name: 'nb', namespace: 'team-a', uid: 'uid-nb', generation: 1 },
  spec: { type: 'small', image: 'python:3.12', ports: [{ port: 8888, name: 'jupyter' }], resources: { cpu: '1', memory: '1Gi' } }
}
const instanceType = {
  apiVersion: 'worker.gpustack.ai/v1alpha1',
  kind: 'InstanceType',
  metadata: { name: 'small' },
  spec: { devicePlugin: 'HAMi', resourceName: 'nvidia.com/gpu', manufacturer: 'nvidia', families: ['Whole'], maxCount: 1 }
}
const otherType = { ...instanceType, metadata: { name: 'large' } }
const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } }
const service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'nb', namespace: 'team-a' },
  spec: { type: 'NodePort', ports: [{ name: 'p8888-tcp', port: 8888, protocol: 'TCP', nodePort: 30001 }] }
}
const setting = {
  apiVersion: 'gpustack.ai/v1alpha1',
  kind: 'Setting',
  metadata: { name: 'instance-isolation-pod-cidrs' },
  value: '10.244.0.0/16'
}

const instanceFile = file('instance.yaml', JSON.stringify(instance))
const relatedFile = file('related.yaml', [instanceType, otherType, namespace].map((o) => JSON.stringify(o)).join('\n---\n'))
const childrenFile = file('children.yaml', `apiVersion: v1\nkind: List\nitems:\n  - ${JSON.stringify(service)}\n`)

const stderrOf = (): { lines: string[]; io: { stderr: (s: string) => void } } => {
  const lines: string[] = []
  return { lines, io: { stderr: (s: string) => lines.push(s) } }
}

/**
 * The request Metacontroller v2 sends for \`instance\` with the related and children files: every
 * declared type keyed, the Service under its object key, only the InstanceType customize names.
 */
const instanceRequest = {
  controller: { metadata: { name: 'gpuhooks-instance' } },
  parent: instance,
  children: {
    'Pod.v1': {},
    'Service.v1': { 'team-a/nb': service },
    'ResourceClaimTemplate.resource.k8s.io/v1': {},
    'InstanceActivity.worker.gpustack.ai/v1alpha1': {}
  },
  related: {
    'InstanceType.worker.gpustack.ai/v1alpha1': { small: instanceType },
    'Setting.gpustack.ai/v1alpha1': {},
    'Namespace.v1': { 'team-a': namespace },
    'Service.v1': {},
    'RuntimeClass.node.k8s.io/v1': {}
  },
  finalizing: false
}

t.test('an Instance request has every declared type, v2 keys, and the related objects customize selects', async (t) => {
  const { lines, io } = stderrOf()
  const { request } = buildRequest(parseArgs([instanceFile, '--related', relatedFile, '--children', childrenFile], NOW), io)
  t.same(request, instanceRequest)
  t.same(lines, [
    `gpuhooks render: ${relatedFile}: InstanceType.worker.gpustack.ai/v1alpha1 large ignored: the customize hook does not relate it\n`
  ])
})

t.test("the output is the sync hook's answer to that request, as YAML", async (t) => {
  let out = ''
  const code = runRender([instanceFile, '--related', relatedFile, '--children', childrenFile, '--now', NOW.toISOString()], {
    stdout: (s) => (out += s),
    stderr: () => {}
  })
  t.equal(code, 0)
  const expected = instanceSync(instanceRequest, NOW)
  t.same(parse(out), JSON.parse(JSON.stringify(expected)))
  const children = (parse(out) as { children: { kind: string; metadata: { name: string } }[] }).children
  t.same(children.map((c) => `${c.kind}/${c.metadata.name}`).sort(), ['Pod/nb', 'Service/nb'])
})

t.test('--finalize calls the finalize hook with finalizing true', async (t) => {
  let out = ''
  t.equal(runRender([instanceFile, '--finalize', '--now', NOW.toISOString()], { stdout: (s) => (out += s), stderr: () => {} }), 0)
  const expected = instanceFinalize(
    {
      controller: { metadata: { name: 'gpuhooks-instance' } },
      parent: instance,
      children: { 'Pod.v1': {}, 'Service.v1': {} },
      related: {
        'InstanceType.worker.gpustack.ai/v1alpha1': {},
        'Setting.gpustack.ai/v1alpha1': {},
        'Namespace.v1': {},
        'Service.v1': {},
        'RuntimeClass.node.k8s.io/v1': {}
      },
      finalizing: true
    },
    NOW
  )
  t.same(parse(out), JSON.parse(JSON.stringify(expected)))
})

t.test('a Namespace renders the isolation decorator: object, attachments, related Instances and Setting', async (t) => {
  const nsFile = file('ns.yaml', JSON.stringify(namespace))
  const related = file('ns-related.yaml', [setting, instance].map((o) => JSON.stringify(o)).join('\n---\n'))
  const { io } = stderrOf()
  const { request } = buildRequest(parseArgs([nsFile, '--related', related], NOW), io)
  const expectedRequest = {
    controller: { metadata: { name: 'gpuhooks-instance-isolation' } },
    object: namespace,
    attachments: { 'NetworkPolicy.networking.k8s.io/v1': {} },
    related: {
      'Instance.worker.gpustack.ai/v1alpha1': { 'team-a/nb': instance },
      'Setting.gpustack.ai/v1alpha1': { 'instance-isolation-pod-cidrs': setting }
    },
    finalizing: false
  }
  t.same(request, expectedRequest)
  let out = ''
  t.equal(runRender([nsFile, '--related', related], { stdout: (s) => (out += s), stderr: () => {} }), 0)
  const answer = parse(out) as { attachments: { metadata: { name: string; namespace: string } }[] }
  t.same(answer, JSON.parse(JSON.stringify(isolationSync(expectedRequest))))
  t.same(
    answer.attachments.map((a) => `${a.metadata.namespace}/${a.metadata.name}`),
    ['team-a/gpustack-instance-isolation']
  )
})

/** Ten anchors, each a list of ten aliases of the one before: 10^9 strings if expanded. */
const ALIAS_BOMB = ['a0: &a0 [x, x, x, x, x, x, x, x, x, x]']
  .concat(Array.from({ length: 9 }, (_, i) => `a${i + 1}: &a${i + 1} [${Array(10).fill(`*a${i}`).join(', ')}]`))
  .join('\n')
/** Twenty maps, each merging the one before twice (`<<`, YAML 1.1). */
const MERGE_BOMB = ['%YAML 1.1', '---', 'm0: &m0 {k: 1}']
  .concat(Array.from({ length: 20 }, (_, i) => `m${i + 1}: &m${i + 1} {<<: [*m${i}, *m${i}], n${i + 1}: 1}`))
  .join('\n')

t.test('bad input is named with its file and exits 2', async (t) => {
  const rows: { name: string; argv: string[]; message: RegExp }[] = [
    { name: 'a missing file', argv: [join(dir, 'nope.yaml')], message: /nope\.yaml: cannot read \(ENOENT\)/ },
    {
      name: 'YAML that does not parse',
      argv: [file('broken.yaml', 'kind: [unclosed\n')],
      message: /broken\.yaml: document 1: not valid YAML/
    },
    {
      name: 'a kind no controller has',
      argv: [file('pod.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: d}\n')],
      message:
        /pod\.yaml: Pod \(v1\) is not a parent gpuhooks renders; known: Instance \(worker\.gpustack\.ai\/v1alpha1\), Namespace \(v1\), GPUCellPool \(cells\.kubeswift\.io\/v1alpha1\)/
    },
    {
      name: 'two parents of kinds gpuhooks renders in one file, both named',
      argv: [file('two.yaml', [namespace, instance].map((o) => JSON.stringify(o)).join('\n---\n'))],
      message:
        /two\.yaml: expected one parent object, found 2 of kinds gpuhooks renders: Namespace team-a, Instance team-a\/nb; render them one file each/
    },
    {
      name: 'a file of several objects none of which is a parent',
      argv: [file('types.yaml', [instanceType, otherType].map((o) => JSON.stringify(o)).join('\n---\n'))],
      message:
        /types\.yaml: none of its 2 objects is a parent gpuhooks renders \(InstanceType small, InstanceType large\); known: Instance \(worker\.gpustack\.ai\/v1alpha1\)/
    },
    {
      name: 'an empty parent file',
      argv: [file('empty.yaml', '# nothing yet\n')],
      message: /empty\.yaml: no object in it; expected a parent: Instance/
    },
    {
      name: 'an object without a name',
      argv: [file('noname.yaml', 'apiVersion: v1\nkind: Namespace\nmetadata: {}\n')],
      message: /noname\.yaml: document 1: metadata\.name is missing/
    },
    { name: 'a scalar document', argv: [file('scalar.yaml', 'just text\n')], message: /scalar\.yaml: document 1: not a Kubernetes object/ },
    {
      name: 'a child of a type the controller does not declare',
      argv: [instanceFile, '--children', relatedFile],
      message:
        /related\.yaml: InstanceType\.worker\.gpustack\.ai\/v1alpha1 small is not a child type of the Instance controller \(Pod\.v1, Service\.v1, ResourceClaimTemplate\.resource\.k8s\.io\/v1, InstanceActivity\.worker\.gpustack\.ai\/v1alpha1\)/
    },
    {
      name: 'an Instance without a namespace',
      argv: [file('nons.yaml', JSON.stringify({ ...instance, metadata: { name: 'nb' } }))],
      message: /nons\.yaml: the Instance cannot be read: parent\/parent\/metadata\/namespace/
    },
    {
      name: 'finalize for a controller without one',
      argv: [file('ns2.yaml', JSON.stringify(namespace)), '--finalize'],
      message: /--finalize: the Namespace controller has no finalize hook/
    },
    { name: 'a time that is not one', argv: [instanceFile, '--now', 'yesterday'], message: /--now yesterday is not a time/ },
    { name: 'no parent file', argv: [], message: /expected one parent file, got 0\nusage: gpuhooks render/ },
    { name: 'an unknown option', argv: [instanceFile, '--colour'], message: /unknown option --colour/ },
    {
      name: 'an alias bomb stops at 100 expansions',
      argv: [file('aliases.yaml', ALIAS_BOMB)],
      message: /aliases\.yaml: document 1: its aliases \(or merge keys\) expand past 100 copies/
    },
    {
      name: 'a merge-key bomb (YAML 1.1) stops at 100 expansions',
      argv: [file('merges.yaml', MERGE_BOMB)],
      message: /merges\.yaml: document 1: its aliases \(or merge keys\) expand past 100 copies/
    },
    {
      name: '2,000 nested flow sequences',
      argv: [file('flow.yaml', `${'['.repeat(2000)}${']'.repeat(2000)}\n`)],
      message: /flow\.yaml: document 1: nested too deeply to read \(at most 100 levels\)/
    },
    {
      name: '2,000 nested block mappings',
      argv: [file('block.yaml', Array.from({ length: 2000 }, (_, i) => `${' '.repeat(i)}k:`).join('\n') + '\n')],
      message: /block\.yaml: document 1: nested (too deeply to read|deeper than 100 levels)/
    },
    {
      name: 'a value nested past 100 levels that the parser still reads',
      argv: [file('deep.yaml', `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\nx: ${'['.repeat(300)}${']'.repeat(300)}\n`)],
      message: /deep\.yaml: document 1: nested deeper than 100 levels/
    },
    {
      name: 'an alias to its own ancestor',
      argv: [file('cycle.yaml', 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\nx: &a [*a]\n')],
      message: /cycle\.yaml: document 1: nested deeper than 100 levels \(or an alias to its own ancestor\)/
    },
    {
      name: 'a file past 8 MiB, refused before it is parsed',
      argv: [file('large.yaml', `# ${'x'.repeat(8 * 1024 * 1024)}\n`)],
      message: /large\.yaml: 8388611 bytes, past the bound of 8388608 bytes \(8 MiB\) on an input file/
    },
    { name: 'a directory', argv: [dir], message: /: cannot read \(EISDIR\)/ },
    {
      name: 'a key repeated in one mapping, however deep',
      argv: [file('twice.yaml', 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: x\n  labels: {a: "1", b: "2", a: "3"}\n')],
      message: /twice\.yaml: document 1: not valid YAML: the key "a" repeats in one mapping/
    }
  ]
  for (const row of rows) {
    t.test(row.name, async (t) => {
      let out = ''
      let err = ''
      const code = runRender(row.argv, { stdout: (s) => (out += s), stderr: (s) => (err += s) })
      t.equal(code, 2)
      t.equal(out, '')
      t.match(err, /^gpuhooks render: /)
      t.match(err, row.message)
    })
  }
})

t.test('the command exits 2 with the message on stderr', async (t) => {
  const tsx = join(process.cwd(), 'node_modules', '.bin', 'tsx')
  const result = spawnSync(tsx, ['hooks/cli/render.ts', 'render', join(dir, 'missing.yaml')], { encoding: 'utf8', env: childEnv() })
  t.equal(result.status, 2)
  t.equal(result.stdout, '')
  t.match(result.stderr, /gpuhooks render: .*missing\.yaml: cannot read \(ENOENT\)/)
})

t.test('the command exits 2, not with an uncaught exception, on an alias bomb', async (t) => {
  const tsx = join(process.cwd(), 'node_modules', '.bin', 'tsx')
  const bomb = file('bomb.yaml', ALIAS_BOMB)
  const result = spawnSync(tsx, ['hooks/cli/render.ts', bomb], { encoding: 'utf8', env: childEnv() })
  t.equal(result.status, 2)
  t.match(result.stderr, /^gpuhooks render: .*bomb\.yaml: document 1: its aliases/)
})

// --- GPUCellPool: the example deploy/examples/cellpool.yaml, split as a user would pass it ---
const exampleDocs = parseAllDocuments(readFileSync(join(process.cwd(), 'deploy', 'examples', 'cellpool.yaml'), 'utf8')).map(
  (d) => d.toJS() as Record<string, unknown> & { kind: string; metadata: { name: string } }
)
const examplePool = exampleDocs.find((d) => d.kind === 'GPUCellPool')
const exampleJoin = exampleDocs.find((d) => d.kind === 'Secret' && d.metadata.name === 'inference-cluster-join')
const poolFile = file('pool.yaml', JSON.stringify(examplePool))
const joinFile = file('join.yaml', JSON.stringify(exampleJoin))

type Answer = {
  children: {
    apiVersion: string
    kind: string
    metadata: { name: string; namespace: string }
    spec?: Record<string, unknown>
    data?: Record<string, string>
  }[]
  status: { conditions: { type: string; status: string; reason: string }[] }
}
const renderPool = (argv: string[]): Answer => {
  let out = ''
  let err = ''
  const code = runRender([poolFile, '--related', joinFile, '--now', NOW.toISOString(), ...argv], {
    stdout: (s) => (out += s),
    stderr: (s) => (err += s)
  })
  if (code !== 0) throw new Error(err)
  return parse(out) as Answer
}
const kinds = (answer: Answer): string[] => answer.children.map((c) => `${c.kind}/${c.metadata.name}`).sort()
const condition = (answer: Answer, type: string): { status: string; reason: string } | undefined =>
  answer.status.conditions.find((c) => c.type === type)
/** The answer's children as the API server would hold them, the CellNodeSet with the agent's status. */
const observedFile = (name: string, answer: Answer, rows: { name: string; present: boolean }[]): string =>
  file(
    name,
    answer.children
      .map((c) =>
        JSON.stringify(
          c.kind === 'CellNodeSet'
            ? {
                ...c,
                metadata: { ...c.metadata, generation: 1 },
                status: {
                  observedGeneration: 1,
                  observedTime: NOW.toISOString(),
                  nodeCount: 0,
                  nodes: rows,
                  // The agent's summary of the infrastructure cluster's physical GPUs: none published (the check says nothing).
                  physicalGPUs: { observedTime: NOW.toISOString(), published: 0, ready: 0, held: 0, own: 0 },
                  conditions: [
                    { type: 'Reachable', status: 'True', reason: 'Reachable', message: '', lastTransitionTime: NOW.toISOString() }
                  ]
                }
              }
            : { ...c, metadata: { ...c.metadata, uid: `uid-${c.metadata.name}` } }
        )
      )
      .join('\n---\n')
  )

t.test(
  'a GPUCellPool request: the declared child types (the Cluster API ones too) and the join Secret, stringData read as data',
  async (t) => {
    t.ok(examplePool !== undefined && exampleJoin !== undefined, 'the example has the pool and its join Secret')
    const { io, lines } = stderrOf()
    const { request } = buildRequest(parseArgs([poolFile, '--related', joinFile], NOW), io)
    const joinText = (exampleJoin as unknown as { stringData: { 'user-data': string } }).stringData['user-data']
    t.same(request, {
      controller: { metadata: { name: 'gpuhooks-cellpool' } },
      parent: examplePool,
      children: {
        'Secret.v1': {},
        'SwiftSeedProfile.seed.kubeswift.io/v1alpha1': {},
        'SwiftGuest.swift.kubeswift.io/v1alpha1': {},
        'CellNodeSet.cells.kubeswift.io/v1alpha1': {},
        'CellInfrastructure.cells.kubeswift.io/v1alpha1': {},
        'Machine.cluster.x-k8s.io/v1beta2': {}
      },
      related: {
        'Secret.v1': {
          'gpu-workspaces/inference-cluster-join': {
            apiVersion: 'v1',
            kind: 'Secret',
            type: 'Opaque',
            metadata: { name: 'inference-cluster-join', namespace: 'gpu-workspaces' },
            data: { 'user-data': Buffer.from(joinText).toString('base64') }
          }
        },
        // A DRA pool relates its claim template; none was given on the command line.
        'ResourceClaimTemplate.resource.k8s.io/v1': {}
      },
      finalizing: false
    })
    t.same(lines, [])
  }
)

t.test('a new pool before the agent has observed the workload cluster: only its CellNodeSet, no cell', async (t) => {
  const first = renderPool([])
  t.same(kinds(first), ['CellNodeSet/inference'])
  const [cns] = first.children
  t.match(cns, {
    apiVersion: 'cells.kubeswift.io/v1alpha1',
    metadata: { namespace: 'gpu-workspaces' },
    spec: { kubeconfigSecretRef: { name: 'inference-cluster-kubeconfig', key: 'value' } }
  })
  t.match(condition(first, 'Progressing'), { status: 'False', reason: 'WorkloadUnobserved' })
  t.match(condition(first, 'WorkloadClusterReachable'), { status: 'False', reason: 'NotObserved' })
})

t.test("once the workload cluster is observed: each cell's bootstrap Secret and seed profile, no guest yet", async (t) => {
  const first = renderPool([])
  const second = renderPool(['--children', observedFile('observed-1.yaml', first, [])])
  t.same(kinds(second), [
    'CellNodeSet/inference',
    'Secret/inference-0-bootstrap',
    'Secret/inference-1-bootstrap',
    'SwiftSeedProfile/inference-0-seed',
    'SwiftSeedProfile/inference-1-seed'
  ])
  const secret = second.children.find((c) => c.metadata.name === 'inference-0-bootstrap')
  const userData = Buffer.from(secret?.data?.['user-data'] ?? '', 'base64').toString('utf8')
  t.match(userData, 'name: "inference-0"', 'the join template rendered for the cell')
  t.notMatch(userData, '{{ nodeName }}')
  t.match(
    second.children.find((c) => c.metadata.name === 'inference-0-seed'),
    { spec: { datasource: 'NoCloud', userDataFrom: { secretKeyRef: { name: 'inference-0-bootstrap', key: 'user-data' } } } }
  )
  const cns = second.children.find((c) => c.kind === 'CellNodeSet') as unknown as { spec: { nodes: { name: string; instance?: string }[] } }
  t.same(
    cns.spec.nodes.map((n) => [n.name, Object.hasOwn(n, 'instance')]),
    [
      ['inference-0', false],
      ['inference-1', false]
    ],
    'a row per cell, no instance before the guest exists'
  )
  t.match(condition(second, 'WorkloadClusterReachable'), { status: 'True' })
})

t.test("a cell's SwiftGuest once its Secret, seed profile and an absent-Node row are observed", async (t) => {
  const second = renderPool(['--children', observedFile('observed-2a.yaml', renderPool([]), [])])
  const third = renderPool([
    '--children',
    observedFile('observed-2.yaml', second, [
      { name: 'inference-0', present: false },
      { name: 'inference-1', present: false }
    ])
  ])
  t.same(
    kinds(third).filter((k) => k.startsWith('SwiftGuest/')),
    ['SwiftGuest/inference-0', 'SwiftGuest/inference-1']
  )
  t.match(
    third.children.find((c) => c.kind === 'SwiftGuest' && c.metadata.name === 'inference-0'),
    {
      apiVersion: 'swift.kubeswift.io/v1alpha1',
      spec: {
        seedProfileRef: { name: 'inference-0-seed' },
        runPolicy: 'Always',
        migration: { enabled: false },
        gpuResourceClaim: { resourceClaimTemplateName: 'single-vfio-gpu' }
      }
    }
  )
  const onlyOne = renderPool(['--children', observedFile('observed-3.yaml', second, [{ name: 'inference-0', present: false }])])
  t.same(
    kinds(onlyOne).filter((k) => k.startsWith('SwiftGuest/')),
    ['SwiftGuest/inference-0'],
    'no row for inference-1: no guest for it'
  )
})

t.test('a GPUCellPool whose join Secret is not given: no cell, the reason in status', async (t) => {
  let out = ''
  t.equal(runRender([poolFile, '--now', NOW.toISOString()], { stdout: (s) => (out += s), stderr: () => {} }), 0)
  const answer = parse(out) as Answer
  t.same(
    answer.children.filter((c) => c.kind !== 'CellNodeSet'),
    []
  )
  t.match(condition(answer, 'Progressing'), { status: 'False', reason: 'JoinSecretMissing' })
})

t.test("a Secret's stringData is read as the API server stores it; other objects pass unchanged", async (t) => {
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 's', namespace: 'n' },
    data: { a: 'b2xk', keep: 'a2VlcA==' },
    stringData: { a: 'new', c: 'x', odd: 7 }
  }
  t.same(
    asStored(secret),
    { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'n' }, data: { a: 'bmV3', keep: 'a2VlcA==', c: 'eA==' } },
    'stringData wins, a non-string value is dropped'
  )
  const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, stringData: { a: 'b' } }
  t.equal(asStored(configMap), configMap)
  const proto = JSON.parse('{"apiVersion":"v1","kind":"Secret","metadata":{"name":"p"},"stringData":{"__proto__":"eA"}}') as typeof secret
  const stored = asStored(proto)
  t.same(Object.keys(stored.data as object), ['__proto__'], 'a key named __proto__ is data, not a prototype')
  t.equal(Object.getPrototypeOf(stored.data), Object.prototype)
})

// --- a parent file as a user writes it: the parent with the objects it goes with ---
const examplesDir = join(process.cwd(), 'deploy', 'examples')

t.test('deploy/examples/instance-ssh.yaml renders: the Instance is the parent, its key Secret a related object', async (t) => {
  const path = join(examplesDir, 'instance-ssh.yaml')
  const [keySecret, sshInstance] = parseAllDocuments(readFileSync(path, 'utf8')).map((d) => d.toJS() as Record<string, any>)
  const { io, lines } = stderrOf()
  const { row, request } = buildRequest(parseArgs([path, '--related', join(examplesDir, 'hami.yaml')], NOW), io)
  t.equal(row.kind, 'Instance')
  t.same(request.parent, sshInstance)
  t.same((request.related as Record<string, unknown>)['Secret.v1'], {
    'gpu-workspaces/dev-ssh-keys': {
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: { name: 'dev-ssh-keys', namespace: 'gpu-workspaces' },
      data: { authorized_keys: Buffer.from(keySecret?.stringData.authorized_keys as string).toString('base64') }
    }
  })
  t.same(lines, [])
  let out = ''
  t.equal(
    runRender([path, '--related', join(examplesDir, 'hami.yaml'), '--now', NOW.toISOString()], {
      stdout: (s) => (out += s),
      stderr: () => {}
    }),
    0
  )
  const answer = parse(out) as { children: { kind: string; spec: { containers?: { name: string }[] } }[]; status: Answer['status'] }
  t.same(
    answer.children.find((c) => c.kind === 'Pod')?.spec.containers?.map((c) => c.name),
    ['main', 'sshd'],
    'the key Secret was seen: the Pod has its SSH sidecar'
  )
  t.match(condition(answer as unknown as Answer, 'SpecValid'), { status: 'True' })
})

t.test('deploy/examples/instance-dra.yaml renders its ResourceClaimTemplate beside the Pod that names it', async (t) => {
  const path = join(examplesDir, 'instance-dra.yaml')
  let out = ''
  t.equal(
    runRender([path, '--related', join(examplesDir, 'nvidia-dra.yaml'), '--now', NOW.toISOString()], {
      stdout: (s) => (out += s),
      stderr: () => {}
    }),
    0
  )
  const answer = parse(out) as { children: { kind: string; metadata: { name: string }; spec: Record<string, any> }[] }
  t.same(
    answer.children.map((c) => `${c.kind} ${c.metadata.name}`),
    ['Pod inference-dra', 'Service inference-dra', 'ResourceClaimTemplate inference-dra-accelerator']
  )
  const pod = answer.children.find((c) => c.kind === 'Pod')
  t.same(pod?.spec.resourceClaims, [{ name: 'accelerator', resourceClaimTemplateName: 'inference-dra-accelerator' }])
  t.same(answer.children.find((c) => c.kind === 'ResourceClaimTemplate')?.spec, {
    spec: {
      devices: {
        requests: [
          {
            name: 'gpu',
            exactly: {
              allocationMode: 'ExactCount',
              count: 1,
              deviceClassName: 'hami-core-gpu.project-hami.io',
              capacity: { requests: { cores: '30', memory: '8Gi' } }
            }
          }
        ]
      }
    }
  })
})

t.test(
  'deploy/examples/cellpool.yaml renders whole, as the pool with its join Secret given apart; the Secret it does not relate is named',
  async (t) => {
    const path = join(examplesDir, 'cellpool.yaml')
    const { io, lines } = stderrOf()
    const whole = buildRequest(parseArgs([path], NOW), io).request
    const apart = buildRequest(parseArgs([poolFile, '--related', joinFile], NOW), stderrOf().io).request
    t.same(whole, apart)
    t.same(lines, [
      `gpuhooks render: ${path}: Secret.v1 gpu-workspaces/inference-cluster-kubeconfig ignored: the customize hook does not relate it\n`
    ])
  }
)

t.test('a --related file may add to what the parent file brings', async (t) => {
  const both = file('nb-and-type.yaml', [instance, instanceType].map((o) => JSON.stringify(o)).join('\n---\n'))
  const { io } = stderrOf()
  const { request } = buildRequest(
    parseArgs([both, '--related', file('ns-only.yaml', JSON.stringify(namespace)), '--children', childrenFile], NOW),
    io
  )
  t.same(request, instanceRequest)
})
