/**
 * `npm run bench:cluster`: the whole path at scale, on the cluster layer's real API server with
 * the driver playing Metacontroller (tests/cluster/support/). N Instances (default 200) are
 * created at once in one namespace, through the admission webhook; the Instance controller and
 * the isolation decorator then run until every parent's last sync wrote nothing. Printed: the time
 * to convergence, the hook calls and the hook service's CPU time per controller, and a baseline
 * from the same run: the same Pods and Services applied directly, with no controller.
 *
 *   npm run bench:cluster -- [--instances 200] [--workers 5] [--skip-fresh] [--cells 100] [--skip-instances]
 *
 * With `--cells N`, a GPUCellPool of N cells is brought to N Ready cells as well (cellpool-bench.ts),
 * with KubeSwift's stand-in CRDs installed; `--skip-instances` runs only that pool.
 *
 * Scenarios, each in its own namespace:
 * - labelled: the namespace already carries `gpustack.ai/holds-instances: "true"` (the steady state
 *   docs/isolation.md describes), so the isolation customize relates no Instances;
 * - fresh (unless --skip-fresh): a namespace without the label, with the customize answer cached
 *   as Metacontroller caches it for about 20 minutes: it relates the namespace's Instances through
 *   a Namespace selector, so Instance events re-sync the namespace until its first sync's label
 *   lands, and none after;
 * - direct: the Pods and Services of the labelled scenario, created as they are (baseline).
 *
 * How Metacontroller is played: one work queue per controller with its deduplication (a key
 * queued twice runs once; a key queued while it syncs runs again), `--workers` parallel syncs
 * for the Instance controller (Metacontroller's default is 5) and one for the namespace. Instance
 * syncs are queued by real watch events on Instances, Pods and Services, as Metacontroller's
 * event handlers queue them (driver-events.ts): an Instance's create and every update of it but
 * those `parentResource.ignoreStatusChanges` drops (its own status write, the finalizer added),
 * and every event of a Pod or Service whose controller reference names it. Each sync is counted
 * with the causes that queued it (folded as the queue folds them) and what it wrote, printed per
 * scenario with the syncs per Instance. A namespace sync that wrote anything queues the namespace
 * again. A watch event on a related object queues each parent whose cached customize answer relates it, matched
 * as Metacontroller's `findRelatedParents` matches it (`Driver.relatedParents`): an Instance
 * event queues its namespace while the isolation answer relates it (a namespace selector is
 * matched against the Namespace as it is at that moment), and a write to the Namespace (the
 * holds-instances label) queues every Instance, whose customize relates its Namespace. Resync
 * timers are not played, and a sync reads the parent and its children fresh from the API server
 * (Metacontroller reads its informer caches, which may lag). A run ends when every Instance was
 * seen, both queues are idle and no watch event came for two seconds; the convergence time is
 * taken at the end of the last Instance sync.
 *
 * CPU is read from outside the service, from /proc/<pid>/task/<tid>/schedstat of the service
 * process (nanoseconds on CPU, all threads). Hook calls from the driver are sent one at a time
 * (the service has one JavaScript thread, so this costs little throughput) and the CPU between
 * a call's start and its answer is charged to its controller; what is left (the admission calls
 * the API server makes, metrics, timers) is shown as "admission and the rest". Nothing here
 * asserts a timing.
 */
import { readdirSync, readFileSync } from 'node:fs'
import os from 'node:os'
import { isObject, type JsonObject } from '../support/merge.ts'
import { Driver } from '../cluster/support/driver.ts'
import { childEventParent, parentUpdateCause, type SyncCause } from '../cluster/support/driver-events.ts'
import { fetchTransport, type HookTransport, type SyncReport } from '../cluster/support/driver-protocol.ts'
import { recordHistory, type Version } from '../cluster/support/watch.ts'
import { KUBESWIFT_CRDS, startEnv, type ClusterEnv } from '../cluster/support/env.ts'
import { cellpoolScenario, type CellpoolResult } from './cellpool-bench.ts'
import { asApplied, benchInstance, createBenchType, servicePid } from './instance-world.ts'
import type { KubeApi, ResourceRef } from '../cluster/support/kube.ts'

