// Tenant isolation against a real API server (isolation.md), driven through the
// `gpuhooks-instance-isolation` DecoratorController on Namespaces: the Setting turns the policy on
// and off, the policy passes the API server's validation and settles, hand edits are reverted or
// reported, hand-written objects are never touched, and the Namespace's status is never written.
//
// Namespaces of the scenario:
//   tenant-a  an Instance (deleted later) and a hand-written policy `allow-monitoring`
//   tenant-b  no Instance
//   tenant-c  an Instance and a hand-written `gpustack-instance-isolation`, made before the Setting
//   tenant-d  an Instance
//   tenant-e  an Instance created while the Setting holds an unparseable value
//   tenant-t  an Instance and its Pod; deleted, and Terminating while the Pod is
import t, { type Test } from 'tap'
import { deepEqual, isObject, LAST_APPLIED_ANNOTATION, type Json, type JsonObject } from '../support/merge.ts'
import { DECORATOR_ANNOTATION } from '../support/children.ts'
import type { SettleReport } from './support/driver.ts'
import { eventually } from './support/env.ts'
import { settingRules, storeUnchecked } from './support/settings.ts'
import { startScenario } from './support/scenario.ts'
import type { ResourceRef } from './support/kube.ts'
import { reader, refs } from './support/reads.ts'

const CONTROLLER = 'gpuhooks-instance-isolation'
const POLICY = 'gpustack-instance-isolation'
const POD_CIDRS = 'instance-isolation-pod-cidrs'
const ANNOTATION = 'gpustack.ai/instance-isolation'
/** The one label the decorator answers, once a sync has seen an Instance (isolation.md, "Inputs"). */
const HOLDS_INSTANCES = 'gpustack.ai/holds-instances'
/** Dual-stack, IPv6 written first and with blanks: the policy lists IPv4 first, trimmed. */
const DUAL_STACK = 'fd00:10:244::/56, 10.244.0.0/16'

const env = await startScenario()
const { cluster, kube } = env
const isolation = env.driver(CONTROLLER)

const nsRef = (name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'namespaces', name })
const policyRef = (namespace: string, name = POLICY): ResourceRef => ({
  apiVersion: 'networking.k8s.io/v1',
  resource: 'networkpolicies',
  namespace,
  name
})
const instanceRef = refs.instance
const SETTING: ResourceRef = { apiVersion: 'gpustack.ai/v1alpha1', resource: 'settings', name: POD_CIDRS }

const meta = (o: JsonObject): JsonObject => (isObject(o.metadata) ? o.metadata : {})
const annotations = (o: JsonObject): Record<string, string> =>
  isObject(meta(o).annotations) ? (meta(o).annotations as Record<string, string>) : {}
const spec = (o: JsonObject): JsonObject => (isObject(o.spec) ? o.spec : {})

const getOrUndefined = reader(kube).get

/** Every NetworkPolicy of the cluster as `namespace/name`, sorted. */
async function allPolicies(): Promise<string[]> {
  const items = (await kube.list({ apiVersion: 'networking.k8s.io/v1', resource: 'networkpolicies' })).body
  return items.map((p) => `${String(meta(p).namespace)}/${String(meta(p).name)}`).sort()
}

async function createNamespace(name: string, metadata: JsonObject = {}): Promise<void> {
  await kube.create(nsRef(name), { apiVersion: 'v1', kind: 'Namespace', metadata: { ...metadata, name } })
}

async function createInstance(namespace: string, name = 'ws'): Promise<void> {
  await kube.create(instanceRef(namespace, name), {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'Instance',
    metadata: { name, namespace },
    spec: { type: 'hami', image: 'busybox:1.36', command: ['sleep', 'infinity'] }
  })
}

/** Writes the Setting's value as an admin would (`kubectl edit`), creating it if absent. */
async function setSetting(value: string): Promise<void> {
  if ((await getOrUndefined(SETTING)) === undefined) {
    await kube.create(SETTING, { apiVersion: 'gpustack.ai/v1alpha1', kind: 'Setting', metadata: { name: POD_CIDRS }, value })
  } else {
    await kube.patch(SETTING, { value }, 'merge')
  }
}

