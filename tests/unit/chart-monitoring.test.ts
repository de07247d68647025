/**
 * The chart's monitoring: nothing rendered by default; when turned on, PodMonitors that select
 * the hook and agent Pods on a port they declare, a PrometheusRule carrying the rule files'
 * groups as they are (runbook links added when a base is given), which `promtool check rules`
 * accepts, and the dashboard ConfigMap with the Grafana sidecar's label. With
 * instanceUtilization=dcgm the Instance compute rule reads dcgm-exporter: the rendered Instance
 * group is run by promtool against the cases of tests/rules/dcgm/.
 *
 * Helm and promtool as tests/support/tools.ts finds them; without Helm the file is skipped with
 * that reason (except in CI), and without promtool only the promtool check is.
 */
import t from 'tap'
import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse, parseAllDocuments, stringify } from 'yaml'
import { CHART, ROOT, cellPoolCapabilities } from '../../deploy/chart/generate.ts'
import { findHelm, findPromtool } from '../support/tools.ts'

type Doc = {
  apiVersion: string
  kind: string
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> }
  spec?: Record<string, unknown>
  data?: Record<string, string>
}
type Rule = { alert?: string; record?: string; expr: string; annotations?: Record<string, string> }
type Group = { name: string; rules: Rule[] }

const MONITORING = join(CHART, 'files', 'monitoring')
const ALL_ON = [
  '--set',
  'monitoring.podMonitors.enabled=true',
  '--set',
  'monitoring.prometheusRule.enabled=true',
  '--set',
  'monitoring.dashboard.enabled=true'
]
const DCGM_CASES = join(ROOT, 'tests', 'rules', 'dcgm', 'instance-dcgm.test.yaml')
const ruleFile = (name: string): Group[] =>
  (parse(readFileSync(join(MONITORING, `${name}.rules.yaml`), 'utf8')) as { groups: Group[] }).groups

