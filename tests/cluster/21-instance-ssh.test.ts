/**
 * The Instance's SSH sidecar and its admission rules against a real API server (docs/instance.md, "The
 * SSH sidecar" and "Admission"): the API server accepts the sidecar Pod where Pod Security allows
 * it, the hook refuses to render it where Pod Security would not (and agrees with the API server's
 * own Pod Security admission), a missing key Secret holds the Pod back, and `kubectl apply` is
 * judged by our webhook as the API server calls it. The rest of the controller: 20-instance.test.ts.
 */
import t from 'tap'
import { startScenario } from './support/scenario.ts'
import { apply } from './support/kubectl.ts'
import { KubeError } from './support/kube.ts'
import { condition, reader, refs } from './support/reads.ts'
import type { JsonObject } from '../support/merge.ts'

const env = await startScenario()
const { kube, cluster } = env
const driver = env.driver('gpuhooks-instance')

// Loose views of what the API server returns; every read is checked by value below.
type Obj = any
const { instance: instanceRef, pod: podRef, service: serviceRef } = refs

const { get, must } = reader<Obj>(kube)
const specValid = (o: Obj): [string, string] => [condition(o, 'SpecValid')?.status, condition(o, 'SpecValid')?.reason]
const settle = (namespace: string, name: string) => driver.settle({ namespace, name }, { maxPasses: 3 })

function instance(namespace: string, name: string, spec: JsonObject): JsonObject {
  return { apiVersion: 'worker.gpustack.ai/v1alpha1', kind: 'Instance', metadata: { name, namespace }, spec }
}

const PRIVILEGED = 'ssh-privileged'
const BASELINE = 'ssh-baseline'
const RESTRICTED = 'ssh-restricted'
const UNLABELLED = 'ssh-unlabelled'
const ADMISSION = 'admission'
const SSHD_IMAGE = 'registry.example/gpuhooks-sshd:test'
const AUTHORIZED_KEYS = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPlaceholderReplaceWithYourOwnPublicKey0000 you@example.com\n'
const WORKSPACE = { type: 'hami', image: 'docker.io/library/python:3.12-slim', command: ['sleep', 'infinity'] }
const SSH_SPEC = {
  ...WORKSPACE,
  sshPublicKey: { name: 'keys' },
  ports: [{ port: 22 }, { port: 8888 }],
  resources: { accelerator: { count: 1 } }
}

async function secret(namespace: string): Promise<void> {
  await apply(cluster, {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'keys', namespace },
    stringData: { authorized_keys: AUTHORIZED_KEYS }
  })
}

t.before(async () => {
  const namespaces: [string, Record<string, string>][] = [
    [PRIVILEGED, { 'pod-security.kubernetes.io/enforce': 'privileged' }],
    [BASELINE, { 'pod-security.kubernetes.io/enforce': 'baseline' }],
    [RESTRICTED, { 'pod-security.kubernetes.io/enforce': 'restricted' }],
    [UNLABELLED, {}],
    [ADMISSION, {}]
  ]
  for (const [name, labels] of namespaces) await apply(cluster, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } })
  for (const [name] of namespaces) await cluster.kubectl(['wait', '--for=create', '-n', name, 'serviceaccount/default', '--timeout=60s'])
  for (const plugin of ['HAMi', 'GPUStack']) {
    await apply(cluster, {
      apiVersion: 'worker.gpustack.ai/v1alpha1',
      kind: 'InstanceType',
      metadata: { name: plugin.toLowerCase() },
      spec: { devicePlugin: plugin, families: ['Whole'], defaults: { cpu: '2', memory: '4Gi' } }
    })
  }
  await apply(cluster, {
    apiVersion: 'gpustack.ai/v1alpha1',
    kind: 'Setting',
    metadata: { name: 'instance-ssh-server-image' },
    value: SSHD_IMAGE
  })
  for (const ns of [PRIVILEGED, BASELINE, RESTRICTED, UNLABELLED]) await secret(ns)
})

