import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Type } from '@sinclair/typebox'
import t from 'tap'
import { parse } from 'yaml'
import { crdFor } from '../../hooks/api/crd.ts'
import { renderSchema, SchemaRenderError, type OpenApiSchema } from '../../hooks/api/openapi.ts'
import { CELL_NODE_SET_CRD, CRDS, GPU_CELL_POOL_CRD, INSTANCE_CRD, INSTANCE_TYPE_CRD, SETTING_CRD } from '../../hooks/api/crds.ts'
import { Quantity, StringEnum, cel } from '../../hooks/api/kit.ts'
import { CRDS_DIR, renderCrdFiles } from '../../hooks/api/write-crds.ts'

type CRD = (typeof CRDS)[number]

function rootOf(crd: CRD): OpenApiSchema {
  const version = crd.spec.versions[0]
  if (version === undefined) throw new Error(`${crd.metadata.name} has no version`)
  return version.schema.openAPIV3Schema
}

/** The schema node at a dotted path (`spec.ports[].name`); `[]` steps into items. */
function nodeAt(root: OpenApiSchema, path: string): OpenApiSchema {
  let node: OpenApiSchema | undefined = root
  for (const part of path.split('.')) {
    const items = part.endsWith('[]')
    const name = items ? part.slice(0, -2) : part
    if (name !== '') node = node?.properties?.[name]
    if (items) node = node?.items
    if (node === undefined) throw new Error(`no schema at ${path}`)
  }
  return node
}

interface Visit {
  path: string
  node: OpenApiSchema
  /** How the node was reached: a property (a field), list items, map values, or the root. */
  via: 'root' | 'property' | 'items' | 'map'
}

function walk(root: OpenApiSchema): Visit[] {
  const out: Visit[] = []
  const visit = (node: OpenApiSchema, path: string, via: Visit['via']): void => {
    out.push({ path, node, via })
    for (const [name, child] of Object.entries(node.properties ?? {})) visit(child, `${path}.${name}`, 'property')
    if (node.items !== undefined) visit(node.items, `${path}[]`, 'items')
    if (node.additionalProperties !== undefined) visit(node.additionalProperties, `${path}{}`, 'map')
  }
  visit(root, '', 'root')
  return out
}

const SCALARS = new Set(['string', 'integer', 'number', 'boolean'])
/**
 * The value validations of a structural schema (apiextensions-apiserver,
 * `pkg/apiserver/schema/structural.go` ValueValidation, in its order); uniqueItems and the junctors
 * other than anyOf are left out, as the renderer refuses them.
 */
const VALUE_VALIDATIONS = [
  'format',
  'maximum',
  'exclusiveMaximum',
  'minimum',
  'exclusiveMinimum',
  'maxLength',
  'minLength',
  'pattern',
  'maxItems',
  'minItems',
  'multipleOf',
  'enum',
  'maxProperties',
  'minProperties',
  'required',
  'anyOf'
]
/**
 * Keywords of a structural schema: those of structural.go's Structural, Generic and Extensions
 * structs and the value validations, plus `example`, which the CRD API accepts beside them.
 */
const ALLOWED_KEYWORDS = new Set([
  'items',
  'properties',
  'description',
  'type',
  'title',
  'default',
  'additionalProperties',
  'nullable',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-embedded-resource',
  'x-kubernetes-int-or-string',
  'x-kubernetes-list-map-keys',
  'x-kubernetes-list-type',
  'x-kubernetes-map-type',
  'x-kubernetes-validations',
  ...VALUE_VALIDATIONS,
  'example'
])
/**
 * Root keywords the API server allows beside the status subresource (validation.go
 * allowedFieldsAtRootSchema): every value validation but enum, maxProperties, minProperties and
 * anyOf, and of the rest only these.
 */
