/**
 * Only what is used is installed, on a real API server (no kubelet, no Metacontroller: its CRDs
 * are stood in by tests/cluster/fixtures/metacontroller-crds.yaml):
 *
 * - `helm install` with default values on a cluster without KubeSwift's CRDs: no cell pool
 *   controller, CRD, webhook or agent, and every type each installed controller names is served,
 *   which is what Metacontroller asks before it starts a controller ("can't find child resource");
 * - `helm upgrade` with `agent.activity.enabled=true`, still without them: the agent for Instances
 *   alone (`CELL_POOLS=false`, the Instance rights and its policy, no Secret access);
 * - KubeSwift's CRDs installed and `helm upgrade`: the cell pool controller and its agent come,
 *   every type still served;
 * - the plain manifest `deploy/gpuhooks.yaml` applied: the same as the default install;
 * - `kubectl apply -f metacontroller/` and `-f metacontroller/clusterapi/`: every file is an object
 *   the API server takes (the child types of Cluster API cells are no longer a file of their own,
 *   which kubectl refused: "apiVersion not set, kind not set").
 */
import t from 'tap'
import { join } from 'node:path'
import { CHART, PLAIN_MANIFEST } from '../../deploy/chart/generate.ts'
import { helmRunner } from './support/helm.ts'
import { startCluster } from './support/cluster.ts'
import { KUBESWIFT_CRDS, installCrds } from './support/env.ts'

const ROOT = join(import.meta.dirname, '..', '..')
const NS = 'gpuhooks-system'
const cluster = await startCluster()
t.teardown(() => cluster.stop())
const helmRun = helmRunner(cluster.kubeconfig)

await installCrds(cluster, [join(ROOT, 'tests', 'cluster', 'fixtures', 'metacontroller-crds.yaml')])

async function names(args: string[]): Promise<string[]> {
  const { stdout } = await cluster.kubectl(['get', ...args, '-o', 'name'])
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .sort()
}

type Rule = { apiVersion: string; resource: string }
type Controller = {
  metadata: { name: string }
  spec: { parentResource?: Rule; childResources?: Rule[]; resources?: Rule[]; attachments?: Rule[] }
}

/** The Metacontroller controllers in the cluster, by name. */
async function controllers(): Promise<Controller[]> {
  const items: Controller[] = []
  for (const kind of ['compositecontrollers', 'decoratorcontrollers']) {
    const { stdout } = await cluster.kubectl(['get', kind, '-o', 'json'])
    items.push(...(JSON.parse(stdout) as { items: Controller[] }).items)
  }
  return items.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
}

/** Every `apiVersion resource` the API server serves (discovery, as Metacontroller reads it). */
async function served(): Promise<Set<string>> {
  const { stdout } = await cluster.kubectl(['api-resources', '--no-headers', '-o', 'wide'])
  const result = new Set<string>()
  for (const line of stdout.split('\n').filter((l) => l.trim() !== '')) {
    // NAME SHORTNAMES APIVERSION NAMESPACED KIND VERBS CATEGORIES: the shortnames column may be blank.
    const cells = line.trim().split(/\s+/)
    const version = cells.find((c) => /^([a-z0-9.-]+\/)?v\d/.test(c))
    if (version !== undefined && cells[0] !== undefined) result.add(`${version} ${cells[0]}`)
  }
  return result
}

/** The types an installed controller names that the API server does not serve (Metacontroller's complaint). */
async function unserved(): Promise<string[]> {
  const have = await served()
  return (await controllers()).flatMap((c) =>
    [c.spec.parentResource, ...(c.spec.resources ?? []), ...(c.spec.childResources ?? []), ...(c.spec.attachments ?? [])]
      .filter((r): r is Rule => r !== undefined && !have.has(`${r.apiVersion} ${r.resource}`))
      .map((r) => `${c.metadata.name}: ${r.apiVersion} ${r.resource}`)
  )
}

const cellPoolParts = async (): Promise<string[]> => [
  ...(await names(['compositecontrollers'])).filter((n) => n.includes('cellpool')),
  ...(await names(['deployments', '-n', NS])).filter((n) => n.includes('agent')),
  ...(await names(['crd'])).filter((n) => n.endsWith('.cells.kubeswift.io')),
  ...(await names(['validatingwebhookconfigurations'])).filter((n) => n.includes('cellpool'))
]

