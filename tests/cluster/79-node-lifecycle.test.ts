/**
 * Idle GPUs come back, on a real node with a real Prometheus (docs/lifecycle.md): kubelet runs the
 * Instances' Pods; a stand-in HAMi exporter (tests/cluster/support/prometheus.ts) serves each
 * running Pod's GPU utilization under HAMi's current or legacy names beside kube-state-metrics'
 * Pod series; `cmd/prometheus` scrapes it and evaluates the chart's recording rules; the agent runs
 * as its ServiceAccount with its activity controller (one query per round) and carries out the
 * stops the Instance hook requests; the `gpuhooks-instance` driver plays Metacontroller, syncing
 * every Instance each second as its watches and `resyncAfterSeconds` would.
 *
 * The durations are short through the InstanceTypes (an idle stop after 40 s with a 20 s notice,
 * a maximum run time of 50 s), never through a test-only code path; the agent's round is 5 s (its
 * documented minimum) and its status refresh 10 s.
 *
 * - an Instance with GPU activity keeps running past every idle deadline;
 * - an idle one gets the notice (StopScheduled), is stopped by the agent (spec.stop, the annotation,
 *   the Event), keeps its node port and its workspace files, and runs again on `spec.stop: false`;
 * - a postponement holds an idle one until its time, then it stops;
 * - `maxRunDuration` stops a busy one;
 * - with Prometheus down, an idle one is not stopped: the condition says ActivityUnknown.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { startNodeScenario } from './support/node-scenario.ts'
import { HAMI_TYPE, REMEMBER_WORKSPACE, hostPathVolume, webInstance, workspaceLog } from './support/node-workloads.ts'
import { apply, createNamespaces, getJson as getJsonOf } from './support/kubectl.ts'
import { importImages } from './support/node-images.ts'
import { startAgentAsServiceAccount } from './support/agent.ts'
import { condition } from './support/reads.ts'
import { exporterText, startExporter, startPrometheus, type InstancePodSeries } from './support/prometheus.ts'
import type { JsonObject } from '../support/merge.ts'

type Obj = any

const ROOT = join(import.meta.dirname, '..', '..')
const env = await startNodeScenario()
const { cluster, node } = env
const image = (await importImages(node)).node
const NS = 'lab'
const AGENT_NS = 'gpuhooks'
const CLASS = 'gpuhooks-test-hostpath'
const VOLUME_DIR = join(node.dir, 'lifecycle-volume')

const getJson = (args: string[]): Promise<Obj> => getJsonOf(cluster, args)
const instance = (name: string): Promise<Obj> => getJson(['instance', name, '-n', NS])
const patchInstance = (name: string, patch: JsonObject) =>
  cluster.kubectl(['patch', 'instance', name, '-n', NS, '--type=merge', '-p', JSON.stringify(patch)])
const nodePortOf = (i: Obj): number | undefined => (i.status?.ports as Obj[] | undefined)?.find((p) => p.port === 8080)?.nodePort
const running = (i: Obj): boolean => i.status?.phase === 'Running'
const stopScheduled = (i: Obj): Obj => condition(i, 'StopScheduled')

// --- GPU utilization as the stand-in exporter serves it, per Instance name ---------------------
const utilization = new Map<string, number>()
const NAMES: Record<string, InstancePodSeries['names']> = {
  busy: 'current',
  idle: 'legacy',
  postponed: 'both',
  marathon: 'current',
  dark: 'current'
}

const exporter = await startExporter()
const prometheus = await startPrometheus({
  dir: join(cluster.dir, 'prometheus'),
  pidFile: join(cluster.dir, 'pids'),
  targets: [exporter.target]
})
t.teardown(async () => {
  await prometheus.stop()
  await exporter.close()
})

/** Each second: the running Pods of the namespace, with their Instances' uids, as the exporter's series. */
let feeding = true
const feeder = (async () => {
  while (feeding) {
    try {
      const pods = ((await getJson(['pods', '-n', NS])).items ?? []) as Obj[]
      const instances = ((await getJson(['instances', '-n', NS])).items ?? []) as Obj[]
      const uid = new Map(instances.map((i) => [String(i.metadata.name), String(i.metadata.uid)]))
      const series: InstancePodSeries[] = pods
        .filter((p) => p.status?.phase === 'Running' && utilization.has(p.metadata.name) && uid.has(p.metadata.name))
        .map((p) => ({
          namespace: NS,
          pod: p.metadata.name,
          podUID: p.metadata.uid,
          instanceUID: uid.get(p.metadata.name) as string,
          node: p.spec.nodeName,
          utilization: utilization.get(p.metadata.name) as number,
          names: NAMES[p.metadata.name] ?? 'current'
        }))
      exporter.set(exporterText(series))
    } catch {
      // the API server is asked again next second
    }
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
})()

/** Metacontroller's part: every Instance of the namespace synced each second. */
const driver = env.driver('gpuhooks-instance')
let syncing = true
const syncer = (async () => {
  while (syncing) {
    try {
      const instances = ((await getJson(['instances', '-n', NS])).items ?? []) as Obj[]
      for (const i of instances) await driver.syncOnce({ namespace: NS, name: String(i.metadata.name) })
    } catch {
      // a sync that meets a conflict is repeated next second, as Metacontroller's queue would
    }
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
})()
t.teardown(async () => {
  feeding = false
  syncing = false
  await Promise.all([feeder, syncer])
})

/** Waits (the loops above doing the work) until `until` holds on the Instance. */
async function until(name: string, what: string, check: (i: Obj) => boolean, timeoutMs = 240_000): Promise<Obj> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const i = await instance(name)
    if (check(i)) return i
    if (Date.now() > deadline)
      throw new Error(`${name}: not ${what} after ${timeoutMs} ms; status ${JSON.stringify(i.status)}\nagent:\n${agent.logTail(60)}`)
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}

const lifecycleType = (name: string, lifecycle: JsonObject): JsonObject => ({
  ...HAMI_TYPE,
  metadata: { name },
  spec: { ...(HAMI_TYPE.spec as JsonObject), lifecycle }
})

// --- the agent, as its ServiceAccount, with exactly its RBAC and its admission policy ----------
await createNamespaces(cluster, [NS, AGENT_NS])
await cluster.kubectl(['apply', '-f', join(ROOT, 'deploy', 'agent-rbac', 'infrastructure-cluster.yaml')])
await cluster.kubectl(['apply', '-f', join(ROOT, 'metacontroller', 'agent-instance-policy.yaml')])
const agent = await startAgentAsServiceAccount(cluster, AGENT_NS, {
  PROMETHEUS_URL: prometheus.url,
  ACTIVITY_STOPS: 'true',
  ACTIVITY_ROUND_SECONDS: '5',
  ACTIVITY_STATUS_REFRESH_SECONDS: '10'
})
t.teardown(() => agent.stop())

t.before(async () => {
  await apply(cluster, lifecycleType('idle-stop', { idleStopAfter: '40s', stopNotice: '20s', idleThreshold: 5, maxPostpone: '180s' }))
  await apply(cluster, lifecycleType('max-run', { maxRunDuration: '50s', stopNotice: '20s' }))
  await hostPathVolume(cluster, { name: 'lifecycle-volume', dir: VOLUME_DIR, storageClass: CLASS, storage: '1Gi' })
})

t.test('busy keeps running, idle is noticed and stopped, a postponement holds, maxRunDuration stops a busy one', async (t) => {
  utilization.set('busy', 80)
  utilization.set('idle', 1)
  utilization.set('postponed', 0)
  utilization.set('marathon', 90)
  const keepUntil = new Date(Date.now() + 120_000).toISOString().replace(/\.\d+Z$/, 'Z')
  await apply(cluster, webInstance(NS, 'busy', image, { type: 'idle-stop' }))
  await apply(
    cluster,
    webInstance(NS, 'idle', image, {
      type: 'idle-stop',
      command: ['node', '-e', REMEMBER_WORKSPACE],
      env: [],
      workspace: { persistent: { size: '1Gi', storageClassName: CLASS } }
    })
  )
  await apply(cluster, {
    ...webInstance(NS, 'postponed', image, { type: 'idle-stop' }),
    metadata: { name: 'postponed', namespace: NS, annotations: { 'gpustack.ai/keep-running-until': keepUntil } }
  })
  await apply(cluster, webInstance(NS, 'marathon', image, { type: 'max-run' }))

  const idleRunning = await until('idle', 'Running with its workspace Bound', (i) => running(i) && i.status.workspace?.phase === 'Bound')
  const idlePort = nodePortOf(idleRunning)
  t.ok(idlePort, 'the idle Instance has a node port')
  const started = Date.now()

  await t.test('the InstanceActivity carries the agent’s observation of each running Pod', async (t) => {
    const activity = await (async () => {
      for (;;) {
        const a = await getJson(['instanceactivity', 'busy', '-n', NS]).catch(() => undefined)
        const observed = (a?.status?.conditions ?? []).find((c: Obj) => c.type === 'Observed')
        if (observed?.status === 'True') return a
        await new Promise((resolve) => setTimeout(resolve, 1000))
      }
    })()
    const pod = await getJson(['pod', 'busy', '-n', NS])
    t.match(activity.spec, { podName: 'busy', podUID: pod.metadata.uid, idleThreshold: 5 })
    t.equal(activity.status.podUID, pod.metadata.uid)
    t.match(activity.status.source, /gpustack_instance_accelerator_cores_utilization_percent/)
  })

  await t.test('idle: the notice first, then the stop by the agent', async (t) => {
    const noticed = await until('idle', 'StopScheduled', (i) => stopScheduled(i)?.status === 'True')
    t.match(noticed.status.lifecycle, { stopReason: 'Idle' })
    t.match(stopScheduled(noticed).message, /keep-running-until/, 'the message says how to postpone')
    t.not(noticed.spec.stop, true, 'not stopped while the notice runs')
    const noticeAt = Date.now()
    const stopped = await until('idle', 'stopped', (i) => i.spec.stop === true && i.status?.phase === 'Stopped')
    t.ok(Date.now() - noticeAt >= 10_000, `the stop came after the notice (${Date.now() - noticeAt} ms)`)
    t.match(stopped.metadata.annotations, { 'gpustack.ai/stopped-by': /^Idle \d{4}-/ })
    t.equal(nodePortOf(stopped), idlePort, 'the Service keeps its node port')
    t.match(stopped.status.lifecycle, { stoppedBy: { reason: 'Idle' } })
    const events = ((await getJson(['events', '-n', NS])).items as Obj[]).filter(
      (e) => e.involvedObject?.name === 'idle' && e.reason === 'IdleStopped'
    )
    t.equal(events.length, 1, 'one IdleStopped Event')
    t.equal((await getJson(['pvc', 'idle-workspace', '-n', NS])).status.phase, 'Bound', 'the workspace claim stays')
  })

  await t.test('started again: the same node port, the workspace files there', async (t) => {
    await patchInstance('idle', { spec: { stop: false } })
    const again = await until('idle', 'Running again', running)
    t.equal(nodePortOf(again), idlePort, 'the same node port')
    const marker = readFileSync(join(VOLUME_DIR, 'marker'), 'utf8')
    t.same(await workspaceLog(VOLUME_DIR, 2), ['found nothing', `found ${marker}`], 'the second Pod found the first one’s file')
    t.notOk(again.status.lifecycle?.stoppedBy, 'no longer reported as stopped by the lifecycle')
    utilization.set('idle', 70)
  })

  await t.test('maxRunDuration stops a busy Instance', async (t) => {
    const stopped = await until('marathon', 'stopped', (i) => i.spec.stop === true)
    t.match(stopped.metadata.annotations, { 'gpustack.ai/stopped-by': /^MaxRunDuration / })
    const events = ((await getJson(['events', '-n', NS])).items as Obj[]).filter(
      (e) => e.involvedObject?.name === 'marathon' && e.reason === 'MaxRunDurationReached'
    )
    t.equal(events.length, 1, 'one MaxRunDurationReached Event')
  })

  await t.test('the postponement holds until its time, then the idle stop comes', async (t) => {
    const held = await instance('postponed')
    t.not(held.spec.stop, true, 'not stopped before its postponement ends')
    t.ok(Date.now() < Date.parse(keepUntil), 'checked before the postponement ends')
    t.match(held.status.lifecycle, { postponedUntil: keepUntil })
    const stopped = await until('postponed', 'stopped', (i) => i.spec.stop === true)
    t.ok(Date.now() >= Date.parse(keepUntil), 'stopped only once the postponement was over')
    t.match(stopped.metadata.annotations, { 'gpustack.ai/stopped-by': /^Idle / })
  })

  await t.test('the busy Instance ran through it all', async (t) => {
    const busy = await instance('busy')
    t.ok(Date.now() - started > 60_000, 'longer than idleStopAfter and its notice')
    t.ok(running(busy), 'still Running')
    t.not(busy.spec.stop, true)
    t.not(stopScheduled(busy)?.status, 'True')
  })
})

t.test('Prometheus down: an idle Instance is not stopped, and says why', async (t) => {
  utilization.set('dark', 0)
  await apply(cluster, webInstance(NS, 'dark', image, { type: 'idle-stop' }))
  await until('dark', 'Running', running)
  await prometheus.stop()
  const since = Date.now()
  const unknown = await until('dark', 'ActivityUnknown', (i) => stopScheduled(i)?.reason === 'ActivityUnknown')
  t.equal(stopScheduled(unknown).status, 'False')
  // Past idleStopAfter and its notice, counted from the Pod's start, and three status refreshes.
  while (Date.now() - since < 75_000) await new Promise((resolve) => setTimeout(resolve, 5000))
  const still = await instance('dark')
  t.ok(running(still), 'still Running')
  t.not(still.spec.stop, true, 'not stopped')
  t.equal(stopScheduled(still)?.reason, 'ActivityUnknown')
  await prometheus.start()
})

t.test('the agent met no refusal of its rights', async (t) => {
  const refused = agent
    .logTail(1_000_000)
    .split('\n')
    .filter((l) => /forbidden|HTTP-Code: 403/i.test(l))
  t.same(refused, [])
})