const ROOT_KEYWORDS_WITH_STATUS = new Set([
  'description',
  'type',
  'title',
  'items',
  'properties',
  'x-kubernetes-preserve-unknown-fields',
  'x-kubernetes-validations',
  ...VALUE_VALIDATIONS.filter((key) => !['enum', 'maxProperties', 'minProperties', 'anyOf'].includes(key))
])
/** Formats a CRD validates (apiextensions-apiserver, pkg/apiserver/validation/formats.go); others are dropped. */
const STRING_FORMATS = new Set([
  'date-time',
  'date',
  'duration',
  'uri',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'cidr',
  'mac',
  'uuid',
  'byte',
  'password'
])

/** Every way `root` breaks the API server's structural-schema rules, as `path: problem`. */
function structuralProblems(root: OpenApiSchema, statusSubresource: boolean): string[] {
  const problems: string[] = []
  for (const { path, node, via } of walk(root)) {
    const at = path === '' ? '<root>' : path
    for (const key of Object.keys(node)) {
      if (!ALLOWED_KEYWORDS.has(key)) problems.push(`${at}: keyword ${key} is not structural`)
    }
    const intOrString = node['x-kubernetes-int-or-string'] === true
    const preserve = node['x-kubernetes-preserve-unknown-fields'] === true
    if (node.type === undefined && !intOrString && !preserve) problems.push(`${at}: no type`)
    if (intOrString) {
      if (node.type !== undefined) problems.push(`${at}: int-or-string with a type`)
      if (JSON.stringify(node.anyOf) !== JSON.stringify([{ type: 'integer' }, { type: 'string' }])) {
        problems.push(`${at}: int-or-string anyOf must be exactly [{type: integer}, {type: string}]`)
      }
      if (preserve) problems.push(`${at}: int-or-string with preserve-unknown-fields`)
    } else if (node.anyOf !== undefined) {
      problems.push(`${at}: anyOf outside int-or-string`)
    }
    if (node.additionalProperties !== undefined) {
      if (via === 'root') problems.push(`${at}: additionalProperties at the root`)
      if (node.properties !== undefined) problems.push(`${at}: additionalProperties beside properties`)
      if (typeof node.additionalProperties !== 'object') problems.push(`${at}: boolean additionalProperties`)
    }
    if (node.type === 'array' && node.items === undefined) problems.push(`${at}: array without items`)
    if (node.format !== undefined && !(node.type === 'string' && STRING_FORMATS.has(node.format))) {
      problems.push(`${at}: format ${node.format} is not validated by the API server`)
    }
    for (const key of node.required ?? []) {
      if (node.properties?.[key] === undefined) problems.push(`${at}: required ${key} is not a property`)
    }
    const listType = node['x-kubernetes-list-type']
    if (listType !== undefined && node.type !== 'array') problems.push(`${at}: list type on a non-array`)
    if (listType === 'set' && !SCALARS.has(node.items?.type ?? '')) problems.push(`${at}: a set of non-scalars`)
    if (listType === 'map') {
      const item = node.items
      const keys = node['x-kubernetes-list-map-keys'] ?? []
      if (item?.type !== 'object' || keys.length === 0) problems.push(`${at}: list-map without object items and keys`)
      for (const key of keys) {
        const keySchema = item?.properties?.[key]
        if (keySchema === undefined || !SCALARS.has(keySchema.type ?? ''))
          problems.push(`${at}: list-map key ${key} is not a scalar property`)
        if (!(item?.required ?? []).includes(key) && keySchema?.default === undefined) {
          problems.push(`${at}: list-map key ${key} is neither required nor defaulted`)
        }
      }
    }
    for (const rule of node['x-kubernetes-validations'] ?? []) {
      if (typeof rule.rule !== 'string' || rule.rule === '') problems.push(`${at}: a CEL rule without rule`)
      if (typeof rule.message !== 'string' || rule.message === '' || rule.message.includes('\n')) {
        problems.push(`${at}: CEL rule ${String(rule.rule)} needs a one-line message`)
      }
    }
  }
  const root0 = root
  if (root0.type !== 'object') problems.push('<root>: type must be object')
  if (root0.nullable === true) problems.push('<root>: nullable')
  if (JSON.stringify(root0.properties?.metadata) !== JSON.stringify({ type: 'object' })) {
    problems.push('.metadata: the root metadata may only be {type: object}')
  }
  if (statusSubresource) {
    for (const key of Object.keys(root0)) {
      if (!ROOT_KEYWORDS_WITH_STATUS.has(key)) problems.push(`<root>: ${key} is not allowed at the root beside the status subresource`)
    }
  }
  return problems
}