t.test('SSH', async (t) => {
  let rendered: Obj

  await t.test('in a privileged namespace the API server accepts the Pod with the sshd sidecar', async (t) => {
    await apply(cluster, instance(PRIVILEGED, 'dev', SSH_SPEC))
    await settle(PRIVILEGED, 'dev')
    const pod = await must(podRef(PRIVILEGED, 'dev'))
    rendered = pod
    t.same(
      pod.spec.containers.map((c: Obj) => c.name),
      ['main', 'sshd'],
      'sshd after main'
    )
    const [main, sshd] = pod.spec.containers
    t.equal(pod.spec.shareProcessNamespace, true)
    t.equal(sshd.image, SSHD_IMAGE, 'the image comes from the Setting')
    t.same(sshd.securityContext, {
      allowPrivilegeEscalation: true,
      capabilities: {
        add: ['SYS_ADMIN', 'SYS_PTRACE', 'SYS_CHROOT', 'SETUID', 'SETGID', 'SETPCAP', 'NET_BIND_SERVICE', 'AUDIT_WRITE'],
        drop: ['ALL']
      },
      privileged: false
    })
    t.same(sshd.ports, [{ name: 'ssh', containerPort: 22, protocol: 'TCP' }])
    t.same(main.ports, [{ containerPort: 8888, protocol: 'TCP' }], '22 is declared on sshd only')
    t.same(sshd.resources, { requests: { cpu: '50m', memory: '64Mi' } }, 'no limits on the sidecar, no accelerator')
    t.same(
      sshd.volumeMounts.filter((m: Obj) => m.name === 'ssh-authorized-keys'),
      [{ name: 'ssh-authorized-keys', mountPath: '/etc/ssh/gpuhooks', readOnly: true }],
      'a directory mount, no subPath'
    )
    const keys = pod.spec.volumes.find((v: Obj) => v.name === 'ssh-authorized-keys')
    t.same(keys?.secret?.items, [{ key: 'authorized_keys', path: 'authorized_keys', mode: 0o400 }])
    t.equal(keys?.secret?.secretName, 'keys')
    const svc = await must(serviceRef(PRIVILEGED, 'dev'))
    t.same(
      svc.spec.ports.map((p: Obj) => [p.name, p.port, p.protocol, p.targetPort]),
      [
        ['tcp-8888', 8888, 'TCP', 8888],
        ['ssh', 22, 'TCP', 22]
      ]
    )
    const inst = await must(instanceRef(PRIVILEGED, 'dev'))
    t.same(specValid(inst), ['True', 'Valid'])
    t.same(
      inst.status.ports.map((p: Obj) => p.name),
      ['tcp-8888', 'ssh']
    )
  })

  // restricted refuses any Instance Pod, so its first reason is PodSecurityForbidsPod; the SSH
  // problem is still spelled out in the same message.
  for (const [ns, reason] of [
    [BASELINE, 'PodSecurityForbidsSSH'],
    [RESTRICTED, 'PodSecurityForbidsPod']
  ] as const) {
    await t.test(`in a namespace enforcing ${ns.slice(4)} the hook reports ${reason} and makes no Pod`, async (t) => {
      await apply(cluster, instance(ns, 'dev', SSH_SPEC))
      await settle(ns, 'dev')
      const inst = await must(instanceRef(ns, 'dev'))
      t.same(specValid(inst), ['False', reason])
      t.match(
        condition(inst, 'SpecValid').message,
        `kubectl label --overwrite namespace ${ns} pod-security.kubernetes.io/enforce=privileged`
      )
      t.equal(inst.status.phase, 'Failed')
      t.equal(await get(podRef(ns, 'dev')), undefined, 'no Pod')
      t.equal(await get(serviceRef(ns, 'dev')), undefined, 'no Service')
    })
  }

  await t.test("the API server's Pod Security admission agrees with the hook", async (t) => {
    const copy = (namespace: string, name: string): JsonObject => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace },
      spec: rendered.spec
    })
    for (const [ns, level] of [
      [BASELINE, 'baseline'],
      [RESTRICTED, 'restricted']
    ] as const) {
      const refused = await kube.create(podRef(ns, ''), copy(ns, 'sidecar')).then(
        () => undefined,
        (err: unknown) => err
      )
      t.ok(refused instanceof KubeError && refused.status === 403, `the rendered sidecar Pod is refused in the ${level} namespace`)
      t.match(
        refused instanceof KubeError ? refused.apiMessage : '',
        new RegExp(`violates PodSecurity "${level}:latest":.* capabilities .*SYS_ADMIN`)
      )
      t.equal(await get(podRef(ns, 'sidecar')), undefined)
    }

    await apply(cluster, instance(BASELINE, 'plain', WORKSPACE))
    await settle(BASELINE, 'plain')
    const plain = await get(podRef(BASELINE, 'plain'))
    t.ok(plain, 'an Instance without SSH runs under baseline: that check is about the sidecar only')

    // Under restricted even the plain workspace Pod is refused, so the hook reports it instead.
    const plainCopy: JsonObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'plain-copy', namespace: RESTRICTED },
      spec: plain?.spec as JsonObject
    }
    const refusedPlain = await kube.create(podRef(RESTRICTED, ''), plainCopy).then(
      () => undefined,
      (err: unknown) => err
    )
    t.ok(refusedPlain instanceof KubeError && refusedPlain.status === 403, 'restricted refuses the plain Pod too')
    await apply(cluster, instance(RESTRICTED, 'plain', WORKSPACE))
    await settle(RESTRICTED, 'plain')
    t.same(specValid(await must(instanceRef(RESTRICTED, 'plain'))), ['False', 'PodSecurityForbidsPod'])
    t.equal(await get(podRef(RESTRICTED, 'plain')), undefined, 'no Pod the API server would refuse')

    await apply(cluster, instance(UNLABELLED, 'dev', SSH_SPEC))
    await settle(UNLABELLED, 'dev')
    t.ok(
      await get(podRef(UNLABELLED, 'dev')),
      'without the label (cluster default privileged) the hook renders the sidecar and the API server accepts it'
    )
  })

  await t.test("the GPUStack plugin's visibility resource on the sidecar is accepted by the API server", async (t) => {
    await apply(cluster, instance(PRIVILEGED, 'seen', { ...SSH_SPEC, type: 'gpustack', resources: { accelerator: { count: 2 } } }))
    await settle(PRIVILEGED, 'seen')
    const [main, sshd] = (await must(podRef(PRIVILEGED, 'seen'))).spec.containers
    t.same(main.resources.limits, { cpu: '2', memory: '4Gi', 'nvidia.com/gpu': '2' })
    t.same(sshd.resources, {
      limits: { 'device.gpustack.ai/nvidia.visibility': '2' },
      requests: { cpu: '50m', memory: '64Mi', 'device.gpustack.ai/nvidia.visibility': '2' }
    })
  })

  await t.test('a new sshd image Setting keeps the running Pod and applies at the next start', async (t) => {
    const pod = await must(podRef(PRIVILEGED, 'dev'))
    await apply(cluster, {
      apiVersion: 'gpustack.ai/v1alpha1',
      kind: 'Setting',
      metadata: { name: 'instance-ssh-server-image' },
      value: `${SSHD_IMAGE}-2`
    })
    await settle(PRIVILEGED, 'dev')
    const kept = await must(podRef(PRIVILEGED, 'dev'))
    t.same([kept.metadata.uid, kept.metadata.resourceVersion], [pod.metadata.uid, pod.metadata.resourceVersion])
    const inst = await must(instanceRef(PRIVILEGED, 'dev'))
    t.same([condition(inst, 'UpToDate').status, condition(inst, 'UpToDate').reason], ['False', 'SettingChanged'])
    await cluster.kubectl(['patch', 'instance', 'dev', '-n', PRIVILEGED, '--type=merge', '-p', '{"spec":{"stop":true}}'])
    await settle(PRIVILEGED, 'dev')
    await cluster.kubectl(['patch', 'instance', 'dev', '-n', PRIVILEGED, '--type=merge', '-p', '{"spec":{"stop":false}}'])
    await settle(PRIVILEGED, 'dev')
    t.equal((await must(podRef(PRIVILEGED, 'dev'))).spec.containers[1].image, `${SSHD_IMAGE}-2`)
    t.equal(condition(await must(instanceRef(PRIVILEGED, 'dev')), 'UpToDate').status, 'True')
  })

  await t.test('a missing key Secret is SSHKeyMissing, and creating it lets the Pod come', async (t) => {
    await apply(cluster, instance(PRIVILEGED, 'nokey', { ...SSH_SPEC, sshPublicKey: { name: 'nokey-keys' } }))
    await settle(PRIVILEGED, 'nokey')
    const inst = await must(instanceRef(PRIVILEGED, 'nokey'))
    t.same(specValid(inst), ['False', 'SSHKeyMissing'])
    t.match(condition(inst, 'SpecValid').message, /Secret ssh-privileged\/nokey-keys does not exist/)
    t.equal(await get(podRef(PRIVILEGED, 'nokey')), undefined, 'no Pod that would hang in ContainerCreating')

    await apply(cluster, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'nokey-keys', namespace: PRIVILEGED },
      data: { other: 'eA==' }
    })
    await settle(PRIVILEGED, 'nokey')
    t.match(condition(await must(instanceRef(PRIVILEGED, 'nokey')), 'SpecValid').message, /has no key authorized_keys/)
    t.equal(await get(podRef(PRIVILEGED, 'nokey')), undefined)

    await apply(cluster, {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'nokey-keys', namespace: PRIVILEGED },
      stringData: { authorized_keys: AUTHORIZED_KEYS }
    })
    await settle(PRIVILEGED, 'nokey')
    t.same(specValid(await must(instanceRef(PRIVILEGED, 'nokey'))), ['True', 'Valid'])
    t.ok(await get(podRef(PRIVILEGED, 'nokey')), 'the Pod is created once the key is there')
  })
})