/** A hand-written policy, as a tenant admin would create it. */
async function handWritten(namespace: string, name: string): Promise<JsonObject> {
  return (
    await kube.create(policyRef(namespace, name), {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name, namespace, labels: { owner: 'tenant-admin' } },
      spec: {
        podSelector: { matchLabels: { app: 'monitoring' } },
        policyTypes: ['Ingress'],
        ingress: [{ from: [{ namespaceSelector: {} }] }]
      }
    })
  ).body
}

const peers = [
  { podSelector: {} },
  { ipBlock: { cidr: '0.0.0.0/0', except: ['10.244.0.0/16'] } },
  { ipBlock: { cidr: '::/0', except: ['fd00:10:244::/56'] } }
]
/** isolation.md "The policy", for the dual-stack Setting: every default written, fixed order. */
const EXPECTED_SPEC = {
  podSelector: { matchLabels: { 'resource.gpustack.ai/type': 'instances' } },
  policyTypes: ['Ingress', 'Egress'],
  ingress: [{ from: peers }],
  egress: [
    { to: peers },
    {
      ports: [
        { port: 53, protocol: 'UDP' },
        { port: 53, protocol: 'TCP' }
      ]
    }
  ]
}

const labels = (o: JsonObject): Record<string, string> => (isObject(meta(o).labels) ? (meta(o).labels as Record<string, string>) : {})

/** The fields of a Namespace a decorator must not change: everything but its annotations and the holds-instances label. */
function untouchable(ns: JsonObject): Json {
  const m = meta(ns)
  const { [HOLDS_INSTANCES]: _holds, ...otherLabels } = labels(ns)
  return {
    labels: otherLabels,
    finalizers: m.finalizers ?? null,
    ownerReferences: m.ownerReferences ?? null,
    spec: ns.spec ?? null,
    status: ns.status ?? null
  }
}

/**
 * Settles one Namespace and checks the decorator contract on the Namespace itself: every answer
 * is `status: null` with no label but `gpustack.ai/holds-instances: "true"`, no pass writes a
 * status, the Namespace's status stays as the API server set it, and its resourceVersion moves
 * only when its annotations or that label change.
 */
async function settle(t: Test, name: string): Promise<SettleReport> {
  const before = (await kube.get(nsRef(name))).body
  const report = await isolation.settle({ name })
  const after = (await kube.get(nsRef(name))).body
  for (const [i, pass] of report.passes.entries()) {
    const response = pass.response as JsonObject
    t.equal(response.status, null, `${name} pass ${i + 1}: the hook answers status: null`)
    t.same(
      Object.entries(isObject(response.labels) ? response.labels : {}).filter(([k, v]) => k !== HOLDS_INSTANCES || v !== 'true'),
      [],
      `${name} pass ${i + 1}: the hook answers no label but ${HOLDS_INSTANCES}: "true"`
    )
    t.same(
      pass.writes.filter((w) => w.verb === 'status'),
      [],
      `${name} pass ${i + 1}: no status write`
    )
  }
  t.same(untouchable(after), untouchable(before), `${name}: nothing but annotations changed`)
  if (meta(after).deletionTimestamp === undefined)
    t.same(after.status, { phase: 'Active' }, `${name}: status is the API server's {phase: Active}`)
  if (deepEqual(annotations(before), annotations(after)) && deepEqual(labels(before), labels(after))) {
    t.equal(meta(after).resourceVersion, meta(before).resourceVersion, `${name}: not written, its annotations and labels being the same`)
  }
  return report
}

async function nsAnnotation(name: string): Promise<string | undefined> {
  return annotations((await kube.get(nsRef(name))).body)[ANNOTATION]
}

/** The policy the decorator made, with the promise that it is the decorator's. */
async function ownPolicy(t: Test, namespace: string): Promise<JsonObject> {
  const policy = (await kube.get(policyRef(namespace))).body
  const ns = (await kube.get(nsRef(namespace))).body
  t.same(
    meta(policy).ownerReferences,
    [{ apiVersion: 'v1', kind: 'Namespace', name: namespace, uid: meta(ns).uid, controller: true, blockOwnerDeletion: true }],
    `${namespace}: the policy is controlled by its Namespace`
  )
  t.equal(annotations(policy)[DECORATOR_ANNOTATION], CONTROLLER, `${namespace}: the policy carries the decorator annotation`)
  return policy
}

