/**
 * Entitlement on a real API server (docs/access.md, "Entitlement"): the InstanceType CRD refuses a
 * selector that is not a LabelSelector and a LocalQueue name that cannot be a label value, naming
 * the field; the ValidatingAdmissionPolicy `gpuhooks-instance-type-access` reads each operator as
 * Kubernetes does, checks a create and an update that changes `spec.type` and nothing else, and
 * lets an Instance of a type that does not exist through; an InstanceType with both a queue and
 * DRA is admitted with a warning.
 */
import { join } from 'node:path'
import t from 'tap'
import type { JsonObject } from '../support/merge.ts'
import { startScenario } from './support/scenario.ts'
import { apply, createNamespaces } from './support/kubectl.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const { cluster } = await startScenario()

const instanceType = (name: string, spec: JsonObject): JsonObject => ({
  apiVersion: 'worker.gpustack.ai/v1alpha1',
  kind: 'InstanceType',
  metadata: { name },
  spec: { families: ['Whole'], ...spec }
})
const instance = (namespace: string, name: string, type: string, extra: JsonObject = {}): JsonObject => ({
  apiVersion: 'worker.gpustack.ai/v1alpha1',
  kind: 'Instance',
  metadata: { name, namespace },
  spec: { type, image: 'busybox:1.36', ...extra }
})
const attempt = (object: JsonObject, args: string[] = []) => apply(cluster, object, { args, allowFail: true })
const selector = (namespaceSelector: JsonObject): JsonObject => ({ access: { namespaceSelector } })

/** Namespaces and their labels. */
const NAMESPACES: Record<string, Record<string, string>> = {
  gold: { tier: 'gold', gpus: 'yes' },
  silver: { tier: 'silver' },
  plain: {},
  frozen: { tier: 'gold', frozen: 'true' }
}

t.before(async () => {
  await createNamespaces(cluster, Object.keys(NAMESPACES))
  for (const [ns, labels] of Object.entries(NAMESPACES)) {
    const pairs = Object.entries(labels).map(([k, v]) => `${k}=${v}`)
    if (pairs.length > 0) await cluster.kubectl(['label', 'namespace', ns, ...pairs])
  }
  await cluster.kubectl(['apply', '-f', join(ROOT, 'metacontroller', 'instance-access-policy.yaml')])
})

t.test('the CRD refuses a selector that is not a LabelSelector, and a queue name that is not a label value', async (t) => {
  const cases: Array<[string, JsonObject, string]> = [
    [
      'In without values',
      selector({ matchExpressions: [{ key: 'tier', operator: 'In' }] }),
      'spec.access.namespaceSelector.matchExpressions[0].values'
    ],
    [
      'Exists with values',
      selector({ matchExpressions: [{ key: 'tier', operator: 'Exists', values: ['x'] }] }),
      'In and NotIn need at least one value; Exists and DoesNotExist take none'
    ],
    [
      'an unknown operator',
      selector({ matchExpressions: [{ key: 'tier', operator: 'Gt', values: ['1'] }] }),
      'spec.access.namespaceSelector.matchExpressions[0].operator'
    ],
    ['a key that is not a label key', selector({ matchLabels: { 'bad key': 'x' } }), 'spec.access.namespaceSelector.matchLabels'],
    ['a value that is not a label value', selector({ matchLabels: { tier: 'not ok!' } }), 'spec.access.namespaceSelector.matchLabels.tier'],
    ['a queue name with capitals', { queue: { localQueueName: 'GPU' } }, 'spec.queue.localQueueName'],
    ['a queue name of 64 characters', { queue: { localQueueName: 'q'.repeat(64) } }, 'spec.queue.localQueueName'],
    ['a queue without its name', { queue: {} }, 'spec.queue.localQueueName']
  ]
  for (const [what, spec, field] of cases) {
    const res = await attempt(instanceType('refused', spec))
    t.not(res.code, 0, `${what}: refused`)
    t.match(res.stderr, field, `${what}: names ${field}`)
  }
  const ok = await attempt(
    instanceType('accepted', {
      ...selector({ matchLabels: { 'example.com/tier': 'gold' }, matchExpressions: [{ key: 'frozen', operator: 'DoesNotExist' }] }),
      queue: { localQueueName: 'gpu-a100', workloadPriorityClassName: 'interactive' }
    })
  )
  t.equal(ok.code, 0, `a well-formed selector and queue are stored: ${ok.stderr}`)
})

