/**
 * `npm run bench:metacontroller`: N Instances under a real Metacontroller, against a direct apply of
 * the same Pods and Services. The binary is not part of this project: build Metacontroller from
 * its source (`go build ./pkg/cmd/metacontroller` in a checkout of its release tag) and pass its
 * path.
 *
 *   npm run bench:metacontroller -- --bin /path/to/metacontroller [--instances 1000] [--status-changes]
 *
 * It starts the cluster layer's control plane and the hook service (with its admission webhooks),
 * applies `metacontroller/instance.yaml` and `metacontroller/isolation.yaml` with every hook URL
 * pointed at a recorder in front of the service (the Metacontroller CRDs are the stand-ins of
 * tests/cluster/fixtures/metacontroller-crds.yaml: Metacontroller only reads its controllers), and
 * runs Metacontroller with `--client-go-qps=100 --client-go-burst=200 --workers=5` against it.
 * `--status-changes` applies the Instance controller with `parentResource.ignoreStatusChanges:
 * false`, as it was before.
 *
 * The run: a namespace that already holds Instances (labelled `gpustack.ai/holds-instances`), then
 * `kubectl apply` of N Instances in one file (through the admission webhook), timed from the start
 * of that apply until every Instance's status names its Pod and its node ports (read from a watch
 * of the Instances). It waits until no sync came for 30 s, and then applies the same Pods and
 * Services, as a user would write them (no controller labels, annotations, cluster IPs or node
 * ports), with one `kubectl apply` into a second namespace: the baseline. Printed: both times
 * and their ratio, the syncs per Instance and the sequence of what each Instance's syncs
 * observed (its children, whether the Service had node ports, whether its last-applied record
 * held them), the hook calls by path, and the CPU time of Metacontroller, the API server and the
 * hook service up to convergence (from /proc/<pid>/stat). Nothing here asserts a timing.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createServer, request as httpRequest, type Server } from 'node:http'
import { existsSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments, stringify } from 'yaml'
import { isObject, type JsonObject } from '../support/merge.ts'
import { freePorts } from '../support/ports.ts'
import { installCrds, startEnv } from '../cluster/support/env.ts'
import { recordHistory } from '../cluster/support/watch.ts'
import { asApplied, benchInstance, createBenchType, servicePid } from './instance-world.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const NAMESPACE = 'bench-metacontroller'
const DIRECT_NAMESPACE = 'bench-direct'
const QUIET_MS = 30_000

function option(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`)
  return i < 0 ? undefined : process.argv[i + 1]
}
const BIN = option('bin') ?? process.env['GPUHOOKS_METACONTROLLER_BIN']
const INSTANCES = Number(option('instances') ?? 200)
const STATUS_CHANGES = process.argv.includes('--status-changes')
if (BIN === undefined || !existsSync(BIN))
  throw new Error('--bin needs the path of a Metacontroller binary (or GPUHOOKS_METACONTROLLER_BIN)')
if (!Number.isInteger(INSTANCES) || INSTANCES < 1) throw new Error('--instances needs a positive integer')

// ---- processes, seen from outside ----

/** CPU time of a process so far (user and system), in seconds: /proc counts it in ticks of 1/100 s. */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}

/** Pids of the processes whose command line holds every one of `parts`. */
function processesWith(...parts: string[]): number[] {
  const found: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8')
      if (parts.every((p) => cmdline.includes(p))) found.push(Number(entry))
    } catch {
      // A process that ended while being read.
    }
  }
  return found
}

// ---- the recorder ----

/** What one Instance sync request observed. */
interface Observed {
  pods: number
  services: number
  /** The Service's ports all had node ports. */
  nodePorts: boolean
  /** The Service's last-applied record held node ports (the hook had answered them). */
  recorded: boolean
}

class Recorder {
  readonly calls = new Map<string, number>()
  readonly syncs = new Map<string, Observed[]>()
  lastSync = 0
  private server: Server | undefined

  constructor(private readonly target: URL) {}