let monitoring: JsonObject
let handWrittenC: JsonObject

t.test('with the Setting absent or blank, a namespace with an Instance gets no policy', async (t) => {
  await createNamespace('tenant-a', { annotations: { owner: 'team-a' } })
  for (const name of ['tenant-b', 'tenant-c', 'tenant-d']) await createNamespace(name)
  for (const name of ['tenant-a', 'tenant-c', 'tenant-d']) await createInstance(name)
  monitoring = await handWritten('tenant-a', 'allow-monitoring')
  handWrittenC = await handWritten('tenant-c', POLICY)

  t.equal(await getOrUndefined(SETTING), undefined, 'no Setting yet')
  for (const name of ['tenant-a', 'tenant-c']) await settle(t, name)
  t.same(await allPolicies(), ['tenant-a/allow-monitoring', `tenant-c/${POLICY}`], 'Setting absent: no policy made')

  await setSetting('')
  for (const name of ['tenant-a', 'tenant-c', 'tenant-d']) await settle(t, name)
  t.same(await allPolicies(), ['tenant-a/allow-monitoring', `tenant-c/${POLICY}`], 'Setting blank: no policy made')
  for (const name of ['tenant-a', 'tenant-c', 'tenant-d']) t.equal(await nsAnnotation(name), undefined, `${name}: no annotation`)
  for (const name of ['tenant-a', 'tenant-c', 'tenant-d']) {
    t.equal(
      labels((await kube.get(nsRef(name))).body)[HOLDS_INSTANCES],
      'true',
      `${name}: labelled as holding Instances, feature off or on`
    )
  }
})

t.test('with a dual-stack Setting, a namespace with an Instance gets the policy, and a second sync is quiet', async (t) => {
  await setSetting(DUAL_STACK)
  for (const name of ['tenant-a', 'tenant-d']) {
    const report = await settle(t, name)
    t.equal(report.passes.length, 2, `${name}: one pass writes, the next is quiet`)
    t.same(
      report.passes[0]?.writes.map((w) => `${w.verb} ${w.target}`),
      [`create NetworkPolicy.networking.k8s.io/v1 ${name}/${POLICY}`]
    )
    const policy = await ownPolicy(t, name)
    t.same(spec(policy), EXPECTED_SPEC, `${name}: the stored spec is the rendered policy of isolation.md`)
    t.same(meta(policy).labels, { 'app.kubernetes.io/managed-by': 'gpuhooks' })
    const rendered = JSON.parse(annotations(policy)[LAST_APPLIED_ANNOTATION] ?? '{}') as JsonObject
    t.same(spec(policy), spec(rendered), `${name}: the API server added no default to what the hook rendered`)
    t.equal(await nsAnnotation(name), undefined, `${name}: no annotation`)
  }
})

t.test('a namespace without Instances gets no policy', async (t) => {
  await settle(t, 'tenant-b')
  t.equal(await getOrUndefined(policyRef('tenant-b')), undefined)
  t.same(await allPolicies(), ['tenant-a/allow-monitoring', `tenant-a/${POLICY}`, `tenant-c/${POLICY}`, `tenant-d/${POLICY}`])
  t.equal(await nsAnnotation('tenant-b'), undefined)
  t.equal(labels((await kube.get(nsRef('tenant-b'))).body)[HOLDS_INSTANCES], undefined, 'tenant-b: not labelled')
})

t.test('changing the Setting to IPv4 only rewrites the policy in place, opening nothing over IPv6', async (t) => {
  const before = (await kube.get(policyRef('tenant-a'))).body
  await setSetting('10.244.0.0/16')
  const report = await settle(t, 'tenant-a')
  t.same(
    report.passes[0]?.writes.map((w) => `${w.verb} ${w.target}`),
    [`update NetworkPolicy.networking.k8s.io/v1 tenant-a/${POLICY}`]
  )
  const ipv4Only = [{ podSelector: {} }, { ipBlock: { cidr: '0.0.0.0/0', except: ['10.244.0.0/16'] } }]
  const policy = await ownPolicy(t, 'tenant-a')
  t.equal(meta(policy).uid, meta(before).uid, 'the same object, updated')
  t.same(spec(policy), { ...EXPECTED_SPEC, ingress: [{ from: ipv4Only }], egress: [{ to: ipv4Only }, EXPECTED_SPEC.egress[1]] })

  await setSetting(DUAL_STACK)
  await settle(t, 'tenant-a')
  t.same(spec((await kube.get(policyRef('tenant-a'))).body), EXPECTED_SPEC, 'and back to dual-stack')
})