t.test('the committed crds/*.yaml are what write-crds renders', async (t) => {
  const rendered = renderCrdFiles()
  for (const [name, text] of rendered) {
    let committed: string | undefined
    try {
      committed = readFileSync(join(CRDS_DIR, name), 'utf8')
    } catch {
      committed = undefined
    }
    if (committed === text) t.pass(`crds/${name} matches the schemas`)
    else t.fail(`crds/${name} is stale: run npm run crds`)
  }
  const files = readdirSync(CRDS_DIR)
    .filter((name) => name.endsWith('.yaml'))
    .sort()
  t.same(files, [...rendered.keys()].sort(), 'crds/ holds exactly the rendered files (run npm run crds)')
})

t.test('rendering leaves the CRD objects as they were, so a second render writes the committed bytes again', async (t) => {
  const before = structuredClone(CRDS)
  renderCrdFiles()
  t.strictSame(CRDS, before, 'the first render changed nothing it was given')
  for (const [name, text] of renderCrdFiles()) t.equal(text, readFileSync(join(CRDS_DIR, name), 'utf8'), `second render of ${name}`)
})

t.test('each committed CRD file parses back to the CRD object', async (t) => {
  for (const crd of CRDS) {
    const text = readFileSync(join(CRDS_DIR, `${crd.spec.names.plural}.${crd.spec.group}.yaml`), 'utf8')
    t.same(parse(text, { version: '1.1' }), JSON.parse(JSON.stringify(crd)), crd.metadata.name)
    t.notMatch(text, /(^|\n)\s*[&*]\w/, `${crd.metadata.name} has no YAML anchors or aliases`)
  }
})

t.test('names, scope, version and subresources are as docs/api.md fixes them', async (t) => {
  const summary = (crd: CRD) => [
    crd.spec.group,
    crd.spec.scope,
    crd.spec.names.kind,
    crd.spec.names.plural,
    crd.spec.names.singular,
    crd.spec.names.shortNames,
    crd.spec.names.categories,
    Object.keys(crd.spec.versions[0]?.subresources ?? {})
  ]
  // group, scope, kind, plural, singular, short names, categories, subresources
  t.same(CRDS.map(summary), [
    ['worker.gpustack.ai', 'Namespaced', 'Instance', 'instances', 'instance', ['inst'], ['gpustack'], ['status']],
    ['worker.gpustack.ai', 'Cluster', 'InstanceType', 'instancetypes', 'instancetype', undefined, ['gpustack'], []],
    [
      'worker.gpustack.ai',
      'Namespaced',
      'InstanceActivity',
      'instanceactivities',
      'instanceactivity',
      ['instact'],
      ['gpustack'],
      ['status']
    ],
    ['gpustack.ai', 'Cluster', 'Setting', 'settings', 'setting', ['set'], ['gpustack'], []],
    ['cells.kubeswift.io', 'Namespaced', 'CellNodeSet', 'cellnodesets', 'cellnodeset', ['cns'], ['kubeswift'], ['status']],
    [
      'cells.kubeswift.io',
      'Namespaced',
      'CellInfrastructure',
      'cellinfrastructures',
      'cellinfrastructure',
      ['cinfra'],
      ['kubeswift'],
      ['status']
    ],
    ['cells.kubeswift.io', 'Namespaced', 'GPUCellPool', 'gpucellpools', 'gpucellpool', ['cellpool'], ['kubeswift'], ['status', 'scale']]
  ])
  for (const crd of CRDS) {
    const name = crd.metadata.name
    t.equal(name, `${crd.spec.names.plural}.${crd.spec.group}`, `${name}: the name is <plural>.<group>`)
    t.equal(crd.spec.names.listKind, `${crd.spec.names.kind}List`, `${name}: listKind`)
    const versions = crd.spec.versions.map((v) => ({ name: v.name, served: v.served, storage: v.storage }))
    t.same(versions, [{ name: 'v1alpha1', served: true, storage: true }], `${name}: one served and stored version`)
    if (crd.spec.versions[0]?.subresources?.status !== undefined) t.same(crd.spec.versions[0].subresources.status, {}, `${name}: status`)
  }
  t.same(GPU_CELL_POOL_CRD.spec.versions[0]?.subresources?.scale, {
    specReplicasPath: '.spec.replicas',
    statusReplicasPath: '.status.replicas',
    labelSelectorPath: '.status.selector'
  })
})