  async listen(port: number): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        const body = Buffer.concat(chunks)
        const path = req.url ?? ''
        this.calls.set(path, (this.calls.get(path) ?? 0) + 1)
        if (path === '/hooks/instance/sync') this.record(body)
        const upstream = httpRequest(
          {
            host: this.target.hostname,
            port: this.target.port,
            path,
            method: req.method,
            headers: { 'content-type': 'application/json', 'content-length': body.length }
          },
          (answer) => {
            res.writeHead(answer.statusCode ?? 502, { 'content-type': 'application/json' })
            answer.pipe(res)
          }
        )
        upstream.on('error', (err) => {
          res.writeHead(502)
          res.end(String(err))
        })
        upstream.end(body)
      })
    })
    await new Promise<void>((resolve) => this.server?.listen(port, '127.0.0.1', resolve))
  }

  private record(body: Buffer): void {
    const request = JSON.parse(body.toString('utf8')) as JsonObject
    const parent = isObject(request.parent) && isObject(request.parent.metadata) ? String(request.parent.metadata.name) : '?'
    const children = isObject(request.children) ? request.children : {}
    const pods = isObject(children['Pod.v1']) ? Object.values(children['Pod.v1']) : []
    const services = isObject(children['Service.v1']) ? Object.values(children['Service.v1']) : []
    const service = services[0]
    const ports = isObject(service) && isObject(service.spec) && Array.isArray(service.spec.ports) ? service.spec.ports : []
    const annotations =
      isObject(service) && isObject(service.metadata) && isObject(service.metadata.annotations) ? service.metadata.annotations : {}
    const lastApplied = annotations['metacontroller.k8s.io/last-applied-configuration']
    const seen: Observed = {
      pods: pods.length,
      services: services.length,
      nodePorts: ports.length > 0 && ports.every((p) => isObject(p) && typeof p.nodePort === 'number'),
      recorded: typeof lastApplied === 'string' && lastApplied.includes('"nodePort"')
    }
    this.syncs.set(parent, [...(this.syncs.get(parent) ?? []), seen])
    this.lastSync = performance.now()
  }

  close(): void {
    this.server?.close()
  }
}

/** One sync's observation in short: `0` (no child), `Pod+Service`, `+np` node ports, `+rec` recorded. */
function shortly(o: Observed): string {
  const kids = [o.pods > 0 ? 'Pod' : '', o.services > 0 ? 'Service' : ''].filter((k) => k !== '').join('+') || 'no child'
  return `${kids}${o.nodePorts ? ' with node ports' : ''}${o.recorded ? ', recorded' : ''}`
}

// ---- the run ----

/** The controllers of metacontroller/ with their hooks at `base` (the recorder). */
function controllersAt(base: string): string {
  const docs: string[] = []
  for (const file of ['instance.yaml', 'isolation.yaml']) {
    for (const doc of parseAllDocuments(readFileSync(join(ROOT, 'metacontroller', file), 'utf8'))) {
      const o = doc.toJS() as JsonObject | null
      if (o === null || !isObject(o.spec) || !isObject(o.spec.hooks)) continue
      for (const hook of Object.values(o.spec.hooks)) {
        if (!isObject(hook) || !isObject(hook.webhook)) continue
        const path = String(hook.webhook.path)
        hook.webhook = { url: `${base}${path}`, ...(hook.webhook.timeout === undefined ? {} : { timeout: hook.webhook.timeout }) }
      }
      if (STATUS_CHANGES && o.kind === 'CompositeController' && isObject(o.spec.parentResource))
        o.spec.parentResource.ignoreStatusChanges = false
      docs.push(stringify(o))
    }
  }
  return docs.join('---\n')
}

