/**
 * Every metric the alerts, the recording rules and the dashboard read exists: exported by the
 * hook service or the agent (their registries, as built), recorded by a rule, or one of the
 * inputs from other software listed in deploy/chart/monitoring-inputs.yaml. A renamed metric, in
 * the code or in a rule, fails here. Each input listed is used, and docs/observability.md names
 * every metric of the three sources.
 */
import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Registry } from 'prom-client'
import { parse } from 'yaml'
import { CHART, ROOT } from '../../deploy/chart/generate.ts'
import { createAgentMetrics } from '../../hooks/agent/metrics.ts'
import { createMetrics } from '../../hooks/server/metrics.ts'
import { metricNames } from '../support/promql-names.ts'

type Rule = { alert?: string; record?: string; expr: string }
type Panel = { title?: string; targets?: { expr?: string }[]; panels?: Panel[] }

const MONITORING = join(CHART, 'files', 'monitoring')

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
const dashboard = JSON.parse(readFileSync(join(MONITORING, 'dashboard.json'), 'utf8')) as {
  panels: Panel[]
  templating: { list: { name: string; type: string; query?: { query: string } }[] }
}
const panels = (list: Panel[]): Panel[] => list.flatMap((p) => [p, ...panels(p.panels ?? [])])
const inputs = (parse(readFileSync(join(ROOT, 'deploy', 'chart', 'monitoring-inputs.yaml'), 'utf8')) as { inputs: { name: string }[] })
  .inputs

/** Every expression, with where it is. */
const expressions: { where: string; expr: string }[] = [
  ...rules.map((r) => ({ where: `rule ${r.alert ?? r.record ?? '?'}`, expr: r.expr })),
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
  const path = join(ROOT, 'docs', 'observability.md')
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