const found = findHelm()
if ('skip' in found) {
  t.plan(0, found.skip)
} else {
  const helm = found.path
  const docs = (args: string[] = [], chart = CHART): Doc[] =>
    parseAllDocuments(
      // As on a cluster that serves KubeSwift, so that the cell pool controller and its agent are installed.
      execFileSync(helm, ['template', 'gpuhooks', chart, '--namespace', 'gpuhooks-system', ...cellPoolCapabilities(), ...args], {
        encoding: 'utf8',
        maxBuffer: 64 << 20
      })
    )
      .map((d) => d.toJS() as Doc | null)
      .filter((d): d is Doc => d !== null)
  const kinds = (all: Doc[]): string[] => all.map((d) => `${d.kind}/${d.metadata.name}`)
  t.test('by default no PodMonitor, PrometheusRule or dashboard is rendered', async (t) => {
    const all = docs()
    t.same(
      all.filter((d) => d.apiVersion === 'monitoring.coreos.com/v1'),
      []
    )
    t.same(
      kinds(all).filter((k) => k.endsWith('-dashboard')),
      []
    )
  })

  t.test('the PodMonitors select the hook and agent Pods and scrape a port their container declares', async (t) => {
    const all = docs([...ALL_ON, '--set', 'monitoring.podMonitors.labels.release=kube-prometheus-stack'])
    const monitors = all.filter((d) => d.kind === 'PodMonitor')
    t.same(kinds(monitors), ['PodMonitor/gpuhooks', 'PodMonitor/gpuhooks-agent'])
    for (const [monitor, deployment] of [
      ['gpuhooks', 'gpuhooks'],
      ['gpuhooks-agent', 'gpuhooks-agent']
    ] as const) {
      const m = monitors.find((d) => d.metadata.name === monitor)
      const d = all.find((x) => x.kind === 'Deployment' && x.metadata.name === deployment) as unknown as {
        spec: { template: { metadata: { labels: Record<string, string> }; spec: { containers: { ports: { name: string }[] }[] } } }
      }
      const spec = m?.spec as { selector: { matchLabels: Record<string, string> }; podMetricsEndpoints: Record<string, unknown>[] }
      t.equal(m?.metadata.namespace, 'gpuhooks-system')
      t.equal(m?.metadata.labels?.['release'], 'kube-prometheus-stack', 'the labels the Prometheus selects on')
      t.same(spec.selector.matchLabels, d.spec.template.metadata.labels, `${monitor} selects exactly the Pods of ${deployment}`)
      const endpoint = spec.podMetricsEndpoints[0]
      t.match(endpoint, { port: 'http', path: '/metrics', interval: '30s', scrapeTimeout: '10s' })
      t.ok(
        d.spec.template.spec.containers[0]?.ports.some((p) => p.name === endpoint?.['port']),
        `${deployment} declares the port ${String(endpoint?.['port'])}`
      )
      t.equal(endpoint?.['honorLabels'], monitor === 'gpuhooks-agent' ? true : undefined, 'the agent keeps its pool namespace label')
    }
  })

  t.test('the PrometheusRule carries the rule files as they are; without cell pools, no agent or pool rules', async (t) => {
    const rule = (all: Doc[]): Group[] => (all.find((d) => d.kind === 'PrometheusRule')?.spec as { groups: Group[] }).groups
    t.same(rule(docs(ALL_ON)), [...ruleFile('hooks'), ...ruleFile('cellpool'), ...ruleFile('instance')])
    t.same(rule(docs([...ALL_ON, '--set', 'monitoring.prometheusRule.instanceAccelerators=false'])), [
      ...ruleFile('hooks'),
      ...ruleFile('cellpool')
    ])
    const without = docs([...ALL_ON, '--set', 'controllers.cellpool.enabled=false'])
    t.same(rule(without), [...ruleFile('hooks'), ...ruleFile('instance')])
    t.same(kinds(without.filter((d) => d.kind === 'PodMonitor')), ['PodMonitor/gpuhooks'])
  })

  t.test('a runbook base adds runbook_url to every alert, anchored at its name, and nothing to recording rules', async (t) => {
    const all = docs([...ALL_ON, '--set', 'monitoring.prometheusRule.runbookBaseURL=https://docs.example/observability/'])
    const groups = (all.find((d) => d.kind === 'PrometheusRule')?.spec as { groups: Group[] }).groups
    const rules = groups.flatMap((g) => g.rules)
    t.ok(rules.some((r) => r.alert !== undefined))
    for (const r of rules) {
      if (r.alert !== undefined) t.equal(r.annotations?.['runbook_url'], `https://docs.example/observability#${r.alert.toLowerCase()}`)
      else t.equal(r.annotations, undefined, `${r.record ?? ''} has no annotations`)
    }
  })

  t.test('the dashboard ConfigMap holds the dashboard file and the sidecar label, in the namespace asked for', async (t) => {
    const dashboard = JSON.parse(readFileSync(join(MONITORING, 'dashboard.json'), 'utf8')) as unknown
    const [cm] = docs(ALL_ON).filter((d) => d.kind === 'ConfigMap' && d.metadata.name === 'gpuhooks-dashboard')
    t.equal(cm?.metadata.labels?.['grafana_dashboard'], '1')
    t.equal(cm?.metadata.namespace, 'gpuhooks-system')
    t.same(JSON.parse(cm?.data?.['gpuhooks.json'] ?? 'null'), dashboard)
    const [elsewhere] = docs([
      ...ALL_ON,
      '--set',
      'monitoring.dashboard.namespace=monitoring',
      '--set',
      'monitoring.dashboard.annotations.grafana_folder=gpuhooks'
    ]).filter((d) => d.kind === 'ConfigMap' && d.metadata.name === 'gpuhooks-dashboard')
    t.equal(elsewhere?.metadata.namespace, 'monitoring')
    t.same(elsewhere?.metadata.annotations, { grafana_folder: 'gpuhooks' })
  })

  t.test('helm lint passes with every monitoring part on', async (t) => {
    const result = spawnSync(helm, ['lint', CHART, ...ALL_ON], { encoding: 'utf8' })
    t.equal(result.status, 0, `${result.stdout}${result.stderr}`)
  })

  const promtool = findPromtool()
  t.test('promtool check rules accepts the rendered PrometheusRule', { skip: 'skip' in promtool ? promtool.skip : false }, async (t) => {
    if ('skip' in promtool) return
    const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-rules-'))
    t.teardown(() => rmSync(dir, { recursive: true, force: true }))
    const groups = (docs(ALL_ON).find((d) => d.kind === 'PrometheusRule')?.spec as { groups: Group[] }).groups
    const file = join(dir, 'rendered.rules.yaml')
    writeFileSync(file, stringify({ groups }))
    const result = spawnSync(promtool.path, ['check', 'rules', file], { encoding: 'utf8' })
    t.equal(result.status, 0, `${result.stdout}${result.stderr}`)
    const count = groups.reduce((n, g) => n + g.rules.length, 0)
    t.match(result.stdout, `SUCCESS: ${count} rules found`)
  })

  const instanceGroup = (args: string[]): Group | undefined =>
    (docs([...ALL_ON, ...args]).find((d) => d.kind === 'PrometheusRule')?.spec as { groups: Group[] }).groups.find(
      (g) => g.name === 'gpuhooks-instance-accelerators'
    )
  const DCGM = ['--set', 'monitoring.prometheusRule.instanceUtilization=dcgm']

  t.test('instanceUtilization=dcgm renders the compute rule from instance-dcgm.yaml and every other rule as it is', async (t) => {
    const dcgm = parse(readFileSync(join(MONITORING, 'instance-dcgm.yaml'), 'utf8')) as { record: string; expr: string }
    const [file] = ruleFile('instance')
    t.equal(dcgm.record, 'gpustack_instance_accelerator_cores_utilization_percent')
    t.ok(
      file?.rules.some((r) => r.record === dcgm.record),
      'the file has the rule replaced'
    )
    t.same(instanceGroup([]), file, 'hami, the default: the file as it is')
    t.same(instanceGroup(['--set', 'monitoring.prometheusRule.instanceUtilization=hami']), file)
    const rendered = instanceGroup(DCGM)
    t.same(rendered, { ...file, rules: file?.rules.map((r) => (r.record === dcgm.record ? { ...r, expr: dcgm.expr } : r)) })
    t.match(rendered?.rules.find((r) => r.record === dcgm.record)?.expr, /DCGM_FI_DEV_GPU_UTIL\{container="main"/)
  })

  t.test('an instanceUtilization other than hami or dcgm is refused with the value named', async (t) => {
    const result = spawnSync(
      helm,
      ['template', 'gpuhooks', CHART, ...ALL_ON, '--set', 'monitoring.prometheusRule.instanceUtilization=nvml'],
      {
        encoding: 'utf8'
      }
    )
    t.not(result.status, 0)
    t.match(result.stderr, 'monitoring.prometheusRule.instanceUtilization must be hami or dcgm, not "nvml"')
  })

  t.test(
    "promtool: the rendered dcgm Instance rules give each Instance its GPUs' utilization",
    { skip: 'skip' in promtool ? promtool.skip : false },
    async (t) => {
      if ('skip' in promtool) return
      const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-dcgm-'))
      t.teardown(() => rmSync(dir, { recursive: true, force: true }))
      copyFileSync(DCGM_CASES, join(dir, 'instance-dcgm.test.yaml'))
      const run = (args: string[]) => {
        writeFileSync(join(dir, 'instance-dcgm.rendered.rules.yaml'), stringify({ groups: [instanceGroup(args)] }))
        return spawnSync(promtool.path, ['test', 'rules', join(dir, 'instance-dcgm.test.yaml')], { encoding: 'utf8' })
      }
      const result = run(DCGM)
      t.equal(result.status, 0, `${result.stdout}${result.stderr}`)
      t.match(result.stdout, 'SUCCESS')
      // The same cases against the default rendering fail: they test the rule the value renders.
      t.not(run([]).status, 0)
    }
  )
}