t.test('a hand-written policy of the same name is never touched, and no second policy appears', async (t) => {
  const report = await settle(t, 'tenant-c')
  const answered = (report.passes[0]?.response as JsonObject).attachments as JsonObject[]
  t.same(
    answered.map((a) => `${String(meta(a).namespace)}/${String(meta(a).name)}`),
    [`tenant-c/${POLICY}`],
    'the hook wants a policy there'
  )
  t.match(report.passes[0]?.skipped, [/AlreadyExists/], 'its create is refused and swallowed')
  const now = (await kube.get(policyRef('tenant-c'))).body
  t.equal(meta(now).resourceVersion, meta(handWrittenC).resourceVersion, 'same resourceVersion')
  t.equal(meta(now).uid, meta(handWrittenC).uid, 'same object')
  t.equal(meta(now).ownerReferences, undefined, 'not owned')
  t.same(spec(now), spec(handWrittenC), 'its spec as written')
  t.same(
    (await kube.list({ apiVersion: 'networking.k8s.io/v1', resource: 'networkpolicies', namespace: 'tenant-c' })).body.map(
      (p) => meta(p).name
    ),
    [POLICY],
    'no second policy'
  )
  t.equal(await nsAnnotation('tenant-c'), undefined)
})

t.test('a manual edit of a rendered rule is reverted on the next sync', async (t) => {
  await kube.patch(
    policyRef('tenant-a'),
    { spec: { ingress: [{ from: [{ namespaceSelector: {} }] }], podSelector: { matchLabels: { 'resource.gpustack.ai/type': 'none' } } } },
    'merge'
  )
  const edited = (await kube.get(policyRef('tenant-a'))).body
  t.same(spec(edited).ingress, [{ from: [{ namespaceSelector: {} }] }], 'the edit opened ingress from every namespace')
  const report = await isolation.syncOnce({ name: 'tenant-a' })
  t.same(
    report.writes.map((w) => `${w.verb} ${w.target}`),
    [`update NetworkPolicy.networking.k8s.io/v1 tenant-a/${POLICY}`]
  )
  t.same(spec(await ownPolicy(t, 'tenant-a')), EXPECTED_SPEC, 'the next sync writes the rendered spec back')
  const settled = await settle(t, 'tenant-a')
  t.equal(settled.passes.length, 1, 'and then nothing is left to do')
})

t.test('a hand-added podSelector.matchExpressions survives and is reported as drift', async (t) => {
  const narrowing = [{ key: 'team', operator: 'In', values: ['blue'] }]
  await kube.patch(policyRef('tenant-a'), { spec: { podSelector: { matchExpressions: narrowing } } }, 'merge')
  await settle(t, 'tenant-a')
  const policy = await ownPolicy(t, 'tenant-a')
  t.same(
    spec(policy).podSelector,
    { ...EXPECTED_SPEC.podSelector, matchExpressions: narrowing },
    'the merge keeps what the hook never renders'
  )
  t.equal(await nsAnnotation('tenant-a'), 'drift: spec.podSelector.matchExpressions')

  await kube.patch(policyRef('tenant-a'), [{ op: 'remove', path: '/spec/podSelector/matchExpressions' }], 'json')
  await settle(t, 'tenant-a')
  t.same(spec((await kube.get(policyRef('tenant-a'))).body), EXPECTED_SPEC)
  t.equal(await nsAnnotation('tenant-a'), undefined, 'the report goes once the drift is gone')
})

t.test('deleting the last Instance of a namespace keeps its policy', async (t) => {
  const before = (await kube.get(policyRef('tenant-a'))).body
  await kube.delete(instanceRef('tenant-a', 'ws'))
  await eventually('the Instance is gone', async () =>
    (await getOrUndefined(instanceRef('tenant-a', 'ws'))) === undefined ? true : undefined
  )
  const report = await settle(t, 'tenant-a')
  t.same(
    report.passes.flatMap((p) => p.writes),
    [],
    'nothing is written'
  )
  const after = (await kube.get(policyRef('tenant-a'))).body
  t.equal(meta(after).uid, meta(before).uid)
  t.equal(meta(after).resourceVersion, meta(before).resourceVersion, 'the policy is left as it was')
})