const INSTANCE_CONTROLLER = 'gpuhooks-instance'
const ISOLATION_CONTROLLER = 'gpuhooks-instance-isolation'
const HOLDS_INSTANCES = 'gpustack.ai/holds-instances'

function option(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`)
  if (i < 0) return fallback
  const value = Number(process.argv[i + 1])
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} needs a positive integer`)
  return value
}
const INSTANCES = option('instances', 200)
const WORKERS = option('workers', 5)
const SKIP_FRESH = process.argv.includes('--skip-fresh')
const CELLS = process.argv.includes('--cells') ? option('cells', 100) : 0
const SKIP_INSTANCES = process.argv.includes('--skip-instances')
if (SKIP_INSTANCES && CELLS === 0) throw new Error('--skip-instances needs --cells')

// ---- the service process, seen from outside ----

/** Nanoseconds the process has been on a CPU, all of its threads. */
function cpuNs(pid: number): number {
  let total = 0
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      total += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      // A thread that ended while being read.
    }
  }
  return total
}

/** Peak resident set of the process so far (VmHWM), in bytes. */
function peakRss(pid: number): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return match === null ? 0 : Number(match[1]) * 1024
}

// ---- hook calls: one at a time, counted and charged per controller ----

interface Charge {
  calls: number
  cpuNs: number
}

class Meter {
  readonly byController = new Map<string, Charge>()
  private chain: Promise<unknown> = Promise.resolve()

  constructor(private readonly pid: number) {}

  transport(controller: string): HookTransport {
    return (url, body, timeoutMs) => {
      const run = async (): Promise<{ status: number; body: string }> => {
        const before = cpuNs(this.pid)
        try {
          return await fetchTransport(url, body, timeoutMs)
        } finally {
          const charge = this.byController.get(controller) ?? { calls: 0, cpuNs: 0 }
          charge.calls++
          charge.cpuNs += cpuNs(this.pid) - before
          this.byController.set(controller, charge)
        }
      }
      const next = this.chain.then(run, run)
      this.chain = next.catch(() => undefined)
      return next
    }
  }

  reset(): void {
    this.byController.clear()
  }
}

// ---- Metacontroller's work queues ----

/**
 * A work queue with client-go's deduplication, drained by `workers` parallel loops. Each entry
 * carries the causes that queued it (folded while it waits or syncs), so every sync can be told
 * apart by why it came.
 */
class WorkQueue {
  private readonly queued = new Map<string, Set<SyncCause>>()
  private readonly order: string[] = []
  private readonly processing = new Set<string>()
  private readonly dirty = new Map<string, Set<SyncCause>>()
  private waiting: Array<() => void> = []
  errors = 0

  /** `sync` returns the causes under which the key is queued again. */
  constructor(private readonly sync: (key: string, causes: ReadonlySet<SyncCause>) => Promise<readonly SyncCause[]>) {}

  add(key: string, cause: SyncCause): void {
    if (this.processing.has(key)) {
      this.dirty.set(key, (this.dirty.get(key) ?? new Set()).add(cause))
      return
    }
    const causes = this.queued.get(key)
    if (causes !== undefined) {
      causes.add(cause)
      return
    }
    this.queued.set(key, new Set([cause]))
    this.order.push(key)
    for (const wake of this.waiting.splice(0)) wake()
  }

  get idle(): boolean {
    return this.order.length === 0 && this.processing.size === 0
  }

