/**
 * The Instance controller against a real API server (docs/testing.md §3; docs/instance.md, "The Service"): node ports really allocated and kept across stop, edit and start; Pods stamped with
 * the statuses a kubelet would write; the API server's own defaults causing no update loop; an
 * admin's InstanceType change; a Service name taken by hand; finalize ordering and real garbage
 * collection. The user's writes go through kubectl (and so through our admission webhook); the
 * `gpuhooks-instance` driver plays Metacontroller. SSH and admission: 21-instance-ssh.test.ts.
 */
import t from 'tap'
import { eventually } from './support/env.ts'
import { startScenario } from './support/scenario.ts'
import { apply } from './support/kubectl.ts'
import { isReason, resourcePath } from './support/kube.ts'
import { condition, reader, refs } from './support/reads.ts'
import type { JsonObject } from '../support/merge.ts'

const env = await startScenario()
const { kube, cluster } = env
const driver = env.driver('gpuhooks-instance')
const FINALIZER = 'metacontroller.io/compositecontroller-gpuhooks-instance'

// Loose views of what the API server returns; every read is checked by value below.
type Obj = any
const { instance: instanceRef, pod: podRef, service: serviceRef } = refs

const { get, must } = reader<Obj>(kube)
/** The Ready condition's status and reason. */
const ready = (o: Obj): [string, string] => [condition(o, 'Ready')?.status, condition(o, 'Ready')?.reason]
const nodePorts = (svc: Obj): Record<string, number> => Object.fromEntries(svc.spec.ports.map((p: Obj) => [p.name, p.nodePort]))
const inRange = (n: unknown): boolean => typeof n === 'number' && n >= 30000 && n <= 32767

async function patchInstance(namespace: string, name: string, patch: JsonObject): Promise<void> {
  await cluster.kubectl(['patch', 'instance', name, '-n', namespace, '--type=merge', '-p', JSON.stringify(patch)])
}
function instance(namespace: string, name: string, spec: JsonObject): JsonObject {
  return { apiVersion: 'worker.gpustack.ai/v1alpha1', kind: 'Instance', metadata: { name, namespace }, spec }
}
const settle = (namespace: string, name: string, maxPasses = 3) => driver.settle({ namespace, name }, { maxPasses })

/** The kubelet's part: replace the Pod's status through the status subresource. */
async function stampPod(namespace: string, name: string, status: (pod: Obj) => Obj): Promise<Obj> {
  const pod = await must(podRef(namespace, name))
  pod.status = status(pod)
  return (await kube.updateStatus(podRef(namespace, name), pod)).body
}

/** Whether the API server can allocate `nodePort` now: a probe Service asks for it, then goes. */
async function nodePortFree(nodePort: number): Promise<boolean> {
  const probe = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: `probe-${nodePort}`, namespace: 'default' },
    spec: { type: 'NodePort', selector: { probe: 'x' }, ports: [{ port: 80, nodePort }] }
  }
  try {
    await kube.create(serviceRef('default', ''), probe)
  } catch (err) {
    if (isReason(err, 'Invalid') && /already allocated/.test(err.apiMessage)) return false
    throw err
  }
  await kube.delete(serviceRef('default', `probe-${nodePort}`))
  return true
}

const GPU_TOLERATION = { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }
const NAMESPACES = ['lifecycle', 'phases', 'quiet', 'retype', 'taken', 'doomed']

t.before(async () => {
  for (const ns of NAMESPACES) await cluster.kubectl(['create', 'namespace', ns])
  for (const ns of NAMESPACES) await cluster.kubectl(['wait', '--for=create', '-n', ns, 'serviceaccount/default', '--timeout=60s'])
  const type = (name: string, cpu: string): JsonObject => ({
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'InstanceType',
    metadata: { name },
    spec: {
      devicePlugin: 'HAMi',
      resourceName: 'nvidia.com/gpu',
      families: ['Whole', 'Shared', 'Sliced'],
      maxCount: 8,
      nodeSelector: { gpu: 'on' },
      tolerations: [GPU_TOLERATION],
      defaults: { cpu, memory: '4Gi' }
    }
  })
  await apply(cluster, type('hami', '4'))
  await apply(cluster, type('hami-small', '2'))
})

const WORKSPACE = { image: 'docker.io/library/python:3.12-slim', command: ['sleep', 'infinity'] }

