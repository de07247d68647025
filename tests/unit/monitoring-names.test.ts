/**
 * Every metric the alerts, the recording rules and the dashboard read exists: exported by the
 * hook service or the agent (their registries, as built), recorded by a rule, or one of the
 * inputs from other software listed in deploy/chart/monitoring-inputs.yaml. A renamed metric, in
 * the code or in a rule, fails here. The labels a rule or a panel matches on are the labels its
 * series carry, and the series that the promtool cases of tests/rules/ write are the metrics
 * that exist, labelled as the code exports them, so those cases test the series Prometheus will
 * scrape. Each input listed is used, and docs/observability.md names every metric of the three
 * sources.
 */
import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Registry } from 'prom-client'
import { parse } from 'yaml'
import { CHART, ROOT } from '../../deploy/chart/generate.ts'
import { createAgentMetrics } from '../../hooks/agent/runtime/metrics.ts'
import { createMetrics } from '../../hooks/server/metrics.ts'
import { metricNames } from '../support/promql-names.ts'

type Rule = { alert?: string; record?: string; expr: string }
type Case = { name: string; input_series?: { series: string }[] }
type Panel = { title?: string; targets?: { expr?: string }[]; panels?: Panel[] }

const MONITORING = join(CHART, 'files', 'monitoring')
const CASES = join(ROOT, 'tests', 'rules')
/**
 * Labels a scrape adds to what a process exports (the target's job, instance, and the Pod's
 * namespace, pod and container from a PodMonitor); a series the code exports with its own
 * `namespace` keeps that one (honorLabels).
 */
const TARGET_LABELS = ['job', 'instance', 'namespace', 'pod', 'container', 'endpoint', 'service']
/** Series Prometheus makes itself for each target. */
const SYNTHETIC = new Set(['up'])

/** The label names of each series a registry serves (a histogram's _bucket with `le`). */
function servedLabels(registry: Registry): Map<string, string[]> {
  const out = new Map<string, string[]>()
  for (const metric of registry.getMetricsAsArray()) {
    // prom-client keeps each metric's label names on the object; its types do not declare them.
    const { name, type } = metric as unknown as { name: string; type: string }
    const labels = (metric as unknown as { labelNames?: string[] }).labelNames ?? []
    if (String(type) === 'histogram') {
      out.set(`${name}_bucket`, [...labels, 'le'])
      out.set(`${name}_sum`, labels)
      out.set(`${name}_count`, labels)
    } else out.set(name, labels)
  }
  return out
}

/** Each selector of an expression: the metric it names and the label names it matches on. */
function selectors(expr: string): { name: string; labels: string[] }[] {
  const text = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""')
  return [...text.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^{}]*)\}/g)].flatMap(([, name, body]) =>
    name === undefined || body === undefined
      ? []
      : [{ name, labels: [...body.matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)/g)].map((m) => m[1] ?? '') }]
  )
}

/** Names a registry serves: a histogram as its _bucket, _sum and _count series. */
async function served(registry: Registry): Promise<string[]> {
  return (await registry.getMetricsAsJSON()).flatMap(({ name, type }) =>
    String(type) === 'histogram' ? [`${name}_bucket`, `${name}_sum`, `${name}_count`] : [name]
  )
}