t.test('an unparseable Setting value changes nothing and sets the error annotation', async (t) => {
  // The CRD's CEL rule refuses such a value (10-install), so it can only be stored by a Setting
  // CRD without the rule (an older release, or a CRD edited by hand): install one, write the value,
  // and put the real CRD back. The stored value then stays, as it would after an upgrade.
  t.ok(Array.isArray(settingRules()), 'the real CRD has the rule')
  const bad = '10.244.0.0/16, not-a-cidr'
  await storeUnchecked(cluster, kube, SETTING, bad)
  t.equal((await kube.get(SETTING)).body.value, bad, 'the stored value is the unparseable one')

  await createNamespace('tenant-e')
  await createInstance('tenant-e')
  const policies = new Map<string, JsonObject>()
  for (const name of ['tenant-a', 'tenant-d']) policies.set(name, (await kube.get(policyRef(name))).body)
  for (const name of ['tenant-a', 'tenant-b', 'tenant-c', 'tenant-d', 'tenant-e']) {
    const report = await settle(t, name)
    t.same(
      report.passes.flatMap((p) => p.writes.filter((w) => w.verb !== 'parent')),
      [],
      `${name}: no policy written`
    )
    t.match(
      await nsAnnotation(name),
      /^error: .*instance-isolation-pod-cidrs.*"not-a-cidr"/,
      `${name}: the error annotation names the bad entry`
    )
  }
  for (const [name, before] of policies) {
    const after = (await kube.get(policyRef(name))).body
    t.equal(meta(after).resourceVersion, meta(before).resourceVersion, `${name}: the policy is kept exactly as it was`)
    t.same(spec(after), EXPECTED_SPEC, `${name}: still dual-stack, not the parseable half of the value`)
  }
  t.equal(await getOrUndefined(policyRef('tenant-e')), undefined, 'tenant-e: none rendered where none existed')
  t.equal(
    meta((await kube.get(policyRef('tenant-c'))).body).resourceVersion,
    meta(handWrittenC).resourceVersion,
    'tenant-c: hand-written policy untouched'
  )

  await setSetting(DUAL_STACK)
  for (const name of ['tenant-a', 'tenant-b', 'tenant-c', 'tenant-d', 'tenant-e']) {
    await settle(t, name)
    t.equal(await nsAnnotation(name), undefined, `${name}: the annotation is removed once the value is valid`)
  }
  for (const [name, before] of policies) {
    t.equal(
      meta((await kube.get(policyRef(name))).body).resourceVersion,
      meta(before).resourceVersion,
      `${name}: the same policy renders again`
    )
  }
  t.same(spec(await ownPolicy(t, 'tenant-e')), EXPECTED_SPEC, 'tenant-e: its policy is rendered now')
})