t.test('node ports across create, stop, edit, start, clear and delete', async (t) => {
  const ns = 'lifecycle'
  const name = 'lab'
  let first: Record<string, number> = {}
  let firstPodUid = ''
  let serviceVersion = ''

  await t.test('a new Instance gets a Pod and a NodePort Service with real node ports', async (t) => {
    await apply(
      cluster,
      instance(ns, name, {
        type: 'hami',
        ...WORKSPACE,
        ports: [{ port: 8888 }, { port: 9000, protocol: 'UDP' }],
        resources: { accelerator: { count: 1 } }
      })
    )
    await settle(ns, name)
    const inst = await must(instanceRef(ns, name))
    t.same(inst.metadata.finalizers, [FINALIZER], 'the driver added the finalize hook finalizer')
    const pod = await must(podRef(ns, name))
    firstPodUid = pod.metadata.uid
    t.same(
      pod.metadata.ownerReferences.map((r: Obj) => [r.kind, r.uid, r.controller]),
      [['Instance', inst.metadata.uid, true]]
    )
    t.same(pod.spec.containers[0].resources.limits, {
      cpu: '4',
      memory: '4Gi',
      'nvidia.com/gpu': '1',
      'nvidia.com/gpucores': '100',
      'nvidia.com/gpumem-percentage': '100'
    })
    const svc = await must(serviceRef(ns, name))
    serviceVersion = svc.metadata.resourceVersion
    t.equal(svc.spec.type, 'NodePort')
    t.equal(svc.spec.externalTrafficPolicy, 'Local')
    t.same(svc.spec.selector, { 'app.kubernetes.io/part-of': name, 'resource.gpustack.ai/type': 'instances' })
    t.same(
      svc.spec.ports.map((p: Obj) => [p.name, p.port, p.protocol, p.targetPort]),
      [
        ['tcp-8888', 8888, 'TCP', 8888],
        ['udp-9000', 9000, 'UDP', 9000]
      ]
    )
    first = nodePorts(svc)
    t.ok(inRange(first['tcp-8888']) && inRange(first['udp-9000']), `node ports ${JSON.stringify(first)} are in 30000-32767`)
    t.same(inst.status.ports, [
      { name: 'tcp-8888', port: 8888, protocol: 'TCP', nodePort: first['tcp-8888'] },
      { name: 'udp-9000', port: 9000, protocol: 'UDP', nodePort: first['udp-9000'] }
    ])
    t.equal(inst.status.phase, 'Pending')
    t.equal(inst.status.podName, name)
    t.same(inst.status.accelerator, {
      family: 'Whole',
      count: 1,
      resources: { 'nvidia.com/gpu': '1', 'nvidia.com/gpucores': '100', 'nvidia.com/gpumem-percentage': '100' }
    })
    const table = await cluster.kubectl([
      'get',
      'instance',
      name,
      '-n',
      'lifecycle',
      '--no-headers',
      '-o',
      'custom-columns=PORTS:.status.nodePorts'
    ])
    t.equal(table.stdout.trim(), `8888:${first['tcp-8888']}/TCP,9000:${first['udp-9000']}/UDP`, 'the Ports column lists every node port')
    const printed = await cluster.kubectl(['get', 'instance', name, '-n', 'lifecycle'])
    t.match(
      printed.stdout,
      new RegExp(`TYPE +PHASE +PORTS +NODE +SSH +AGE[\\s\\S]*8888:${first['tcp-8888']}/TCP,9000:${first['udp-9000']}/UDP`),
      'kubectl get prints them in the Ports column'
    )
  })

  await t.test('stopping deletes the Pod and keeps the Service and its node ports', async (t) => {
    await patchInstance(ns, name, { spec: { stop: true } })
    await settle(ns, name)
    t.equal(await get(podRef(ns, name)), undefined, 'the Pod is gone')
    const svc = await must(serviceRef(ns, name))
    t.equal(svc.metadata.resourceVersion, serviceVersion, 'the Service was not written')
    t.same(nodePorts(svc), first)
    t.notOk(await nodePortFree(first['udp-9000'] as number), 'the API server still holds the node port of 9000/UDP')
    const inst = await must(instanceRef(ns, name))
    t.equal(inst.status.phase, 'Stopped')
    t.equal(inst.status.podName, undefined)
    t.same(
      inst.status.ports.map((p: Obj) => p.nodePort),
      [first['tcp-8888'], first['udp-9000']]
    )
  })

  await t.test('port edits made while stopped wait for the start', async (t) => {
    await patchInstance(ns, name, { spec: { ports: [{ port: 8888 }, { port: 7000 }] } })
    await settle(ns, name)
    const svc = await must(serviceRef(ns, name))
    t.equal(svc.metadata.resourceVersion, serviceVersion, 'the Service was not written')
    t.same(nodePorts(svc), first)
    t.equal(await get(podRef(ns, name)), undefined, 'still no Pod')
  })

  await t.test(
    'starting builds a new Pod; an unchanged port keeps its node port, an added one gets one, a removed one is released',
    async (t) => {
      await patchInstance(ns, name, { spec: { stop: false } })
      await settle(ns, name)
      const pod = await must(podRef(ns, name))
      t.not(pod.metadata.uid, firstPodUid, 'a fresh Pod')
      t.same(pod.spec.containers[0].ports, [
        { containerPort: 8888, protocol: 'TCP' },
        { containerPort: 7000, protocol: 'TCP' }
      ])
      const svc = await must(serviceRef(ns, name))
      t.same(
        svc.spec.ports.map((p: Obj) => [p.name, p.port, p.protocol]),
        [
          ['tcp-8888', 8888, 'TCP'],
          ['tcp-7000', 7000, 'TCP']
        ]
      )
      const now = nodePorts(svc)
      t.equal(now['tcp-8888'], first['tcp-8888'], '8888/TCP kept its node port')
      t.ok(inRange(now['tcp-7000']), `7000/TCP got node port ${now['tcp-7000']}`)
      t.ok(await nodePortFree(first['udp-9000'] as number), 'the node port of 9000/UDP is released')
      const inst = await must(instanceRef(ns, name))
      t.same(inst.status.ports, [
        { name: 'tcp-8888', port: 8888, protocol: 'TCP', nodePort: first['tcp-8888'] },
        { name: 'tcp-7000', port: 7000, protocol: 'TCP', nodePort: now['tcp-7000'] }
      ])
      first = now
    }
  )

  await t.test('clearing spec.ports deletes the Service and its allocations at the next start', async (t) => {
    await patchInstance(ns, name, { spec: { stop: true } })
    await settle(ns, name)
    await patchInstance(ns, name, { spec: { ports: null } })
    await settle(ns, name)
    t.same(nodePorts(await must(serviceRef(ns, name))), first, 'kept while stopped')
    await patchInstance(ns, name, { spec: { stop: false } })
    await settle(ns, name)
    t.equal(await get(serviceRef(ns, name)), undefined, 'the Service is gone')
    t.ok(await get(podRef(ns, name)), 'the Pod runs without a Service')
    t.ok(await nodePortFree(first['tcp-8888'] as number), 'the node port of 8888/TCP is released')
    t.ok(await nodePortFree(first['tcp-7000'] as number), 'the node port of 7000/TCP is released')
    const inst = await must(instanceRef(ns, name))
    t.equal(inst.status.ports, undefined)
    t.equal(inst.status.phase, 'Pending')
  })

  await t.test('deleting the Instance removes the Pod, then the Service, then the finalizer', async (t) => {
    const tidy = 'tidy'
    await apply(cluster, instance(ns, tidy, { type: 'hami', ...WORKSPACE, ports: [{ port: 8888 }] }))
    await settle(ns, tidy)
    await cluster.kubectl(['delete', 'instance', tidy, '-n', ns, '--wait=false'])
    const step = async (): Promise<[boolean, boolean, Obj]> => {
      const report = await driver.syncOnce({ namespace: ns, name: tidy })
      t.ok(report.finalizing, 'the finalize hook was called')
      return [
        (await get(podRef(ns, tidy))) !== undefined,
        (await get(serviceRef(ns, tidy))) !== undefined,
        await get(instanceRef(ns, tidy))
      ]
    }
    const [pod1, svc1, inst1] = await step()
    t.same([pod1, svc1], [false, true], 'first the Pod goes, the Service stays')
    t.same(inst1?.metadata.finalizers, [FINALIZER])
    t.equal(inst1?.status.phase, 'Deleting')
    const [pod2, svc2, inst2] = await step()
    t.same([pod2, svc2], [false, false], 'then the Service')
    t.same(inst2?.metadata.finalizers, [FINALIZER], 'the finalizer holds until nothing is observed')
    const [, , inst3] = await step()
    t.equal(inst3, undefined, 'finalized: the Instance is gone')
  })
})