  /** Runs until `done()` holds and the queue is idle. */
  async run(workers: number, done: () => boolean): Promise<void> {
    const worker = async (): Promise<void> => {
      for (;;) {
        const key = this.order.shift()
        if (key === undefined) {
          if (done() && this.idle) {
            for (const wake of this.waiting.splice(0)) wake()
            return
          }
          await new Promise<void>((resolve) => {
            this.waiting.push(resolve)
            setTimeout(resolve, 50)
          })
          continue
        }
        const causes = this.queued.get(key) ?? new Set<SyncCause>()
        this.queued.delete(key)
        this.processing.add(key)
        let again: readonly SyncCause[] = []
        try {
          again = await this.sync(key, causes)
        } catch {
          this.errors++
          again = ['retry']
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        this.processing.delete(key)
        const pending = this.dirty.get(key)
        this.dirty.delete(key)
        for (const cause of [...again, ...(pending ?? [])]) this.add(key, cause)
      }
    }
    await Promise.all(Array.from({ length: workers }, worker))
  }
}

/** The order causes are named in. */
const CAUSE_ORDER: readonly SyncCause[] = ['created', 'child', 'status', 'finalizer', 'parent', 'labels', 'related', 'retry']

/** What one sync wrote, in short: verbs and kinds, and the fields a status or update changed. */
function wroteSummary(report: SyncReport): string {
  const parts = report.writes.map((w) => {
    if (w.verb === 'status') return `status (${fieldsOf(w.diff ?? [], true)})`
    if (w.verb === 'finalizer' || w.verb === 'parent') return w.verb
    const kind = w.target.split('.')[0] ?? w.target
    return w.verb === 'update' ? `update ${kind} (${fieldsOf(w.diff ?? [], false)})` : `${w.verb} ${kind}`
  })
  return parts.length > 0 ? parts.join(', ') : 'nothing'
}

/** The changed fields of a diff (`path: before -> after` lines), lists folded, each once. */
function fieldsOf(diff: readonly string[], status: boolean): string {
  const fields = diff.map((line) => {
    const path = (line.split(': ')[0] ?? '').replace(/\[\d+\]/g, '[]')
    if (!status && path.startsWith('metadata.annotations.')) return path
    const segments = path.split('.')
    return segments.slice(0, status && segments[0] === 'conditions[]' ? 2 : status ? 1 : 2).join('.')
  })
  return [...new Set(fields)].join(', ')
}

/** Syncs of one controller by why they came and what they wrote. */
class SyncTally {
  private readonly rows = new Map<string, number>()
  syncs = 0

  record(causes: ReadonlySet<SyncCause>, wrote: string): void {
    const why = CAUSE_ORDER.filter((c) => causes.has(c)).join(' + ') || 'none'
    const key = `${why}\u0000${wrote}`
    this.rows.set(key, (this.rows.get(key) ?? 0) + 1)
    this.syncs++
  }

  /** Rows `[why, wrote, syncs]`, most syncs first. */
  table(): Array<[string, string, number]> {
    return [...this.rows]
      .map(([key, n]): [string, string, number] => {
        const [why = '', wrote = ''] = key.split('\u0000')
        return [why, wrote, n]
      })
      .sort((a, b) => b[2] - a[2] || a[0].localeCompare(b[0]) || a[1].localeCompare(b[1]))
  }
}

// ---- scenarios ----

interface Result {
  name: string
  seconds: number
  calls: Map<string, Charge>
  restCpuNs: number
  totalCpuNs: number
  admissions: number
  errors: number
  isolationWithInstances: number
  /** Instances carried by all isolation sync requests together: the term that grew with N². */
  instancesCarried: number
  /** The Instance syncs by why they came and what they wrote; none for the baseline. */
  tally?: SyncTally
}

/** Runs `fn` on `items` with at most `limit` in flight. */
async function pool<T>(items: readonly T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T)
    })
  )
}

async function answeredAdmissions(env: ClusterEnv): Promise<number> {
  const text = await (await fetch(`${env.service.hooksUrl}/metrics`)).text()
  let total = 0
  for (const line of text.split('\n'))
    if (line.startsWith('gpuhooks_hook_requests_total{hook="admission_instance",')) total += Number(line.split(' ').pop())
  return total
}