t.test('helm install without KubeSwift: no cell pool controller, no agent; every named type served', async (t) => {
  await helmRun(['install', 'gpuhooks', CHART, '--namespace', NS, '--create-namespace'])
  t.same(
    (await controllers()).map((c) => c.metadata.name),
    ['gpuhooks-instance', 'gpuhooks-instance-isolation']
  )
  t.same(await cellPoolParts(), [], 'no cell pool controller, CRD, webhook or agent')
  t.same(await names(['deployments', '-n', NS]), ['deployment.apps/gpuhooks'])
  t.same(await unserved(), [], 'Metacontroller finds every type it is asked to watch')

  await t.test(
    'agent.activity.enabled, still without KubeSwift: the agent for Instances alone, its policy, no cell pool part',
    async (t) => {
      await helmRun(['upgrade', 'gpuhooks', CHART, '--namespace', NS, '--set', 'agent.activity.enabled=true'])
      t.same(await names(['deployments', '-n', NS]), ['deployment.apps/gpuhooks', 'deployment.apps/gpuhooks-agent'])
      t.same(
        (await cellPoolParts()).filter((n) => !n.startsWith('deployment.apps/')),
        [],
        'no cell pool controller, CRD or webhook'
      )
      t.same(
        (await names(['validatingadmissionpolicies'])).filter((n) => n.includes('agent')),
        ['validatingadmissionpolicy.admissionregistration.k8s.io/gpuhooks-agent-instance-stop']
      )
      const { stdout } = await cluster.kubectl(['get', 'deployment', 'gpuhooks-agent', '-n', NS, '-o', 'json'])
      const env = (
        JSON.parse(stdout) as { spec: { template: { spec: { containers: Array<{ env: Array<{ name: string; value?: string }> }> } } } }
      ).spec.template.spec.containers[0]?.env
      t.match(env, [{ name: 'PORT' }, { name: 'LOG_LEVEL' }, { name: 'CELL_POOLS', value: 'false' }])
      const can = async (verb: string, what: string): Promise<string> =>
        (
          await cluster.kubectl(['auth', 'can-i', verb, what, `--as=system:serviceaccount:${NS}:gpuhooks-agent`], { allowFail: true })
        ).stdout.trim()
      t.equal(await can('patch', 'instances.worker.gpustack.ai'), 'yes', 'the stop')
      t.equal(await can('get', 'secrets'), 'no', 'no kubeconfig Secrets')
      t.same(await unserved(), [], 'Metacontroller finds every type it is asked to watch')
    }
  )

  await t.test('KubeSwift installed, helm upgrade: the cell pool controller and its agent come', async (t) => {
    await installCrds(cluster, [KUBESWIFT_CRDS])
    await helmRun(['upgrade', 'gpuhooks', CHART, '--namespace', NS])
    t.same(
      (await controllers()).map((c) => c.metadata.name),
      ['gpuhooks-cellpool', 'gpuhooks-instance', 'gpuhooks-instance-isolation']
    )
    t.same(await cellPoolParts(), [
      'compositecontroller.metacontroller.k8s.io/gpuhooks-cellpool',
      'deployment.apps/gpuhooks-agent',
      'customresourcedefinition.apiextensions.k8s.io/cellinfrastructures.cells.kubeswift.io',
      'customresourcedefinition.apiextensions.k8s.io/cellnodesets.cells.kubeswift.io',
      'customresourcedefinition.apiextensions.k8s.io/gpucellpools.cells.kubeswift.io',
      'validatingwebhookconfiguration.admissionregistration.k8s.io/gpuhooks-cellpool'
    ])
    const cellpool = (await controllers()).find((c) => c.metadata.name === 'gpuhooks-cellpool')
    t.notOk(
      cellpool?.spec.childResources?.some((r) => r.resource === 'machines'),
      'no Cluster API Machines: the cluster does not serve them'
    )
    t.same(await unserved(), [], 'Metacontroller finds every type it is asked to watch')
    await helmRun(['uninstall', 'gpuhooks', '--namespace', NS])
  })
})

t.test('the plain manifest deploy/gpuhooks.yaml: Instances and isolation only', async (t) => {
  await cluster.kubectl(['apply', '-f', PLAIN_MANIFEST])
  t.same(
    (await controllers()).map((c) => c.metadata.name),
    ['gpuhooks-instance', 'gpuhooks-instance-isolation']
  )
  t.same(await names(['deployments', '-n', NS]), ['deployment.apps/gpuhooks'])
  t.same(await unserved(), [])
})

t.test('kubectl apply -f metacontroller/ takes every file; the Cluster API variant replaces the cell pool controller', async (t) => {
  const applied = await cluster.kubectl(['apply', '-f', join(ROOT, 'metacontroller')], { allowFail: true })
  t.equal(applied.code, 0, applied.stderr)
  t.same(
    (await controllers()).map((c) => c.metadata.name),
    ['gpuhooks-cellpool', 'gpuhooks-instance', 'gpuhooks-instance-isolation']
  )
  t.same(await unserved(), [], 'KubeSwift is served here: the cell pool controller can start')
  const variant = await cluster.kubectl(['apply', '-f', join(ROOT, 'metacontroller', 'clusterapi')], { allowFail: true })
  t.equal(variant.code, 0, variant.stderr)
  const cellpool = (await controllers()).find((c) => c.metadata.name === 'gpuhooks-cellpool')
  t.same(cellpool?.spec.childResources?.map((r) => `${r.apiVersion} ${r.resource}`).slice(-1), ['cluster.x-k8s.io/v1beta2 machines'])
  t.same(await unserved(), ['gpuhooks-cellpool: cluster.x-k8s.io/v1beta2 machines'], 'which only a cluster serving Cluster API can start')
})