t.test('the Instance phase follows the Pod status a kubelet would write', async (t) => {
  const ns = 'phases'
  const name = 'stamped'
  const hostIP = '192.0.2.10'
  let nodePort = 0
  await apply(cluster, instance(ns, name, { type: 'hami', ...WORKSPACE, ports: [{ port: 8888, name: 'jupyter' }] }))
  await settle(ns, name)
  nodePort = (await must(serviceRef(ns, name))).spec.ports[0].nodePort
  const podUid = (await must(podRef(ns, name))).metadata.uid
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
  /** The scheduler binds the Pod to node gpu-node-1 (the binding subresource). */
  const schedulerBinds = () =>
    kube.request('POST', resourcePath(podRef(ns, name), 'binding'), {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name, namespace: ns },
      target: { apiVersion: 'v1', kind: 'Node', name: 'gpu-node-1' }
    })
  /** The kubelet writes the Pod's status, the controller settles, and the Instance is read. */
  const afterKubelet = async (status: (pod: Obj) => Obj): Promise<Obj> => {
    await stampPod(ns, name, status)
    await settle(ns, name)
    return must(instanceRef(ns, name))
  }

  await t.test("an unschedulable Pod leaves the Instance Pending, with the scheduler's reason", async (t) => {
    const inst = await afterKubelet(() => ({
      phase: 'Pending',
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/2 nodes are available: 2 Insufficient nvidia.com/gpu.',
          lastTransitionTime: now
        }
      ]
    }))
    t.equal(inst.status.phase, 'Pending')
    t.match(inst.status.message, /2 Insufficient nvidia\.com\/gpu/)
    t.same(ready(inst), ['False', 'Pending'])
  })

  await t.test('a Pod bound to a node makes the Instance Starting', async (t) => {
    await schedulerBinds()
    const bound = await must(podRef(ns, name))
    t.equal(bound.spec.nodeName, 'gpu-node-1', 'the binding subresource set spec.nodeName')
    t.equal(condition(bound, 'PodScheduled')?.status, 'True', 'and condition PodScheduled')
    const inst = await afterKubelet((pod) => ({ ...pod.status, hostIP, hostIPs: [{ ip: hostIP }] }))
    t.equal(inst.status.phase, 'Starting')
    t.same([inst.status.nodeName, inst.status.hostIP], ['gpu-node-1', hostIP])
    t.equal(inst.status.accessAddresses, undefined, 'no address before it runs')
  })

  const containerStatus = (state: Obj, ready: boolean): Obj => ({
    name: 'main',
    image: WORKSPACE.image,
    imageID: '',
    ready,
    restartCount: 0,
    started: ready,
    state
  })

  await t.test("a container stuck pulling its image makes Ready False with the kubelet's reason", async (t) => {
    const inst = await afterKubelet((pod) => ({
      ...pod.status,
      containerStatuses: [containerStatus({ waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image' } }, false)]
    }))
    t.equal(inst.status.phase, 'Starting')
    t.same(ready(inst), ['False', 'ImagePullBackOff'])
  })

  await t.test('a Running and Ready Pod makes the Instance Running, reachable at host IP and node port', async (t) => {
    const inst = await afterKubelet((pod) => ({
      ...pod.status,
      phase: 'Running',
      podIP: '10.244.1.5',
      podIPs: [{ ip: '10.244.1.5' }],
      conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
        type,
        status: 'True',
        lastTransitionTime: now
      })),
      containerStatuses: [containerStatus({ running: { startedAt: now } }, true)]
    }))
    t.equal(inst.status.phase, 'Running')
    t.same(inst.status.accessAddresses, [`${hostIP}:${nodePort}`])
    t.same(
      inst.status.connect,
      { address: hostIP, ports: [{ name: 'jupyter', port: 8888, protocol: 'TCP', endpoint: `${hostIP}:${nodePort}` }] },
      'status.connect: the host IP and an endpoint per spec port, kept by the CRD schema'
    )
    t.equal(inst.status.podIP, '10.244.1.5')
    t.same(inst.status.ports, [{ name: 'jupyter', port: 8888, protocol: 'TCP', nodePort }], 'status names the port as the spec does')
    t.same(ready(inst), ['True', 'Running'])
  })

  await t.test('an evicted Pod is replaced by a new one', async (t) => {
    await stampPod(ns, name, (pod) => ({
      ...pod.status,
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory.'
    }))
    const settled = await settle(ns, name, 4)
    t.same(
      settled.passes[0]?.writes.filter((w) => w.verb === 'delete').map((w) => w.target),
      [`Pod.v1 ${ns}/${name}`],
      'first pass deletes it'
    )
    t.same(
      settled.passes[1]?.writes.filter((w) => w.verb === 'create').map((w) => w.target),
      [`Pod.v1 ${ns}/${name}`],
      'second pass creates the new one'
    )
    const pod = await must(podRef(ns, name))
    t.not(pod.metadata.uid, podUid)
    t.equal(pod.spec.nodeName, undefined, 'the new Pod waits for the scheduler')
    const inst = await must(instanceRef(ns, name))
    t.equal(inst.status.phase, 'Pending')
    t.equal(inst.status.accessAddresses, undefined)
    t.equal(inst.status.connect, undefined, 'no connect while the new Pod is pending')
    t.equal((await must(serviceRef(ns, name))).spec.ports[0].nodePort, nodePort, 'the Service kept routing on the same node port')
  })

  await t.test('a bound Pod that takes its time to terminate: Stopping, and a start waits for it to go', async (t) => {
    await schedulerBinds()
    await patchInstance(ns, name, { spec: { stop: true } })
    await settle(ns, name)
    const terminating = await must(podRef(ns, name))
    t.type(terminating.metadata.deletionTimestamp, 'string', 'a bound Pod is deleted gracefully; without a kubelet it stays')
    let inst = await must(instanceRef(ns, name))
    t.equal(inst.status.phase, 'Stopping')
    t.same(ready(inst), ['False', 'Stopping'])
    await patchInstance(ns, name, { spec: { stop: false } })
    await settle(ns, name)
    t.equal((await must(podRef(ns, name))).metadata.uid, terminating.metadata.uid, 'no new Pod while the old one terminates')
    inst = await must(instanceRef(ns, name))
    t.equal(inst.status.phase, 'Pending')
    t.match(inst.status.message, /being deleted/)
    // The kubelet's part: the containers stopped, the Pod object goes.
    await kube.delete(podRef(ns, name), { gracePeriodSeconds: 0 })
    await settle(ns, name)
    t.not((await must(podRef(ns, name))).metadata.uid, terminating.metadata.uid, 'then the new Pod comes')
    t.equal((await must(serviceRef(ns, name))).spec.ports[0].nodePort, nodePort)
  })
})