async function hookScenario(env: ClusterEnv, pid: number, meter: Meter, name: string, labelled: boolean): Promise<Result> {
  const kube = env.kube
  const namespace = `bench-${name}`
  await kube.create(
    { apiVersion: 'v1', resource: 'namespaces' },
    {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: namespace, ...(labelled ? { labels: { [HOLDS_INSTANCES]: 'true' } } : {}) }
    }
  )
  await env.cluster.kubectl(['wait', '--for=create', '-n', namespace, 'serviceaccount/default', '--timeout=60s'])
  const instanceDriver = new Driver({
    kube,
    controller: env.driver(INSTANCE_CONTROLLER).options.controller,
    hookBaseUrl: env.service.hooksUrl,
    transport: meter.transport('instance')
  })
  let isolationWithInstances = 0
  let instancesCarried = 0
  const isolationTransport = meter.transport('isolation')
  const watching: HookTransport = async (url, body, timeoutMs) => {
    const res = await isolationTransport(url, body, timeoutMs)
    if (!url.endsWith('/customize')) {
      const related = isObject(body.related) ? body.related : {}
      const instances = related['Instance.worker.gpustack.ai/v1alpha1']
      const carried = isObject(instances) ? Object.keys(instances).length : 0
      if (carried > 0) isolationWithInstances++
      instancesCarried += carried
    }
    return res
  }
  const isolationDriver = new Driver({
    kube,
    controller: env.driver(ISOLATION_CONTROLLER).options.controller,
    hookBaseUrl: env.service.hooksUrl,
    transport: watching
  })

  // The namespace settles first, as it would long before a burst of Instances.
  await isolationDriver.settle({ name: namespace })
  meter.reset()
  const admissionsBefore = await answeredAdmissions(env)
  const cpuBefore = cpuNs(pid)
  const started = performance.now()

  // The two queues feed each other; each closure runs only once both exist.
  const namespaceQueue = new WorkQueue(async () => {
    const report = await isolationDriver.syncOnce({ name: namespace })
    if (report.writes.some((w) => w.verb === 'parent')) {
      const written = (await kube.get({ apiVersion: 'v1', resource: 'namespaces', name: namespace })).body
      for (const parent of await instanceDriver.relatedParents(written)) instanceQueue.add(parent.name, 'related')
    }
    const again = new Set<SyncCause>()
    for (const w of report.writes) again.add(w.verb === 'parent' || w.verb === 'status' || w.verb === 'finalizer' ? 'labels' : 'child')
    return [...again]
  })
  const instanceEvent = async (instance: JsonObject): Promise<void> => {
    for (const parent of await isolationDriver.relatedParents(instance))
      if (parent.name === namespace) namespaceQueue.add(namespace, 'related')
  }
  const tally = new SyncTally()
  let lastSyncEnded = started
  const instanceQueue = new WorkQueue(async (key, causes) => {
    try {
      tally.record(causes, wroteSummary(await instanceDriver.syncOnce({ namespace, name: key })))
    } catch (err) {
      tally.record(causes, 'failed')
      throw err
    } finally {
      lastSyncEnded = performance.now()
    }
    return []
  })

  // Syncs are queued by the watch events of Instances, Pods and Services, as Metacontroller's
  // informers queue them (driver-events.ts); each write's event arrives when the watch delivers it.
  const controller = instanceDriver.options.controller
  if (controller.kind !== 'CompositeController') throw new Error(`${INSTANCE_CONTROLLER} is not a CompositeController`)
  let lastEvent = performance.now()
  const seen = new Map<string, JsonObject>()
  const onInstance = (v: Version): void => {
    lastEvent = performance.now()
    const cur = v.object as JsonObject
    const key = String((cur.metadata as JsonObject).name)
    const old = seen.get(key)
    if (v.type === 'DELETED') seen.delete(key)
    else seen.set(key, cur)
    const cause =
      v.type === 'ADDED' ? 'created' : v.type === 'DELETED' || old === undefined ? 'parent' : parentUpdateCause(controller, old, cur)
    if (cause !== undefined) instanceQueue.add(key, cause)
    instanceEvent(cur).catch(() => undefined)
  }
  const onChild = (v: Version): void => {
    lastEvent = performance.now()
    const parent = childEventParent(controller, 'Instance', v.object as JsonObject)
    if (parent !== undefined) instanceQueue.add(parent, 'child')
  }
  const watches = await Promise.all([
    recordHistory(kube, { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', namespace }, onInstance),
    recordHistory(kube, { apiVersion: 'v1', resource: 'pods', namespace }, onChild),
    recordHistory(kube, { apiVersion: 'v1', resource: 'services', namespace }, onChild)
  ])
  let created = false
  const creating = pool(
    Array.from({ length: INSTANCES }, (_, i) => i),
    20,
    async (i) => {
      await kube.create({ apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', namespace }, benchInstance(namespace, i))
    }
  ).then(() => {
    created = true
  })
  // Done when every Instance was seen, the queues are idle and no event came for two seconds.
  const quiet = (): boolean => created && seen.size >= INSTANCES && performance.now() - lastEvent > 2000
  await Promise.all([creating, instanceQueue.run(WORKERS, quiet), namespaceQueue.run(1, () => quiet() && instanceQueue.idle)])
  for (const w of watches) w.stop()
  const seconds = (lastSyncEnded - started) / 1000
  const totalCpuNs = cpuNs(pid) - cpuBefore
  const calls = new Map(meter.byController)
  const charged = [...calls.values()].reduce((n, c) => n + c.cpuNs, 0)
  return {
    name: `${name}: ${INSTANCES} Instances through the hooks`,
    seconds,
    calls,
    restCpuNs: totalCpuNs - charged,
    totalCpuNs,
    admissions: (await answeredAdmissions(env)) - admissionsBefore,
    errors: instanceQueue.errors + namespaceQueue.errors,
    isolationWithInstances,
    instancesCarried,
    tally
  }
}

async function directScenario(kube: KubeApi, from: string): Promise<{ result: Result; services: ResourceRef[] }> {
  const namespace = 'bench-direct'
  await kube.create({ apiVersion: 'v1', resource: 'namespaces' }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } })
  const pods = (await kube.list({ apiVersion: 'v1', resource: 'pods', namespace: from })).body.map((p) => asApplied(p, 'Pod', namespace))
  const services = (await kube.list({ apiVersion: 'v1', resource: 'services', namespace: from })).body.map((s) =>
    asApplied(s, 'Service', namespace)
  )
  // The ServiceAccount admission plugin needs the namespace's default ServiceAccount.
  for (let i = 0; ; i++) {
    try {
      await kube.get({ apiVersion: 'v1', resource: 'serviceaccounts', namespace, name: 'default' })
      break
    } catch (err) {
      if (i > 300) throw err
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
  const started = performance.now()
  await pool([...pods, ...services], 20, async (o) => {
    await kube.create({ apiVersion: 'v1', resource: o.kind === 'Pod' ? 'pods' : 'services', namespace }, o)
  })
  const seconds = (performance.now() - started) / 1000
  return {
    result: {
      name: `direct: the same ${pods.length} Pods and ${services.length} Services, created as they are`,
      seconds,
      calls: new Map(),
      restCpuNs: 0,
      totalCpuNs: 0,
      admissions: 0,
      errors: 0,
      isolationWithInstances: 0,
      instancesCarried: 0
    },
    services: services.map((s) => ({ apiVersion: 'v1', resource: 'services', namespace, name: String((s.metadata as JsonObject).name) }))
  }
}

const ms = (ns: number): string => (ns / 1e6).toFixed(0)

function table(results: readonly Result[]): string[] {
  const head = [
    'scenario',
    'convergence s',
    'instance calls',
    'Instance syncs per Instance',
    'instance CPU ms',
    'isolation calls',
    'isolation CPU ms',
    'isolation calls carrying Instances',
    'Instances carried, all isolation calls',
    'admission calls',
    'admission and the rest, CPU ms',
    'service CPU ms',
    'retried syncs'
  ]
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`
  const rows = results.map((r) => {
    const inst = r.calls.get('instance')
    const iso = r.calls.get('isolation')
    const hooks = r.totalCpuNs > 0
    return [
      r.name,
      r.seconds.toFixed(1),
      hooks ? String(inst?.calls ?? 0) : '-',
      r.tally !== undefined ? (r.tally.syncs / INSTANCES).toFixed(2) : '-',
      hooks ? ms(inst?.cpuNs ?? 0) : '-',
      hooks ? String(iso?.calls ?? 0) : '-',
      hooks ? ms(iso?.cpuNs ?? 0) : '-',
      hooks ? String(r.isolationWithInstances) : '-',
      hooks ? String(r.instancesCarried) : '-',
      hooks ? String(r.admissions) : '-',
      hooks ? ms(r.restCpuNs) : '-',
      hooks ? ms(r.totalCpuNs) : '-',
      hooks ? String(r.errors) : '-'
    ]
  })
  return [line(head), line(head.map(() => '---')), ...rows.map(line)]
}

/** Every Instance sync of a scenario by the causes that queued it and what it wrote. */
function causeTable(r: Result): string[] {
  if (r.tally === undefined) return []
  const line = (cells: readonly string[]): string => `| ${cells.join(' | ')} |`
  return [
    `${r.name}: ${r.tally.syncs} Instance syncs, ${(r.tally.syncs / INSTANCES).toFixed(2)} per Instance`,
    '',
    line(['queued by', 'wrote', 'syncs', 'per Instance']),
    line(['---', '---', '---', '---']),
    ...r.tally.table().map(([why, wrote, n]) => line([why, wrote, String(n), (n / INSTANCES).toFixed(2)]))
  ]
}

/** The pool row: its calls and CPU charged by the meter, the whole service's CPU over the run. */
async function poolScenario(
  env: ClusterEnv,
  pid: number,
  meter: Meter
): Promise<{ result: CellpoolResult; charge: Charge; totalCpuNs: number }> {
  meter.reset()
  const cpuBefore = cpuNs(pid)
  const result = await cellpoolScenario(env, CELLS, meter.transport('cellpool'))
  const totalCpuNs = cpuNs(pid) - cpuBefore
  return { result, charge: meter.byController.get('cellpool') ?? { calls: 0, cpuNs: 0 }, totalCpuNs }
}

function poolTable(p: { result: CellpoolResult; charge: Charge; totalCpuNs: number }): string[] {
  const r = p.result
  const kib = (n: number): string => (n / 1024).toFixed(1)
  return [
    '| pool | convergence s | rounds | most cells being built at once | cellpool calls (sync) | cellpool CPU ms | service CPU ms | largest sync request KiB | largest sync response KiB | failed syncs |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
    `| ${r.cells} cells to Ready | ${r.seconds.toFixed(1)} | ${r.rounds} | ${r.mostCreating} | ${r.calls} (${r.syncCalls}) | ${ms(p.charge.cpuNs)} | ${ms(p.totalCpuNs)} | ${kib(r.largestSyncRequest)} | ${kib(r.largestSyncResponse)} | ${r.errors} |`
  ]
}

async function main(): Promise<void> {
  const env = await startEnv(CELLS > 0 ? { extraCrds: [KUBESWIFT_CRDS] } : {})
  try {
    const pid = servicePid(new URL(env.service.hooksUrl).port)
    const meter = new Meter(pid)
    const kube = env.kube
    await createBenchType(kube)
    const results: Result[] = []
    if (!SKIP_INSTANCES) {
      console.error(`bench:cluster: labelled namespace, ${INSTANCES} Instances …`)
      results.push(await hookScenario(env, pid, meter, 'labelled', true))
      console.error('bench:cluster: direct baseline …')
      const direct = await directScenario(kube, 'bench-labelled')
      results.push(direct.result)
      // Node ports are a cluster-wide range: give the baseline's back before the next scenario.
      await pool(direct.services, 20, async (ref) => {
        await kube.delete(ref)
      })
    }
    if (!SKIP_FRESH && !SKIP_INSTANCES) {
      console.error(`bench:cluster: fresh namespace, ${INSTANCES} Instances …`)
      results.push(await hookScenario(env, pid, meter, 'fresh', false))
    }
    let cellpool: Awaited<ReturnType<typeof poolScenario>> | undefined
    if (CELLS > 0) {
      console.error(`bench:cluster: a GPUCellPool of ${CELLS} cells …`)
      cellpool = await poolScenario(env, pid, meter)
    }
    const cpus = os.cpus()
    const flags = [
      ...(SKIP_INSTANCES ? [] : [`--instances ${INSTANCES} --workers ${WORKERS}`]),
      ...(SKIP_FRESH && !SKIP_INSTANCES ? ['--skip-fresh'] : []),
      ...(CELLS > 0 ? [`--cells ${CELLS}`] : []),
      ...(SKIP_INSTANCES ? ['--skip-instances'] : [])
    ]
    console.log(`command: npm run bench:cluster -- ${flags.join(' ')}`)
    console.log(
      `machine: ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown CPU'}, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} at the end, Node ${process.version}`
    )
    console.log('')
    if (results.length > 0) {
      for (const line of table(results)) console.log(line)
      console.log('')
      for (const r of results) {
        const lines = causeTable(r)
        if (lines.length > 0) console.log([...lines, ''].join('\n'))
      }
    }
    if (cellpool !== undefined) {
      for (const line of poolTable(cellpool)) console.log(line)
      console.log('')
    }
    console.log(`Hook service peak RSS over the whole run: ${(peakRss(pid) / 1024 / 1024).toFixed(0)} MiB.`)
  } finally {
    await env.stop()
  }
}

await main()