t.test('crdFor names a kind after its lower case unless given a plural, and refuses an apiVersion that is not group/version', async (t) => {
  const schema = Type.Object({ apiVersion: Type.String(), kind: Type.String(), metadata: Type.Object({}) })
  const options = { kind: 'NetworkPolicy', scope: 'Cluster' as const, schema, statusSubresource: false, printerColumns: [] }
  const policy = crdFor({ ...options, apiVersion: 'example.com/v2', plural: 'networkpolicies' })
  t.equal(policy.metadata.name, 'networkpolicies.example.com')
  t.same(policy.spec.names, { kind: 'NetworkPolicy', listKind: 'NetworkPolicyList', plural: 'networkpolicies', singular: 'networkpolicy' })
  t.same(
    policy.spec.versions.map((v) => v.name),
    ['v2']
  )
  t.equal(
    crdFor({ ...options, apiVersion: 'example.com/v2' }).spec.names.plural,
    'networkpolicys',
    'without a plural: the lower case and an s'
  )
  for (const apiVersion of ['v1', 'example.com/v1/extra', '', '/v1', 'example.com/']) {
    t.throws(() => crdFor({ ...options, apiVersion }), { message: `not a group/version: ${apiVersion}` }, JSON.stringify(apiVersion))
  }
})

t.test('printer columns are the ones docs/api.md lists', async (t) => {
  const columns = (crd: CRD) => crd.spec.versions[0]?.additionalPrinterColumns.map((c) => [c.name, c.type, c.jsonPath])
  t.same(columns(INSTANCE_CRD), [
    ['Type', 'string', '.spec.type'],
    ['Phase', 'string', '.status.phase'],
    ['Ports', 'string', '.status.nodePorts'],
    ['Node', 'string', '.status.nodeName'],
    ['SSH', 'string', '.status.connect.ssh'],
    ['Age', 'date', '.metadata.creationTimestamp']
  ])
  t.same(columns(INSTANCE_TYPE_CRD), [
    ['Plugin', 'string', '.spec.devicePlugin'],
    ['Families', 'string', '.spec.families'],
    ['Access', 'string', '.spec.access.namespaceSelector'],
    ['Queue', 'string', '.spec.queue.localQueueName'],
    ['Age', 'date', '.metadata.creationTimestamp']
  ])
  t.same(columns(SETTING_CRD), [
    ['Value', 'string', '.value'],
    ['Age', 'date', '.metadata.creationTimestamp']
  ])
  t.same(columns(CELL_NODE_SET_CRD), [
    ['Reachable', 'string', '.status.conditions[?(@.type=="Reachable")].status'],
    ['Nodes', 'integer', '.status.nodeCount'],
    ['Observed', 'date', '.status.observedTime'],
    ['Age', 'date', '.metadata.creationTimestamp']
  ])
  t.same(columns(GPU_CELL_POOL_CRD), [
    ['Desired', 'integer', '.spec.replicas'],
    ['Ready', 'integer', '.status.readyCells'],
    ['Available', 'string', '.status.conditions[?(@.type=="Ready")].status'],
    ['Age', 'date', '.metadata.creationTimestamp']
  ])
  for (const crd of CRDS) {
    for (const column of crd.spec.versions[0]?.additionalPrinterColumns ?? []) {
      if (column.jsonPath.startsWith('.metadata.')) continue
      // The path must name a field of the schema, or the column stays empty forever.
      // A filter (`[?(@.type=="Ready")]`) steps into the list's items like `[*]`.
      const path = column.jsonPath
        .slice(1)
        .replace('[*]', '[]')
        .replace(/\[\?\(@\.[a-zA-Z]+=="[^"]*"\)\]/, '[]')
      t.doesNotThrow(() => nodeAt(rootOf(crd), path), `${crd.spec.names.kind} column ${column.name} names a schema field`)
      t.ok(column.description.length > 0, `${crd.spec.names.kind} column ${column.name} is described`)
    }
  }
})

t.test('every field has a description, the root object too', async (t) => {
  for (const crd of CRDS) {
    const missing = walk(rootOf(crd))
      .filter(({ via }) => via === 'root' || via === 'property')
      // The API server refuses anything but {type: object} for the root metadata.
      .filter(({ path }) => path !== '.metadata')
      .filter(({ node }) => typeof node.description !== 'string' || node.description.trim() === '')
      .map(({ path }) => path || '<root>')
    t.same(missing, [], `${crd.spec.names.kind}: fields without a description`)
  }
})

t.test('the schemas are structural', async (t) => {
  for (const crd of CRDS) {
    t.same(structuralProblems(rootOf(crd), crd.spec.versions[0]?.subresources !== undefined), [], crd.spec.names.kind)
  }
})

t.test('the structural check itself catches what the API server refuses', async (t) => {
  const ok: OpenApiSchema = { type: 'object', description: 'x', properties: { metadata: { type: 'object' } } }
  t.same(structuralProblems(ok, true), [])
  const bad: OpenApiSchema = {
    type: 'object',
    properties: {
      metadata: { type: 'object', description: 'no' },
      a: { description: 'typeless' },
      b: { type: 'object', properties: { c: { type: 'string' } }, additionalProperties: { type: 'string' } },
      d: { type: 'string', anyOf: [{ type: 'string' }] },
      e: { type: 'array' }
    }
  }
  t.same(structuralProblems(bad, false).sort(), [
    '.a: no type',
    '.b: additionalProperties beside properties',
    '.d: anyOf outside int-or-string',
    '.e: array without items',
    '.metadata: the root metadata may only be {type: object}'
  ])
})

t.test('the Instance status allows observedGeneration, which Metacontroller sets', async (t) => {
  t.equal(nodeAt(rootOf(INSTANCE_CRD), 'status.observedGeneration').type, 'integer')
  t.equal(nodeAt(rootOf(INSTANCE_CRD), 'status.conditions[].observedGeneration').type, 'integer')
})

t.test('the CEL rules are where docs/api.md asks for them', async (t) => {
  const rulesAt = (crd: CRD, path: string) => (nodeAt(rootOf(crd), path)['x-kubernetes-validations'] ?? []).map((r) => String(r.rule))
  const cases: Array<{ name: string; crd: CRD; path: string; expected: RegExp }> = [
    { name: 'a port name is an IANA service name', crd: INSTANCE_CRD, path: 'spec.ports[].name', expected: /matches\('\^\[a-z0-9\]/ },
    { name: 'the port name ssh is reserved', crd: INSTANCE_CRD, path: 'spec.ports[].name', expected: /self != 'ssh'/ },
    {
      name: 'one port number never carries two protocols',
      crd: INSTANCE_CRD,
      path: 'spec.ports',
      expected: /a\.port != b\.port \|\| a\.protocol == b\.protocol/
    },
    { name: 'port names are unique', crd: INSTANCE_CRD, path: 'spec.ports', expected: /exists_one/ },
    { name: 'with SSH only 22/TCP may use port 22', crd: INSTANCE_CRD, path: 'spec', expected: /p\.port != 22/ },
    {
      name: 'memoryMiB and memoryPercentage are exclusive',
      crd: INSTANCE_CRD,
      path: 'spec.resources.accelerator',
      expected: /has\(self\.memoryPercentage\) && has\(self\.memoryMiB\)/
    },
    {
      name: 'count 0 allows no other accelerator field',
      crd: INSTANCE_CRD,
      path: 'spec.resources.accelerator',
      expected: /self\.count != 0/
    },
    { name: 'Sliced and Partitioned take count 1', crd: INSTANCE_CRD, path: 'spec.resources.accelerator', expected: /self\.count == 1/ },
    {
      name: 'Sliced needs a memory share',
      crd: INSTANCE_CRD,
      path: 'spec.resources.accelerator',
      expected: /self\.family != 'Sliced' \|\| has\(self\.memoryMiB\)/
    },
    {
      name: 'profile goes with Partitioned only',
      crd: INSTANCE_CRD,
      path: 'spec.resources.accelerator',
      expected: /== has\(self\.profile\)/
    },
    {
      name: 'workspace size and claim are exclusive',
      crd: INSTANCE_CRD,
      path: 'spec.workspace',
      expected: /has\(self\.size\) && has\(self\.claimName\)/
    },
    {
      name: 'env value and valueFrom are exclusive',
      crd: INSTANCE_CRD,
      path: 'spec.env[]',
      expected: /has\(self\.value\) && has\(self\.valueFrom\)/
    },
    {
      name: 'partition profiles need the Partitioned family',
      crd: INSTANCE_TYPE_CRD,
      path: 'spec',
      expected: /'Partitioned' in self\.families/
    },
    {
      name: 'the pod CIDRs setting takes canonical CIDRs with a prefix above 0',
      crd: SETTING_CRD,
      path: '',
      expected: /instance-isolation-pod-cidrs.*isCIDR.*prefixLength\(\) > 0.*cidr\(c\.trim\(\)\)\.masked\(\)/
    }
  ]
  for (const c of cases) {
    const rules = rulesAt(c.crd, c.path)
    t.ok(
      rules.some((rule) => c.expected.test(rule)),
      c.name,
      { found: rules }
    )
  }
})

t.test('the Setting value is limited to 4096 characters', async (t) => {
  t.equal(nodeAt(rootOf(SETTING_CRD), 'value').maxLength, 4096)
  t.equal(nodeAt(rootOf(SETTING_CRD), 'value').type, 'string')
})

const inPlace = (apiVersion: string, resource: string) => ({ apiVersion, resource, updateStrategy: { method: 'InPlace' } })
const compositeControllers = [
  {
    name: 'the Instance CompositeController drives the Instance CRD',
    file: 'instance.yaml',
    controller: 'gpuhooks-instance',
    crd: INSTANCE_CRD,
    hookPath: '/hooks/instance',
    childResources: [
      { apiVersion: 'v1', resource: 'pods', updateStrategy: { method: 'OnDelete' } },
      inPlace('v1', 'services'),
      { apiVersion: 'resource.k8s.io/v1', resource: 'resourceclaimtemplates', updateStrategy: { method: 'Recreate' } },
      inPlace('worker.gpustack.ai/v1alpha1', 'instanceactivities')
    ],
    resyncPeriodSeconds: Number
  },
  {
    name: 'the cellpool CompositeController drives the GPUCellPool CRD and its five child types',
    file: 'cellpool.yaml',
    controller: 'gpuhooks-cellpool',
    crd: GPU_CELL_POOL_CRD,
    hookPath: '/hooks/cellpool',
    childResources: [
      inPlace('v1', 'secrets'),
      inPlace('seed.kubeswift.io/v1alpha1', 'swiftseedprofiles'),
      inPlace('swift.kubeswift.io/v1alpha1', 'swiftguests'),
      inPlace('cells.kubeswift.io/v1alpha1', 'cellnodesets'),
      inPlace('cells.kubeswift.io/v1alpha1', 'cellinfrastructures')
    ],
    resyncPeriodSeconds: 30
  }
]
for (const c of compositeControllers) {
  t.test(c.name, async (t) => {
    const controller = parse(readFileSync(new URL(`../../metacontroller/${c.file}`, import.meta.url), 'utf8'), { version: '1.1' })
    t.same(controller.spec.childResources, c.childResources)
    t.match(controller, {
      apiVersion: 'metacontroller.k8s.io/v1alpha1',
      kind: 'CompositeController',
      metadata: { name: c.controller },
      spec: {
        parentResource: { apiVersion: `${c.crd.spec.group}/v1alpha1`, resource: c.crd.spec.names.plural },
        generateSelector: true,
        resyncPeriodSeconds: c.resyncPeriodSeconds
      }
    })
    t.ok(c.crd.spec.versions[0]?.subresources?.status, 'Metacontroller ignores a parent without the status subresource')
    for (const hook of ['customize', 'sync', 'finalize']) {
      t.same(
        controller.spec.hooks[hook],
        {
          version: 'v2',
          webhook: {
            service: { name: 'gpuhooks', namespace: 'gpuhooks-system', port: 80, protocol: 'http' },
            path: `${c.hookPath}/${hook}`,
            timeout: '10s'
          }
        },
        `the ${hook} hook`
      )
    }
    t.same(Object.keys(controller.spec.hooks).sort(), ['customize', 'finalize', 'sync'])
  })
}

t.test('renderSchema', async (t) => {
  const cases: Array<{ name: string; given: Parameters<typeof renderSchema>[0]; expected: OpenApiSchema }> = [
    {
      name: 'TypeBox internals are dropped and keys sorted',
      given: Type.Object(
        { b: Type.Optional(Type.String({ description: 'B' })), a: Type.Integer({ minimum: 1, description: 'A' }) },
        { description: 'O' }
      ),
      expected: {
        description: 'O',
        properties: { b: { description: 'B', type: 'string' }, a: { description: 'A', minimum: 1, type: 'integer' } },
        required: ['a'],
        type: 'object'
      }
    },
    {
      name: 'a string-keyed Record becomes additionalProperties',
      given: Type.Record(Type.String(), Type.String(), { description: 'labels' }),
      expected: { additionalProperties: { type: 'string' }, description: 'labels', type: 'object' }
    },
    {
      name: 'additionalProperties false beside properties is dropped (pruning does that job)',
      given: Type.Object({ a: Type.String() }, { additionalProperties: false }),
      expected: { properties: { a: { type: 'string' } }, required: ['a'], type: 'object' }
    },
    {
      name: 'additionalProperties true beside properties is dropped',
      given: Type.Object({ a: Type.String() }, { additionalProperties: true }),
      expected: { properties: { a: { type: 'string' } }, required: ['a'], type: 'object' }
    },
    {
      name: 'an open object with no properties preserves unknown fields',
      given: Type.Object({}, { additionalProperties: true }),
      expected: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true }
    },
    {
      name: 'x-kubernetes-preserve-unknown-fields is kept',
      given: Type.Unsafe({ type: 'object', 'x-kubernetes-preserve-unknown-fields': true, description: 'raw' }),
      expected: { description: 'raw', type: 'object', 'x-kubernetes-preserve-unknown-fields': true }
    },
    {
      name: 'a literal becomes a one-value enum',
      given: Type.Literal('v2', { description: 'hook version' }),
      expected: { description: 'hook version', enum: ['v2'], type: 'string' }
    },
    {
      name: 'a union of literals becomes an enum',
      given: Type.Union([Type.Literal('Drain'), Type.Literal('Force')], { default: 'Drain', description: 'policy' }),
      expected: { default: 'Drain', description: 'policy', enum: ['Drain', 'Force'], type: 'string' }
    },
    {
      name: 'StringEnum renders its enum',
      given: StringEnum(['A', 'B'], { description: 'e' }),
      expected: { description: 'e', enum: ['A', 'B'], type: 'string' }
    },
    {
      name: 'T | null becomes nullable',
      given: Type.Union([Type.String({ maxLength: 3 }), Type.Null()], { description: 'n' }),
      expected: { description: 'n', maxLength: 3, nullable: true, type: 'string' }
    },
    {
      name: 'the Quantity int-or-string keeps its anyOf, pattern and marker',
      given: Quantity({ description: 'q' }),
      expected: {
        anyOf: [{ type: 'integer' }, { type: 'string' }],
        description: 'q',
        pattern: nodeAt(rootOf(INSTANCE_CRD), 'spec.resources.cpu').pattern,
        'x-kubernetes-int-or-string': true
      }
    },
    {
      name: 'a numeric exclusiveMinimum becomes minimum with the OpenAPI v3.0 flag',
      given: Type.Integer({ exclusiveMinimum: 0 }),
      expected: { exclusiveMinimum: true, minimum: 0, type: 'integer' }
    },
    {
      name: 'CEL rules, list types, formats, bounds and defaults are kept',
      given: Type.Array(Type.Object({ k: Type.String({ format: 'date-time' }) }), {
        minItems: 1,
        maxItems: 2,
        default: [],
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-list-map-keys': ['k'],
        ...cel({ rule: 'size(self) > 0', message: 'not empty' })
      }),
      expected: {
        default: [],
        items: { properties: { k: { format: 'date-time', type: 'string' } }, required: ['k'], type: 'object' },
        maxItems: 2,
        minItems: 1,
        type: 'array',
        'x-kubernetes-list-map-keys': ['k'],
        'x-kubernetes-list-type': 'map',
        'x-kubernetes-validations': [{ message: 'not empty', rule: 'size(self) > 0' }]
      }
    }
  ]
  for (const c of cases) t.same(renderSchema(c.given), c.expected, c.name)
  const rendered = renderSchema(Type.Object({ b: Type.String(), a: Type.String() }, { description: 'd' }))
  t.same(Object.keys(rendered), ['description', 'properties', 'required', 'type'], 'keys are sorted')
  t.same(Object.keys(rendered.properties ?? {}), ['a', 'b'], 'property names are sorted')
  t.same(rendered.required, ['b', 'a'], 'lists keep their order')
})

t.test('renderSchema refuses what a structural schema cannot say, naming the path', async (t) => {
  const cases: Array<{ name: string; given: Parameters<typeof renderSchema>[0]; message: RegExp }> = [
    {
      name: 'a union of different shapes',
      given: Type.Object({ a: Type.Union([Type.String(), Type.Integer()]) }),
      message: /^\.a: a structural schema cannot state this union/
    },
    { name: 'a typeless node', given: Type.Object({ a: Type.Any() }), message: /^\.a: a schema node needs a type/ },
    {
      name: 'a Record keyed by a pattern',
      given: Type.Object({ m: Type.Record(Type.TemplateLiteral('x-${string}'), Type.String()) }),
      message: /^\.m: patternProperties other than/
    },
    { name: 'a tuple', given: Type.Tuple([Type.String(), Type.Integer()]), message: /^<root>: keyword additionalItems/ },
    { name: 'uniqueItems', given: Type.Array(Type.String(), { uniqueItems: true }), message: /keyword uniqueItems/ },
    { name: 'a $ref', given: Type.Object({ r: Type.Ref('X') }), message: /^\.r: keyword \$ref/ },
    { name: 'a nullable enum', given: Type.Union([Type.Literal('a'), Type.Literal('b'), Type.Null()]), message: /nullable enum/ },
    { name: 'a nested item', given: Type.Object({ l: Type.Array(Type.Object({ x: Type.Unknown() })) }), message: /^\.l\[\]\.x: / }
  ]
  for (const c of cases) t.throws(() => renderSchema(c.given), { name: 'SchemaRenderError', message: c.message }, c.name)
  t.ok(new SchemaRenderError('', 'x').message.startsWith('<root>: '))
})