t.test('a terminating namespace keeps its policy while its Pods terminate', async (t) => {
  // What keeps a Namespace Terminating in real life: a Pod bound to a node has to be confirmed
  // gone by its kubelet, and there is none here, so the Pod stays Terminating. Since ordered
  // namespace deletion (Kubernetes 1.33+), the namespace controller deletes the Pods first and
  // everything else, the policy included, only once they are gone.
  await createNamespace('tenant-t')
  await createInstance('tenant-t')
  await settle(t, 'tenant-t')
  const policy = await ownPolicy(t, 'tenant-t')
  await cluster.kubectl(['wait', '--for=create', 'serviceaccount/default', '--namespace=tenant-t', '--timeout=60s'])
  const pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'ws', namespace: 'tenant-t', labels: { 'resource.gpustack.ai/type': 'instances' } },
    spec: { nodeName: 'gpu-node-1', containers: [{ name: 'main', image: 'busybox:1.36' }] }
  }
  await kube.create({ apiVersion: 'v1', resource: 'pods', namespace: 'tenant-t' }, pod)
  await kube.delete(nsRef('tenant-t'))
  await eventually('the namespace controller deletes the Pod', async () => {
    const now = (await kube.get({ apiVersion: 'v1', resource: 'pods', namespace: 'tenant-t', name: 'ws' })).body
    return typeof meta(now).deletionTimestamp === 'string' ? true : undefined
  })
  const terminating = (await kube.get(nsRef('tenant-t'))).body
  t.equal(isObject(terminating.status) ? terminating.status.phase : undefined, 'Terminating')
  t.equal(
    meta((await kube.get(policyRef('tenant-t'))).body).resourceVersion,
    meta(policy).resourceVersion,
    'the namespace controller leaves the policy while the Pod terminates'
  )
  t.ok((await getOrUndefined(instanceRef('tenant-t', 'ws'))) !== undefined, 'and the Instance')

  for (const value of [DUAL_STACK, '']) {
    await setSetting(value)
    const report = await settle(t, 'tenant-t')
    const answered = (report.passes[0]?.response as JsonObject).attachments as JsonObject[]
    t.same(
      answered.map((a) => `${String(meta(a).namespace)}/${String(meta(a).name)}`),
      [`tenant-t/${POLICY}`],
      `Setting ${JSON.stringify(value)}: the hook keeps the policy`
    )
    t.same(spec(answered[0] ?? {}), EXPECTED_SPEC, 'as it was rendered')
    const after = (await kube.get(policyRef('tenant-t'))).body
    t.equal(meta(after).uid, meta(policy).uid)
    t.equal(meta(after).resourceVersion, meta(policy).resourceVersion, `Setting ${JSON.stringify(value)}: the policy is untouched`)
  }
  await setSetting(DUAL_STACK)
})

t.test('emptying the Setting deletes every policy the decorator made, and only those', async (t) => {
  t.same(await allPolicies(), [
    'tenant-a/allow-monitoring',
    `tenant-a/${POLICY}`,
    `tenant-c/${POLICY}`,
    `tenant-d/${POLICY}`,
    `tenant-e/${POLICY}`,
    `tenant-t/${POLICY}`
  ])
  await setSetting('')
  for (const name of ['tenant-a', 'tenant-b', 'tenant-c', 'tenant-d', 'tenant-e', 'tenant-t']) await settle(t, name)
  t.same(
    await allPolicies(),
    ['tenant-a/allow-monitoring', `tenant-c/${POLICY}`, `tenant-t/${POLICY}`],
    "the hand-written ones, and the terminating namespace's"
  )
  t.equal(
    meta((await kube.get(policyRef('tenant-a', 'allow-monitoring'))).body).resourceVersion,
    meta(monitoring).resourceVersion,
    'another policy in the namespace is untouched'
  )
  t.equal(
    meta((await kube.get(policyRef('tenant-c'))).body).resourceVersion,
    meta(handWrittenC).resourceVersion,
    'the same-named hand-written policy is untouched'
  )
  for (const name of ['tenant-a', 'tenant-b', 'tenant-c', 'tenant-d', 'tenant-e'])
    t.equal(await nsAnnotation(name), undefined, `${name}: no annotation`)
})

t.test("once the hand-written policy is deleted, the next sync makes the decorator's own", async (t) => {
  await setSetting(DUAL_STACK)
  await kube.delete(policyRef('tenant-c'))
  const report = await settle(t, 'tenant-c')
  t.same(
    report.passes[0]?.writes.map((w) => `${w.verb} ${w.target}`),
    [`create NetworkPolicy.networking.k8s.io/v1 tenant-c/${POLICY}`]
  )
  const policy = await ownPolicy(t, 'tenant-c')
  t.not(meta(policy).uid, meta(handWrittenC).uid, 'a new object')
  t.same(spec(policy), EXPECTED_SPEC)
})

t.test('no Namespace status was ever written, and only our annotation was ever changed', async (t) => {
  for (const name of ['tenant-a', 'tenant-b', 'tenant-c', 'tenant-d', 'tenant-e']) {
    const ns = (await kube.get(nsRef(name))).body
    t.same(ns.status, { phase: 'Active' }, `${name}: status as the API server set it`)
    const managed = (meta(ns).managedFields as JsonObject[] | undefined) ?? []
    t.same(
      managed.filter((m) => m.subresource === 'status'),
      [],
      `${name}: no manager ever wrote the status subresource`
    )
  }
  t.same(annotations((await kube.get(nsRef('tenant-a'))).body), { owner: 'team-a' }, "a user's annotation survived every sync")
})