t.test("the API server's default tolerations cause no update loop", async (t) => {
  const ns = 'quiet'
  const name = 'still'
  await apply(cluster, instance(ns, name, { type: 'hami', ...WORKSPACE }))
  const settled = await settle(ns, name)
  t.ok(settled.passes.length <= 3)
  const pod = await must(podRef(ns, name))
  t.same(
    pod.spec.tolerations,
    [
      GPU_TOLERATION,
      { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }
    ],
    'DefaultTolerationSeconds added its two tolerations to the rendered one'
  )
  for (let i = 0; i < 3; i++) {
    const report = await driver.syncOnce({ namespace: ns, name })
    t.same(report.writes, [], `sync ${i + 1} writes nothing`)
    t.ok(
      report.skipped.some((s) => s.startsWith(`update Pod.v1 ${ns}/${name}: OnDelete`) && s.includes('tolerations')),
      'the merge does differ in the atomic tolerations list; OnDelete is what keeps the Pod'
    )
  }
  const after = await must(podRef(ns, name))
  t.same([after.metadata.uid, after.metadata.resourceVersion], [pod.metadata.uid, pod.metadata.resourceVersion])
  await cluster.kubectl(['delete', 'pod', name, '-n', ns])
  await settle(ns, name)
  t.not((await must(podRef(ns, name))).metadata.uid, pod.metadata.uid, 'a Pod deleted by hand is replaced')
})