const rules: Rule[] = readdirSync(MONITORING)
  .filter((f) => f.endsWith('.rules.yaml'))
  .sort()
  .flatMap((f) => (parse(readFileSync(join(MONITORING, f), 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules))
/** The compute rule's expression the chart renders with instanceUtilization=dcgm (records nothing new). */
const dcgmRule = parse(readFileSync(join(MONITORING, 'instance-dcgm.yaml'), 'utf8')) as Rule
const dashboard = JSON.parse(readFileSync(join(MONITORING, 'dashboard.json'), 'utf8')) as {
  panels: Panel[]
  templating: { list: { name: string; type: string; query?: { query: string } }[] }
}
const panels = (list: Panel[]): Panel[] => list.flatMap((p) => [p, ...panels(p.panels ?? [])])
const inputs = (
  parse(readFileSync(join(ROOT, 'deploy', 'chart', 'monitoring-inputs.yaml'), 'utf8')) as { inputs: { name: string; labels: string[] }[] }
).inputs
/** Every series a promtool case writes, with its case. */
const written: { where: string; name: string; labels: string[] }[] = [
  ...readdirSync(CASES)
    .filter((f) => f.endsWith('.test.yaml'))
    .sort(),
  'dcgm/instance-dcgm.test.yaml'
].flatMap((f) =>
  (parse(readFileSync(join(CASES, f), 'utf8')) as { tests: Case[] }).tests.flatMap((c) =>
    (c.input_series ?? []).map(({ series }) => {
      const [selector] = selectors(series.includes('{') ? series : `${series}{}`)
      return { where: `${f}: ${c.name}`, name: selector?.name ?? series, labels: selector?.labels ?? [] }
    })
  )
)

/** Every expression, with where it is. */
const expressions: { where: string; expr: string }[] = [
  ...rules.map((r) => ({ where: `rule ${r.alert ?? r.record ?? '?'}`, expr: r.expr })),
  { where: `rule ${dcgmRule.record ?? '?'} (instanceUtilization=dcgm)`, expr: dcgmRule.expr },
  ...panels(dashboard.panels).flatMap((p) => (p.targets ?? []).map((q) => ({ where: `panel ${p.title ?? '?'}`, expr: q.expr ?? '' }))),
  ...dashboard.templating.list.filter((v) => v.type === 'query').map((v) => ({ where: `variable ${v.name}`, expr: v.query?.query ?? '' }))
]

t.test('the name reader finds the series an expression reads and nothing else', async (t) => {
  t.same(
    metricNames(
      'sum by (namespace, hook) (increase(gpuhooks_hook_errors_total{tier="internal", x=~"a|b"}[15m])) / on (namespace) group_left (pod) up offset 5m > bool 0'
    ),
    ['gpuhooks_hook_errors_total', 'up']
  )
  t.same(metricNames('label_values(gpuhooks_cellpool_cells_desired{namespace=~"$pool_namespace"}, pool)'), [
    'gpuhooks_cellpool_cells_desired'
  ])
  t.same(metricNames('label_replace(max by (pod) (a:b:c), "id", "$1", "device_uuid", "(.+)") * 100 / 1e3 or vector(1) [5m:1m]'), ['a:b:c'])
  t.same(metricNames('histogram_quantile(0.99, sum by (le) (rate(x_bucket[$__rate_interval])))'), ['x_bucket'])
})

t.test('every rule and dashboard query reads only metrics that exist', async (t) => {
  const exported = new Set([...(await served(createMetrics().registry)), ...(await served(createAgentMetrics().registry))])
  const recorded = new Set(rules.flatMap((r) => (r.record === undefined ? [] : [r.record])))
  const external = new Set(inputs.map((i) => i.name))
  t.ok(expressions.length > 20, `${expressions.length} expressions read`)
  for (const { where, expr } of expressions) {
    t.not(expr, '', `${where} has an expression`)
    for (const name of metricNames(expr))
      t.ok(exported.has(name) || recorded.has(name) || external.has(name), `${where}: ${name} is exported, recorded or a listed input`)
  }
})

t.test('the selector reader finds each metric with the labels it matches on', async (t) => {
  t.same(selectors('sum by (a) (rate(x_total{tier="internal", b=~"{c}"}[5m])) / y{d!="e"} or z'), [
    { name: 'x_total', labels: ['tier', 'b'] },
    { name: 'y', labels: ['d'] }
  ])
})

t.test('every rule and panel matches only on labels its series carry', async (t) => {
  const labels = new Map([...servedLabels(createMetrics().registry), ...servedLabels(createAgentMetrics().registry)])
  for (const input of inputs) labels.set(input.name, input.labels)
  for (const { where, expr } of expressions) {
    for (const selector of selectors(expr)) {
      const carried = labels.get(selector.name)
      if (carried === undefined) continue // a recorded series: its labels are what promtool's cases expect
      for (const label of selector.labels)
        t.ok(carried.includes(label) || TARGET_LABELS.includes(label), `${where}: ${selector.name} carries ${label}`)
    }
  }
})

t.test("the promtool cases write only series that exist, gpuhooks' own with exactly the labels exported", async (t) => {
  const labels = new Map([...servedLabels(createMetrics().registry), ...servedLabels(createAgentMetrics().registry)])
  const external = new Set(inputs.map((i) => i.name))
  t.ok(written.length > 50, `${written.length} series written`)
  for (const { where, name, labels: has } of written) {
    const exported = labels.get(name)
    t.ok(exported !== undefined || external.has(name) || SYNTHETIC.has(name), `${where}: ${name} is exported or a listed input`)
    if (exported === undefined) continue
    for (const label of exported) t.ok(has.includes(label), `${where}: ${name} has its label ${label}`)
    for (const label of has)
      t.ok(exported.includes(label) || TARGET_LABELS.includes(label), `${where}: ${name}'s label ${label} is exported or a target's`)
  }
})

t.test('every listed input is read by a rule or the dashboard', async (t) => {
  const read = new Set(expressions.flatMap(({ expr }) => metricNames(expr)))
  for (const { name } of inputs) t.ok(read.has(name), `${name} is read`)
})

t.test('the dashboard reads each family the agent and the hook service export for pools and hooks', async (t) => {
  const read = new Set(expressions.filter((e) => e.where.startsWith('panel')).flatMap(({ expr }) => metricNames(expr)))
  const families = (await createAgentMetrics().registry.getMetricsAsJSON()).map((m) => m.name)
  for (const name of families.filter((n) => n.startsWith('gpuhooks_cellpool_'))) t.ok(read.has(name), `a panel shows ${name}`)
  for (const name of ['gpuhooks_hook_requests_total', 'gpuhooks_hook_errors_total', 'gpuhooks_hook_duration_seconds_bucket'])
    t.ok(read.has(name), `a panel shows ${name}`)
})

t.test('docs/observability.md names every metric exported, recorded or read', async (t) => {
  const path = join(ROOT, 'docs/observability.md')
  t.ok(existsSync(path), 'docs/observability.md exists')
  const text = existsSync(path) ? readFileSync(path, 'utf8') : ''
  const families = [
    ...(await createMetrics().registry.getMetricsAsJSON()).map((m) => m.name),
    ...(await createAgentMetrics().registry.getMetricsAsJSON()).map((m) => m.name),
    ...rules.flatMap((r) => (r.record === undefined ? [] : [r.record])),
    ...inputs.map((i) => i.name)
  ]
  for (const name of families) t.ok(text.includes(`\`${name}`), `${name} is in the docs`)
  for (const r of rules.filter((r) => r.alert !== undefined)) t.ok(text.includes(`### ${r.alert ?? ''}`), `${r.alert ?? ''} has a runbook`)
})