t.test('admission through kubectl', async (t) => {
  const ns = ADMISSION
  const manifest = (spec: JsonObject): JsonObject => instance(ns, 'locked', { ...WORKSPACE, ...spec })

  await t.test('a running Instance refuses a new image and allows stopping', async (t) => {
    await apply(cluster, manifest({}))
    await settle(ns, 'locked')
    t.equal((await must(instanceRef(ns, 'locked'))).status.podName, 'locked', 'the driver wrote status.podName')
    const pod = await must(podRef(ns, 'locked'))

    const changed = await apply(cluster, manifest({ image: 'docker.io/library/python:3.13-slim' }), { allowFail: true })
    t.not(changed.code, 0)
    t.match(changed.stderr, /admission webhook "instances\.worker\.gpustack\.ai" denied the request/)
    t.match(changed.stderr, 'spec.image cannot change while the Instance is running; set spec.stop: true first')
    t.equal((await must(instanceRef(ns, 'locked'))).spec.image, WORKSPACE.image, 'the stored image is unchanged')

    const both = await apply(cluster, manifest({ image: 'docker.io/library/python:3.13-slim', stop: true }), { allowFail: true })
    t.not(both.code, 0, 'not even together with stop: the stored Instance still runs')
    t.match(both.stderr, 'spec.image cannot change while the Instance is running')

    const stop = await apply(cluster, manifest({ stop: true }), { allowFail: true })
    t.equal(stop.code, 0, `stopping is allowed: ${stop.stderr}`)
    await settle(ns, 'locked')
    t.equal(await get(podRef(ns, 'locked')), undefined)
    t.equal((await must(instanceRef(ns, 'locked'))).status.phase, 'Stopped')

    const edit = await apply(cluster, manifest({ image: 'docker.io/library/python:3.13-slim', stop: true }), { allowFail: true })
    t.equal(edit.code, 0, `a stopped Instance can be edited: ${edit.stderr}`)
    await apply(cluster, manifest({ image: 'docker.io/library/python:3.13-slim', stop: false }))
    await settle(ns, 'locked')
    const fresh = await must(podRef(ns, 'locked'))
    t.equal(fresh.spec.containers[0].image, 'docker.io/library/python:3.13-slim', 'the next start uses the new image')
    t.not(fresh.metadata.uid, pod.metadata.uid)
  })

  await t.test('values the API server would refuse in the Pod are refused at admission, each naming its field', async (t) => {
    const webhook = await apply(
      cluster,
      instance(ns, 'bad-sources', {
        ...WORKSPACE,
        env: [
          { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'spec.containers' } } },
          { name: 'GPUS', valueFrom: { resourceFieldRef: { resource: 'limits.nvidia.com/gpu' } } }
        ]
      }),
      { allowFail: true }
    )
    t.not(webhook.code, 0)
    t.match(webhook.stderr, /admission webhook "instances\.worker\.gpustack\.ai" denied the request/)
    t.match(webhook.stderr, 'spec.env[0].valueFrom.fieldRef.fieldPath spec.containers is not a field the downward API offers')
    t.match(webhook.stderr, 'spec.env[1].valueFrom.resourceFieldRef.resource limits.nvidia.com/gpu is not one of limits.cpu')
    t.equal(await get(instanceRef(ns, 'bad-sources')), undefined, 'nothing stored')

    // What the schema states is refused by the API server itself, before the webhook is asked.
    const schema = await apply(
      cluster,
      instance(ns, 'bad-values', {
        ...WORKSPACE,
        env: [{ name: 'A=B', value: '1' }],
        resources: { cpu: '-1' },
        nodeName: 'Node_1'
      }),
      { allowFail: true }
    )
    t.not(schema.code, 0)
    t.notMatch(schema.stderr, /admission webhook/)
    t.match(schema.stderr, /spec\.env\[0\]\.name in body should match/)
    t.match(schema.stderr, /spec\.nodeName in body should match/)
    t.match(schema.stderr, /spec\.resources\.cpu: Invalid value: .*must not be negative/)
    t.equal(await get(instanceRef(ns, 'bad-values')), undefined, 'nothing stored')
  })

  await t.test('an Instance that never got a Pod can be fixed in place', async (t) => {
    await apply(cluster, instance(ns, 'typo', { ...WORKSPACE, type: 'hamii' }))
    await settle(ns, 'typo')
    const broken = await must(instanceRef(ns, 'typo'))
    t.same(specValid(broken), ['False', 'InstanceTypeNotFound'])
    t.equal(broken.status.podName, undefined)
    const fixed = await apply(cluster, instance(ns, 'typo', WORKSPACE), { allowFail: true })
    t.equal(fixed.code, 0, `the fix is admitted: ${fixed.stderr}`)
    await settle(ns, 'typo')
    t.same(specValid(await must(instanceRef(ns, 'typo'))), ['True', 'Valid'])
    t.ok(await get(podRef(ns, 'typo')), 'the Pod comes')
  })
})
