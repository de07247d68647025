/**
 * The chart's Instance recording rules in a real Prometheus (docs/observability.md, docs/lifecycle.md):
 * `cmd/prometheus` of the module the project pins, scraping a stand-in exporter that serves
 * kube-state-metrics' Pod series and HAMi's per-container series under the current names, the
 * legacy names, or both. promtool's rule tests (tests/unit/monitoring-rules.test.ts) check the
 * expressions over written series; this checks the same rules loaded, scraped and evaluated by the
 * server the activity query of the agent is sent to: whichever names a node exports, each
 * Instance gets exactly one series of `gpustack_instance_accelerator_cores_utilization_percent`
 * per accelerator, with the value of its own share.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { startWatchdog } from './support/processes.ts'
import { exporterText, startExporter, startPrometheus, type InstancePodSeries } from './support/prometheus.ts'

const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-prometheus-'))
const pidFile = join(dir, 'pids')
const watchdog = startWatchdog(dir, pidFile)
const exporter = await startExporter()
const prometheus = await startPrometheus({ dir, pidFile, targets: [exporter.target] })
t.teardown(async () => {
  await prometheus.stop()
  await exporter.close()
  watchdog.kill()
  rmSync(dir, { recursive: true, force: true })
})

const RULE = 'gpustack_instance_accelerator_cores_utilization_percent'

const pod = (name: string, names: InstancePodSeries['names'], utilization: number, coresAllotted = 0): InstancePodSeries => ({
  namespace: 'team-a',
  pod: name,
  podUID: `pod-${name}`,
  instanceUID: `inst-${name}`,
  node: 'gpu-node-1',
  utilization,
  names,
  coresAllotted,
  deviceUUID: `GPU-${name}`
})

/** Waits until the rule's series, by instance_name, equal `expected` (values to 1e-9). */
async function ruleSettles(expected: Record<string, number>, what: string): Promise<Record<string, number>> {
  const until = Date.now() + 60_000
  let seen: Record<string, number> = {}
  for (;;) {
    const samples = await prometheus.query(RULE)
    seen = {}
    for (const s of samples) {
      const name = s.metric['instance_name'] ?? '?'
      seen[name] = name in seen ? Number.NaN : s.value
    }
    const same =
      Object.keys(seen).length === Object.keys(expected).length &&
      Object.entries(expected).every(([k, v]) => Math.abs((seen[k] ?? Number.NaN) - v) < 1e-9)
    if (same) return seen
    if (Date.now() > until) throw new Error(`${what}: ${JSON.stringify(seen)}, expected ${JSON.stringify(expected)}\n${prometheus.log()}`)
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
}

t.test('current, legacy and both name families give one series per Instance with its share', async (t) => {
  exporter.set(
    exporterText([
      pod('current-only', 'current', 40),
      pod('legacy-only', 'legacy', 40),
      pod('both-names', 'both', 40),
      pod('half-share', 'current', 30, 50),
      pod('idle', 'legacy', 0)
    ])
  )
  const seen = await ruleSettles(
    { 'current-only': 40, 'legacy-only': 40, 'both-names': 40, 'half-share': 60, idle: 0 },
    'the rule after the first scrapes'
  )
  t.same(seen, { 'current-only': 40, 'legacy-only': 40, 'both-names': 40, 'half-share': 60, idle: 0 }, 'one series each, its own share')
  const labelled = await prometheus.query(`${RULE}{instance_name="both-names"}`)
  t.equal(labelled.length, 1, 'a node exporting both families counts the device once')
  t.match(labelled[0]?.metric, {
    namespace: 'team-a',
    instance_uid: 'inst-both-names',
    node: 'gpu-node-1',
    id: 'GPU-both-names',
    index: '0'
  })
})

t.test('the activity query over the round: one sample per Instance, its maximum over the window', async (t) => {
  // Pods of their own, so the window holds no sample of the first test's.
  exporter.set(exporterText([pod('busy-then-idle', 'current', 90), pod('always-idle', 'legacy', 3)]))
  await ruleSettles({ 'busy-then-idle': 90, 'always-idle': 3 }, 'the rule after a change')
  exporter.set(exporterText([pod('busy-then-idle', 'current', 2), pod('always-idle', 'legacy', 3)]))
  await ruleSettles({ 'busy-then-idle': 2, 'always-idle': 3 }, 'the rule after it went idle')
  const samples = await prometheus.query(`max by (namespace, instance_name, instance_uid) (max_over_time(${RULE}[1m]))`)
  const byName = Object.fromEntries(samples.map((s) => [s.metric['instance_name'], s.value]))
  t.equal(byName['busy-then-idle'], 90, 'the busy moment within the window is seen after the device went idle')
  t.equal(byName['always-idle'], 3)
  t.ok(
    samples.every((s) => Object.keys(s.metric).sort().join(',') === 'instance_name,instance_uid,namespace'),
    'labelled by Instance only'
  )
})

t.test('stopped, the server refuses connections; started again, it answers on the same URL', async (t) => {
  await prometheus.stop()
  await t.rejects(fetch(`${prometheus.url}/-/ready`), 'connection refused while stopped')
  await prometheus.start()
  const samples = await prometheus.query('up{job="standin"}')
  t.equal(samples.length, 1, 'the stand-in is a target again')
})
