import t from 'tap'
import { customize, type InstanceCustomizeRequest } from '../../hooks/instance/customize.ts'
import { NAME, NS, baseSpec, instance } from './fixtures/instance.ts'

const req = (spec: Record<string, unknown>, options: Parameters<typeof instance>[1] = {}): InstanceCustomizeRequest => ({
  controller: {},
  parent: instance(spec, options)
})

const common = [
  { apiVersion: 'gpustack.ai/v1alpha1', resource: 'settings', names: ['instance-ssh-server-image', 'instance-access-address'] },
  { apiVersion: 'v1', resource: 'namespaces', names: [NS] },
  { apiVersion: 'v1', resource: 'services', namespace: NS, names: [NAME] },
  { apiVersion: 'node.k8s.io/v1', resource: 'runtimeclasses' }
]
const typeRule = { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instancetypes', names: ['a100'] }

const rows: Array<{ name: string; given: InstanceCustomizeRequest; expected: unknown }> = [
  {
    name: 'relates the InstanceType by name, the Setting, the own Namespace, the Service named after the Instance and every RuntimeClass',
    given: req(baseSpec()),
    expected: [typeRule, ...common]
  },
  {
    name: 'with SSH also relates the key Secret in the Instance namespace',
    given: req(baseSpec({ sshPublicKey: { name: 'keys' } })),
    expected: [typeRule, ...common, { apiVersion: 'v1', resource: 'secrets', namespace: NS, names: ['keys'] }]
  },
  {
    name: 'a spec without a usable type relates no InstanceType',
    given: req({ image: 'x' }),
    expected: common
  }
]
for (const row of rows) {
  t.test(row.name, async (t) => {
    t.strictSame(customize(row.given), { relatedResources: row.expected })
  })
}

t.test('every namespaced rule names its namespace and cluster-scoped ones do not', async (t) => {
  const rules = customize(req(baseSpec({ sshPublicKey: { name: 'keys' } }))).relatedResources
  for (const rule of rules) {
    const namespaced = rule.resource === 'services' || rule.resource === 'secrets'
    t.equal(rule.namespace, namespaced ? NS : undefined, rule.resource)
    t.equal(rule.labelSelector, undefined, `${rule.resource} has no label selector`)
    if (rule.resource !== 'runtimeclasses') t.ok((rule.names?.length ?? 0) > 0, `${rule.resource} is related by name`)
  }
})

t.test('the answer depends on the spec only, not on status or generation', async (t) => {
  const a = customize(req(baseSpec(), { generation: 1 }))
  const b = customize(req(baseSpec(), { generation: 7, status: { phase: 'Running' } }))
  t.strictSame(a, b)
})