async function main(): Promise<void> {
  const env = await startEnv({})
  const recorder = new Recorder(new URL(env.service.hooksUrl))
  let metacontroller: ChildProcess | undefined
  // Metacontroller's log and the applied files; kept when the run fails.
  const dir = await mkdtemp(join(os.tmpdir(), 'gpuhooks-bench-metacontroller-'))
  let finished = false
  try {
    const kube = env.kube
    const hookPid = servicePid(new URL(env.service.hooksUrl).port)
    const apiPid = processesWith('kube-apiserver', env.cluster.dir)[0]
    if (apiPid === undefined) throw new Error('no kube-apiserver process')
    await createBenchType(kube)
    const [recorderPort, healthPort, metricsPort] = await freePorts(3)
    await recorder.listen(Number(recorderPort))
    await installCrds(env.cluster, [join(ROOT, 'tests', 'cluster', 'fixtures', 'metacontroller-crds.yaml')])
    await env.cluster.kubectl(['apply', '-f', '-'], { input: controllersAt(`http://127.0.0.1:${recorderPort}`) })
    const log = join(dir, 'metacontroller.log')
    metacontroller = spawn(
      BIN as string,
      [
        `--kubeconfig=${env.cluster.kubeconfig}`,
        '--client-go-qps=100',
        '--client-go-burst=200',
        '--workers=5',
        `--metrics-address=127.0.0.1:${metricsPort}`,
        `--health-probe-bind-address=127.0.0.1:${healthPort}`
      ],
      { stdio: ['ignore', openSync(log, 'w'), openSync(log, 'a')] }
    )
    const mcPid = metacontroller.pid
    if (mcPid === undefined) throw new Error(`${BIN} did not start`)

    await kube.create(
      { apiVersion: 'v1', resource: 'namespaces' },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE, labels: { 'gpustack.ai/holds-instances': 'true' } } }
    )
    await env.cluster.kubectl(['wait', '--for=create', '-n', NAMESPACE, 'serviceaccount/default', '--timeout=60s'])
    // Metacontroller's informers list and the namespace syncs before the burst.
    const ready = performance.now()
    while ((recorder.calls.get('/hooks/isolation/sync') ?? 0) === 0) {
      if (performance.now() - ready > 60_000) throw new Error(`Metacontroller synced no namespace in 60 s; its log: ${log}`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }

    const file = join(dir, 'instances.yaml')
    writeFileSync(file, Array.from({ length: INSTANCES }, (_, i) => stringify(benchInstance(NAMESPACE, i))).join('---\n'))
    const converged = new Set<string>()
    let convergedAt = 0
    const watch = await recordHistory(
      kube,
      { apiVersion: 'worker.gpustack.ai/v1alpha1', resource: 'instances', namespace: NAMESPACE },
      (v) => {
        const o = v.object as JsonObject
        const status = isObject(o.status) ? o.status : {}
        const name = isObject(o.metadata) ? String(o.metadata.name) : ''
        if (typeof status.podName === 'string' && typeof status.nodePorts === 'string' && status.nodePorts !== '' && !converged.has(name)) {
          converged.add(name)
          if (converged.size === INSTANCES) convergedAt = performance.now()
        }
      }
    )
    const cpuBefore = { mc: cpuSeconds(mcPid), api: cpuSeconds(apiPid), hooks: cpuSeconds(hookPid) }
    const started = performance.now()
    console.error(`bench:metacontroller: kubectl apply of ${INSTANCES} Instances …`)
    await env.cluster.kubectl(['apply', '-f', file])
    const applied = performance.now()
    // A run that stops making progress for two minutes has failed (the log says why).
    let progress = { count: 0, at: performance.now() }
    while (convergedAt === 0) {
      if (converged.size !== progress.count) progress = { count: converged.size, at: performance.now() }
      if (performance.now() - progress.at > 120_000)
        throw new Error(`${converged.size} of ${INSTANCES} Instances converged, none more in two minutes; Metacontroller's log: ${log}`)
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const cpuConverged = { mc: cpuSeconds(mcPid), api: cpuSeconds(apiPid), hooks: cpuSeconds(hookPid) }
    while (performance.now() - Math.max(recorder.lastSync, convergedAt) < QUIET_MS) await new Promise((resolve) => setTimeout(resolve, 500))
    watch.stop()

    const pods = (await kube.list({ apiVersion: 'v1', resource: 'pods', namespace: NAMESPACE })).body
    const services = (await kube.list({ apiVersion: 'v1', resource: 'services', namespace: NAMESPACE })).body
    console.error(`bench:metacontroller: the direct baseline, kubectl apply of ${pods.length} Pods and ${services.length} Services …`)
    await kube.create(
      { apiVersion: 'v1', resource: 'namespaces' },
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: DIRECT_NAMESPACE } }
    )
    await env.cluster.kubectl(['wait', '--for=create', '-n', DIRECT_NAMESPACE, 'serviceaccount/default', '--timeout=60s'])
    const directFile = join(dir, 'direct.yaml')
    writeFileSync(
      directFile,
      [...pods.map((p) => asApplied(p, 'Pod', DIRECT_NAMESPACE)), ...services.map((s) => asApplied(s, 'Service', DIRECT_NAMESPACE))]
        .map((o) => stringify(o))
        .join('---\n')
    )
    const apiBefore = cpuSeconds(apiPid)
    const directStarted = performance.now()
    await env.cluster.kubectl(['apply', '-f', directFile])
    const directSeconds = (performance.now() - directStarted) / 1000
    const directApi = cpuSeconds(apiPid) - apiBefore

    const seconds = (convergedAt - started) / 1000
    const syncs = [...recorder.syncs.values()]
    const total = syncs.reduce((n, s) => n + s.length, 0)
    const bySequence = new Map<string, number>()
    for (const s of syncs) {
      const sequence = s.map((o, i) => `${i + 1}. ${shortly(o)}`).join('; ')
      bySequence.set(sequence, (bySequence.get(sequence) ?? 0) + 1)
    }
    const cpus = os.cpus()
    const flags = [`--instances ${INSTANCES}`, ...(STATUS_CHANGES ? ['--status-changes'] : [])]
    console.log(`command: npm run bench:metacontroller -- --bin ${BIN} ${flags.join(' ')}`)
    console.log(
      `machine: ${cpus.length} × ${cpus[0]?.model.trim() ?? 'unknown CPU'}, load average ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} at the end, Node ${process.version}`
    )
    console.log('')
    console.log(
      '| Instances | manifest | kubectl apply of the Instances s | every Instance with its Pod and node ports s | direct apply of the Pods and Services s | ratio | syncs per Instance | CPU s to convergence: Metacontroller / API server / hooks |'
    )
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- |')
    console.log(
      `| ${INSTANCES} | ${STATUS_CHANGES ? 'ignoreStatusChanges: false' : 'as shipped'} | ${((applied - started) / 1000).toFixed(1)} | ${seconds.toFixed(1)} | ${directSeconds.toFixed(1)} (API server CPU ${directApi.toFixed(1)}) | ${(seconds / directSeconds).toFixed(2)} | ${(total / INSTANCES).toFixed(2)} | ${(cpuConverged.mc - cpuBefore.mc).toFixed(1)} / ${(cpuConverged.api - cpuBefore.api).toFixed(1)} / ${(cpuConverged.hooks - cpuBefore.hooks).toFixed(1)} |`
    )
    console.log('')
    console.log(`Instances with their Pod: ${pods.length}, with their Service: ${services.length}; Instances synced: ${syncs.length}.`)
    console.log('What the syncs of each Instance observed, in order:')
    for (const [sequence, n] of [...bySequence].sort((a, b) => b[1] - a[1])) console.log(`- ${n} Instances: ${sequence}`)
    console.log(`Hook calls by path: ${[...recorder.calls].map(([p, n]) => `${p} ${n}`).join(', ')}`)
    finished = true
  } finally {
    metacontroller?.kill('SIGTERM')
    recorder.close()
    await env.stop()
    if (finished) await rm(dir, { recursive: true, force: true })
  }
}

await main()