t.test('a RuntimeClass and spec.nodeName: the API server accepts the placement and its additions cause no loop', async (t) => {
  const ns = 'quiet'
  const name = 'placed'
  await apply(cluster, {
    apiVersion: 'node.k8s.io/v1',
    kind: 'RuntimeClass',
    metadata: { name: 'nvidia' },
    handler: 'nvidia',
    overhead: { podFixed: { cpu: '100m' } },
    scheduling: {
      nodeSelector: { 'runtime.example/nvidia': 'true' },
      tolerations: [{ key: 'runtime', operator: 'Exists', effect: 'NoSchedule' }]
    }
  })
  await apply(cluster, {
    apiVersion: 'worker.gpustack.ai/v1alpha1',
    kind: 'InstanceType',
    metadata: { name: 'hami-rc' },
    spec: { devicePlugin: 'HAMi', nodeSelector: { gpu: 'on' }, runtimeClassName: 'nvidia' }
  })
  await apply(cluster, instance(ns, name, { type: 'hami-rc', ...WORKSPACE, nodeName: 'gpu-node-1' }))
  await settle(ns, name)
  const pod = await must(podRef(ns, name))
  t.same(pod.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms, [
    { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['gpu-node-1'] }] }
  ])
  t.equal(pod.spec.runtimeClassName, 'nvidia')
  t.same(pod.spec.nodeSelector, { gpu: 'on', 'runtime.example/nvidia': 'true' }, 'RuntimeClass admission merged its node selector')
  t.same(pod.spec.overhead, { cpu: '100m' }, 'and set the overhead')
  for (let i = 0; i < 2; i++) t.same((await driver.syncOnce({ namespace: ns, name })).writes, [], 'quiet')
  t.equal((await must(podRef(ns, name))).metadata.resourceVersion, pod.metadata.resourceVersion)
})