t.test('the policy reads every operator as Kubernetes does', async (t) => {
  const types: Record<string, JsonObject> = {
    'by-labels': selector({ matchLabels: { tier: 'gold' } }),
    'by-in': selector({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['gold', 'silver'] }] }),
    'by-notin': selector({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['silver'] }] }),
    'by-exists': selector({ matchExpressions: [{ key: 'gpus', operator: 'Exists' }] }),
    'by-absence': selector({ matchLabels: { tier: 'gold' }, matchExpressions: [{ key: 'frozen', operator: 'DoesNotExist' }] }),
    'for-all': selector({}),
    open: {}
  }
  for (const [name, spec] of Object.entries(types)) await apply(cluster, instanceType(name, spec))
  const expected: Record<string, string[]> = {
    'by-labels': ['gold', 'frozen'],
    'by-in': ['gold', 'silver', 'frozen'],
    'by-notin': ['gold', 'plain', 'frozen'],
    'by-exists': ['gold'],
    'by-absence': ['gold'],
    'for-all': ['gold', 'silver', 'plain', 'frozen'],
    open: ['gold', 'silver', 'plain', 'frozen']
  }
  // The API server loads a new policy, binding and parameters asynchronously: wait until the
  // strictest type refuses where it must.
  const deadline = Date.now() + 60_000
  while ((await attempt(instance('plain', 'probe', 'by-labels'), ['--dry-run=server'])).code === 0) {
    if (Date.now() > deadline) throw new Error('the access policy did not take effect within 60 s')
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  for (const [type, admitted] of Object.entries(expected)) {
    for (const ns of Object.keys(NAMESPACES)) {
      const res = await attempt(instance(ns, `by-${type}`, type), ['--dry-run=server'])
      const allowed = admitted.includes(ns)
      t.equal(res.code === 0, allowed, `${type} in ${ns}: ${allowed ? 'admitted' : 'refused'}`)
      if (!allowed) {
        t.match(
          res.stderr,
          `InstanceType ${type} is not available in namespace ${ns} (its spec.access.namespaceSelector does not match the namespace's labels)`
        )
      }
    }
  }
})

t.test('an update is checked when it changes spec.type, and only then; a type that does not exist is let through', async (t) => {
  t.equal((await attempt(instance('silver', 'lab', 'open'))).code, 0, 'created on an open type')
  const toGold = await attempt(instance('silver', 'lab', 'by-labels'))
  t.not(toGold.code, 0, 'changing spec.type to a type that does not admit the namespace is refused')
  t.match(toGold.stderr, 'InstanceType by-labels is not available in namespace silver')
  await apply(cluster, instanceType('open', selector({ matchLabels: { tier: 'gold' } })))
  const edit = await attempt(instance('silver', 'lab', 'open', { stop: true }))
  t.equal(edit.code, 0, `an edit that keeps spec.type passes though the type no longer admits the namespace: ${edit.stderr}`)
  const missing = await attempt(instance('plain', 'ghost', 'no-such-type'), ['--dry-run=server'])
  t.equal(missing.code, 0, `a type that does not exist is the sync hook's business: ${missing.stderr}`)
})

t.test('an InstanceType with a queue and DRA is admitted with a warning', async (t) => {
  const res = await attempt(
    instanceType('dra-queued', {
      devicePlugin: 'DRA',
      dra: { deviceClassName: 'gpu.nvidia.com' },
      queue: { localQueueName: 'gpu' }
    })
  )
  t.equal(res.code, 0, 'stored')
  t.match(res.stderr, 'Warning')
  t.match(
    res.stderr,
    'Kueue counts ResourceClaims against quota only with its DynamicResourceAllocation feature gate and deviceClassMappings set'
  )
  const plain = await attempt(instanceType('dra-only', { devicePlugin: 'DRA', dra: { deviceClassName: 'gpu.nvidia.com' } }))
  t.notMatch(plain.stderr, 'Kueue', 'no warning without a queue')
})
