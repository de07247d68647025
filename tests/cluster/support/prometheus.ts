/**
 * A real Prometheus beside the tests (docs/lifecycle.md): the server (`cmd/prometheus` of the
 * github.com/prometheus/prometheus module, built by ../build-prometheus.sh), evaluating the chart's
 * own recording rules (deploy/chart/gpuhooks/files/monitoring/instance.rules.yaml, a plain rules
 * file) over a stand-in exporter: a loopback HTTP server in the test process serving the HAMi and
 * kube-state-metrics series the test writes, scraped with `honor_labels` as docs/observability.md
 * asks of HAMi's monitor (the series keep their own namespace and pod labels).
 *
 * Scrape and rule evaluation every second, so a test waits seconds, not minutes. `stop()` and
 * `start()` take the server down and bring it back on the same port and storage: "Prometheus
 * unreachable" is a real connection refused.
 */
import { mkdirSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { stringify } from 'yaml'
import { freePorts } from '../../support/ports.ts'
import { goBuiltProgram } from './go-built.ts'
import { startProcess, stopProcess, tailLog, type ManagedProcess } from './processes.ts'

const PROGRAM = 'prometheus'

/** The chart's Instance recording rules, as Prometheus loads them. */
export const INSTANCE_RULES = fileURLToPath(new URL('../../../deploy/chart/gpuhooks/files/monitoring/instance.rules.yaml', import.meta.url))

/** The server binary: `$GPUHOOKS_PROMETHEUS_BIN/prometheus` when there, else what the build script prints last. */
export function prometheusBinary(): string {
  return goBuiltProgram('GPUHOOKS_PROMETHEUS_BIN', PROGRAM, 'build-prometheus.sh')
}

/** The stand-in exporter: serves whatever text the test last set, in the text exposition format. */
export interface StandInExporter {
  /** host:port, as a scrape target. */
  target: string
  set(text: string): void
  /** How many scrapes it has answered. */
  scrapes(): number
  close(): Promise<void>
}

export async function startExporter(): Promise<StandInExporter> {
  const [port] = await freePorts(1)
  let text = ''
  let scrapes = 0
  const server: Server = createServer((req, res) => {
    if (req.url !== '/metrics') {
      res.writeHead(404).end()
      return
    }
    scrapes += 1
    res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => resolve())
  })
  return {
    target: `127.0.0.1:${String(port)}`,
    set: (next) => {
      text = next
    },
    scrapes: () => scrapes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}

/** One sample of an instant vector. */
export interface Sample {
  metric: Record<string, string>
  value: number
}

export interface RunningPrometheus {
  /** The base URL, as the agent's PROMETHEUS_URL takes it. */
  url: string
  /** An instant query; throws when the server answers an error. */
  query(expr: string): Promise<Sample[]>
  /** Takes the server down (connections refused) until `start()`. */
  stop(): Promise<void>
  /** Brings it back on the same port and storage, and waits until it is ready. */
  start(): Promise<void>
  log(): string
}

export interface PrometheusOptions {
  /** A directory of the test's own (config, storage, log). */
  dir: string
  /** The file the cluster's watchdog reads pids from, so a killed test leaves no server. */
  pidFile: string
  /** Scrape targets (host:port) of the job `standin`. */
  targets: readonly string[]
  /** Rule files; the chart's Instance rules when absent. */
  ruleFiles?: readonly string[]
}

async function untilUp(url: string, proc: () => ManagedProcess, deadlineMs = 60_000): Promise<void> {
  const until = Date.now() + deadlineMs
  for (;;) {
    const current = proc()
    if (current.child.exitCode !== null)
      throw new Error(`prometheus exited (${String(current.child.exitCode)})\n${tailLog(current.logFile)}`)
    try {
      const res = await fetch(`${url}/-/ready`)
      if (res.ok) return
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`prometheus not ready after ${String(deadlineMs)} ms\n${tailLog(current.logFile)}`)
    await new Promise((resolve) => setTimeout(resolve, 250))
  }
}

export async function startPrometheus(options: PrometheusOptions): Promise<RunningPrometheus> {
  const binary = prometheusBinary()
  const [port] = await freePorts(1)
  mkdirSync(options.dir, { recursive: true })
  const config = join(options.dir, 'prometheus.yml')
  writeFileSync(
    config,
    stringify({
      global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
      rule_files: [...(options.ruleFiles ?? [INSTANCE_RULES])],
      scrape_configs: [{ job_name: 'standin', honor_labels: true, static_configs: [{ targets: [...options.targets] }] }]
    })
  )
  const url = `http://127.0.0.1:${String(port)}`
  const logFile = join(options.dir, 'prometheus.log')
  const args = [
    `--config.file=${config}`,
    `--storage.tsdb.path=${join(options.dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${String(port)}`,
    '--log.level=warn'
  ]
  let proc = startProcess(PROGRAM, binary, args, logFile, options.pidFile)
  let up = true
  await untilUp(url, () => proc).catch(async (error: unknown) => {
    await stopProcess(proc)
    throw error
  })
  return {
    url,
    async query(expr) {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`)
      const body = (await res.json()) as { status?: string; error?: string; data?: { resultType?: string; result?: unknown } }
      if (body.status !== 'success' || body.data?.resultType !== 'vector' || !Array.isArray(body.data.result))
        throw new Error(`query ${expr}: ${res.status} ${body.error ?? JSON.stringify(body).slice(0, 300)}`)
      return (body.data.result as Array<{ metric: Record<string, string>; value: [number, string] }>).map((s) => ({
        metric: s.metric,
        value: Number(s.value[1])
      }))
    },
    async stop() {
      up = false
      await stopProcess(proc)
    },
    async start() {
      if (up) return
      proc = startProcess(PROGRAM, binary, args, logFile, options.pidFile)
      up = true
      await untilUp(url, () => proc)
    },
    log: () => tailLog(logFile, 60)
  }
}

/** Label values as the exposition format quotes them. */
function labels(values: Record<string, string>): string {
  const quoted = Object.entries(values).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`)
  return `{${quoted.join(',')}}`
}

/** An Instance's Pod as the stand-in's kube-state-metrics and HAMi series describe it. */
export interface InstancePodSeries {
  namespace: string
  /** The Pod's name, which is the Instance's. */
  pod: string
  podUID: string
  instanceUID: string
  node: string
  /** One accelerator: its utilization, percent of the device. */
  utilization: number
  /** HAMi's name families to serve: current (v2.9 and later), legacy, or both. */
  names: 'current' | 'legacy' | 'both'
  /** The compute share HAMi's scheduler allots, percent of the device; 0: no limit. */
  coresAllotted?: number
  deviceUUID?: string
}

/**
 * The exposition text for these Pods: kube-state-metrics' kube_pod_created, kube_pod_info and
 * kube_pod_labels (controller-uid allowlisted), and per Pod one device of HAMi's monitor and
 * scheduler under the chosen names (docs/observability.md lists them).
 */
export function exporterText(pods: readonly InstancePodSeries[]): string {
  const lines: string[] = []
  const family = (name: string, rows: Array<[Record<string, string>, number]>): void => {
    if (rows.length === 0) return
    lines.push(`# TYPE ${name} gauge`)
    for (const [l, v] of rows) lines.push(`${name}${labels(l)} ${String(v)}`)
  }
  const pick = (names: InstancePodSeries['names'], which: 'current' | 'legacy'): boolean => names === 'both' || names === which
  family(
    'kube_pod_created',
    pods.map((p) => [{ namespace: p.namespace, pod: p.pod, uid: p.podUID }, 1_700_000_000])
  )
  family(
    'kube_pod_info',
    pods.map((p) => [
      { namespace: p.namespace, pod: p.pod, uid: p.podUID, node: p.node, created_by_kind: 'Instance', created_by_name: p.pod },
      1
    ])
  )
  family(
    'kube_pod_labels',
    pods.map((p) => [{ namespace: p.namespace, pod: p.pod, uid: p.podUID, label_controller_uid: p.instanceUID }, 1])
  )
  const device = (p: InstancePodSeries): string => p.deviceUUID ?? `GPU-${p.podUID.slice(0, 8)}`
  // Per family: which names, the series' labels, its value.
  const hami: Array<[string, 'current' | 'legacy', (p: InstancePodSeries) => Record<string, string>, (p: InstancePodSeries) => number]> = [
    [
      'hami_container_device_utilization_ratio',
      'current',
      (p) => ({ namespace: p.namespace, pod: p.pod, container: 'main', vdevice_index: '0', device_uuid: device(p) }),
      (p) => p.utilization
    ],
    [
      'hami_vgpu_core_allocated_ratio',
      'current',
      (p) => ({ namespace: p.namespace, pod: p.pod, container_index: '0', device_uuid: device(p) }),
      (p) => p.coresAllotted ?? 0
    ],
    [
      'Device_utilization_desc_of_container',
      'legacy',
      (p) => ({ podnamespace: p.namespace, podname: p.pod, ctrname: 'main', vdeviceid: '0', deviceuuid: device(p) }),
      (p) => p.utilization
    ],
    [
      'vGPUCoreAllocated',
      'legacy',
      (p) => ({ podnamespace: p.namespace, podname: p.pod, containeridx: '0', deviceuuid: device(p) }),
      (p) => p.coresAllotted ?? 0
    ]
  ]
  for (const [name, names, labelsOf, valueOf] of hami) {
    family(
      name,
      pods.filter((p) => pick(p.names, names)).map((p) => [labelsOf(p), valueOf(p)])
    )
  }
  return `${lines.join('\n')}\n`
}