t.test('an InstanceType change keeps the running Pod and applies at the next start', async (t) => {
  const ns = 'retype'
  const name = 'steady'
  await apply(cluster, instance(ns, name, { type: 'hami-small', ...WORKSPACE, ports: [{ port: 8888 }] }))
  await settle(ns, name)
  const pod = await must(podRef(ns, name))
  t.equal(pod.spec.containers[0].resources.requests.cpu, '2')
  await cluster.kubectl(['patch', 'instancetype', 'hami-small', '--type=merge', '-p', '{"spec":{"defaults":{"cpu":"3"}}}'])
  await settle(ns, name)
  const kept = await must(podRef(ns, name))
  t.same([kept.metadata.uid, kept.metadata.resourceVersion], [pod.metadata.uid, pod.metadata.resourceVersion], 'the Pod is untouched')
  t.equal(kept.spec.containers[0].resources.requests.cpu, '2')
  const inst = await must(instanceRef(ns, name))
  t.same([condition(inst, 'UpToDate').status, condition(inst, 'UpToDate').reason], ['False', 'InstanceTypeChanged'])
  t.match(condition(inst, 'UpToDate').message, /hami-small/)

  await patchInstance(ns, name, { spec: { stop: true } })
  await settle(ns, name)
  t.equal(await get(podRef(ns, name)), undefined)
  await patchInstance(ns, name, { spec: { stop: false } })
  await settle(ns, name)
  const fresh = await must(podRef(ns, name))
  t.not(fresh.metadata.uid, pod.metadata.uid)
  t.same(fresh.spec.containers[0].resources.requests, { cpu: '3', memory: '4Gi' }, 'the new Pod carries the change')
  const after = await must(instanceRef(ns, name))
  t.same([condition(after, 'UpToDate').status, condition(after, 'UpToDate').reason], ['True', 'UpToDate'])

  // An admin deletes the type: a spec error, which deletes nothing; stopping still stops.
  const svc = await must(serviceRef(ns, name))
  await cluster.kubectl(['delete', 'instancetype', 'hami-small'])
  await settle(ns, name)
  const orphaned = await must(instanceRef(ns, name))
  t.same([condition(orphaned, 'SpecValid').status, condition(orphaned, 'SpecValid').reason], ['False', 'InstanceTypeNotFound'])
  t.equal((await must(podRef(ns, name))).metadata.resourceVersion, fresh.metadata.resourceVersion, 'the Pod is kept as it is')
  t.equal((await must(serviceRef(ns, name))).metadata.resourceVersion, svc.metadata.resourceVersion, 'the Service is kept as it is')
  await patchInstance(ns, name, { spec: { stop: true } })
  await settle(ns, name)
  t.equal(await get(podRef(ns, name)), undefined, 'stop is honoured despite the spec error')
  t.equal((await must(serviceRef(ns, name))).metadata.resourceVersion, svc.metadata.resourceVersion, 'the Service and its node port stay')
  t.equal((await must(instanceRef(ns, name))).status.phase, 'Stopped')
})

t.test('a Service of the same name made by hand is reported and left alone', async (t) => {
  const ns = 'taken'
  const name = 'web'
  const mine = await kube.create(serviceRef(ns, ''), {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: ns },
    spec: { selector: { app: 'web' }, ports: [{ port: 80 }] }
  })
  await apply(cluster, instance(ns, name, { type: 'hami', ...WORKSPACE, ports: [{ port: 8888 }] }))
  await settle(ns, name)
  const inst = await must(instanceRef(ns, name))
  t.same([condition(inst, 'SpecValid').status, condition(inst, 'SpecValid').reason], ['False', 'ServiceNameTaken'])
  t.equal(inst.status.phase, 'Failed')
  t.equal(await get(podRef(ns, name)), undefined, 'no Pod')
  const svc = await must(serviceRef(ns, name))
  t.equal(svc.metadata.resourceVersion, (mine.body as Obj).metadata.resourceVersion, 'the hand-made Service is untouched')
  t.equal(svc.metadata.ownerReferences, undefined)
  await cluster.kubectl(['delete', 'service', name, '-n', ns])
  await settle(ns, name)
  const freed = await must(instanceRef(ns, name))
  t.same([condition(freed, 'SpecValid').status, condition(freed, 'SpecValid').reason], ['True', 'Valid'], 'once the name is free')
  t.ok(await get(podRef(ns, name)), 'the Pod comes')
  t.equal((await must(serviceRef(ns, name))).metadata.ownerReferences?.[0]?.uid, freed.metadata.uid, "and the Service is the Instance's")
})

t.test('deleting a namespace that holds an Instance: every sync succeeds, nothing is recreated, the namespace goes', async (t) => {
  const ns = 'doomed'
  const name = 'ws'
  await apply(cluster, instance(ns, name, { type: 'hami', ...WORKSPACE, ports: [{ port: 8888 }] }))
  await settle(ns, name)
  t.ok(await get(podRef(ns, name)), 'the Pod runs before')
  await cluster.kubectl(['delete', 'namespace', ns, '--wait=false'])
  // The namespace controller removes the Pod and the Service and marks the Instance deleted, in
  // an order of its own; whichever sync (or finalize) lands in between must not try to create.
  let passes = 0
  await eventually(
    'the Instance to be finalized and gone',
    async () => {
      if ((await get(instanceRef(ns, name))) === undefined) return true
      passes++
      const report = await driver.syncOnce({ namespace: ns, name })
      t.notOk(
        report.writes.some((w) => w.verb === 'create'),
        `pass ${passes} creates nothing in a terminating namespace`
      )
      return undefined
    },
    60_000
  )
  await eventually('the namespace to be gone', async () => ((await get(refs.namespace(ns))) === undefined ? true : undefined), 60_000)
  t.ok(passes > 0, 'at least one sync ran while the namespace was terminating')
})

// Last: kube-controller-manager's garbage collector starts watching a new CRD only at its next
// discovery resync (every 30 s), so an owner of a fresh kind is collected late; the wait then
// overlaps the rest of the file.
t.test('with Metacontroller away, the garbage collector removes the children through their owner references', async (t) => {
  const ns = 'lifecycle'
  const orphan = 'orphan'
  await apply(cluster, instance(ns, orphan, { type: 'hami', ...WORKSPACE, ports: [{ port: 8888 }] }))
  await settle(ns, orphan)
  const uid = (await must(instanceRef(ns, orphan))).metadata.uid
  for (const ref of [podRef(ns, orphan), serviceRef(ns, orphan)]) {
    t.same((await must(ref)).metadata.ownerReferences, [
      { apiVersion: 'worker.gpustack.ai/v1alpha1', kind: 'Instance', name: orphan, uid, controller: true, blockOwnerDeletion: true }
    ])
  }
  await cluster.kubectl(['delete', 'instance', orphan, '-n', ns, '--wait=false'])
  await cluster.kubectl(['patch', 'instance', orphan, '-n', ns, '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]'])
  await eventually('the Instance to be gone', async () => ((await get(instanceRef(ns, orphan))) === undefined ? true : undefined))
  await eventually(
    'the Pod and the Service to be collected',
    async () => ((await get(podRef(ns, orphan))) === undefined && (await get(serviceRef(ns, orphan))) === undefined ? true : undefined),
    90_000
  )
  t.equal(await get(podRef(ns, orphan)), undefined, 'the Pod is collected')
  t.equal(await get(serviceRef(ns, orphan)), undefined, 'the Service is collected')
})
