import t from 'tap'
import { clusterApiProblems, usesBootstrapTemplate } from '../../hooks/cellpool/rules/clusterapi-rules.ts'
import { CELL_FIELDS } from '../../hooks/cellpool/rules/cell-rules.ts'
import { poolProblems } from '../../hooks/cellpool/rules/validate.ts'
import { poolSpec } from './fixtures/cellpool.ts'
import { configKindOf, resolveClusterApi, usesClusterApi } from '../../hooks/cellpool/request/resolve.ts'

const TEMPLATE = { apiGroup: 'bootstrap.cluster.x-k8s.io', kind: 'KubeadmConfigTemplate', name: 'gpu-join' }

/** The fixture's valid spec as a Cluster API pool; `template`: with a bootstrap config template (and no join Secret). */
function capiSpec(template = false): any {
  const spec: any = poolSpec()
  spec.cell.provisioner = 'ClusterAPI'
  spec.cell.clusterAPI = {
    clusterName: 'gpu-cluster',
    version: 'v1.33.3',
    ...(template ? { bootstrapConfigTemplateRef: { ...TEMPLATE } } : {})
  }
  if (template) delete spec.bootstrap
  return spec
}

t.test('a Cluster API pool, with or without a template, has no problem', async (t) => {
  t.same(poolProblems('cells', capiSpec(false)), [])
  t.same(poolProblems('cells', capiSpec(true)), [])
})

t.test('a SwiftGuest pool is not checked by these rules', async (t) => {
  const spec: any = poolSpec()
  spec.cell.guestTemplate.dataDiskRef = { name: 'scratch' }
  t.same(clusterApiProblems(spec, CELL_FIELDS), [])
  t.notOk(usesClusterApi(spec))
  t.notOk(usesBootstrapTemplate(spec))
})

t.test('every rule at once, each naming its field', async (t) => {
  const spec = capiSpec(true)
  spec.bootstrap = { joinSecretRef: { name: 'join' } }
  spec.cell.clusterAPI.clusterName = 'GPU_Cluster'
  spec.cell.clusterAPI.bootstrapConfigTemplateRef = { apiGroup: 'Bootstrap', kind: 'Template', name: 'a/b' }
  spec.cell.guestTemplate.network = { podNetwork: true }
  spec.cell.guestTemplate.storage = { storageClassName: 'fast' }
  spec.cell.guestTemplate.kernelRef = { name: 'k' } // refused by the SwiftGuest check, with its own reason
  t.same(clusterApiProblems(spec, CELL_FIELDS), [
    {
      field: 'spec.cell.clusterAPI.clusterName',
      message: 'spec.cell.clusterAPI.clusterName "GPU_Cluster" is not a Cluster name (a DNS label of at most 63 characters)'
    },
    {
      field: 'spec.cell.clusterAPI.bootstrapConfigTemplateRef.apiGroup',
      message: 'spec.cell.clusterAPI.bootstrapConfigTemplateRef.apiGroup "Bootstrap" is not an API group (a DNS subdomain)'
    },
    {
      field: 'spec.cell.clusterAPI.bootstrapConfigTemplateRef.kind',
      message:
        'spec.cell.clusterAPI.bootstrapConfigTemplateRef.kind "Template" must end in Template: each Machine gets a config of the kind without it, copied from the template'
    },
    {
      field: 'spec.cell.clusterAPI.bootstrapConfigTemplateRef.name',
      message: 'spec.cell.clusterAPI.bootstrapConfigTemplateRef.name "a/b" is not an object name (a DNS subdomain)'
    },
    {
      field: 'spec.cell.guestTemplate.network',
      message:
        'spec.cell.guestTemplate.network is forbidden with provisioner ClusterAPI: a KubeSwiftMachine takes only imageRef, guestClassRef and interfaces of a guest'
    },
    {
      field: 'spec.cell.guestTemplate.storage',
      message:
        'spec.cell.guestTemplate.storage is forbidden with provisioner ClusterAPI: a KubeSwiftMachine takes only imageRef, guestClassRef and interfaces of a guest'
    },
    {
      field: 'spec.bootstrap.joinSecretRef',
      message:
        'spec.bootstrap.joinSecretRef must not be set with spec.cell.clusterAPI.bootstrapConfigTemplateRef: the bootstrap config made from the template gives each Machine its bootstrap data, so the join template would be unused'
    }
  ])
  const all = poolProblems('cells', spec).map((p) => p.field)
  t.equal(all.filter((f) => f === 'spec.cell.guestTemplate.kernelRef').length, 1, 'a field both checks refuse is named once')
})

t.test('a guestTemplate field set to null counts as unset', async (t) => {
  const spec = capiSpec()
  spec.cell.guestTemplate.network = null
  t.same(clusterApiProblems(spec, CELL_FIELDS), [])
})

t.test('a kind that is a kind but not a template kind', async (t) => {
  const spec = capiSpec(true)
  spec.cell.clusterAPI.bootstrapConfigTemplateRef.kind = 'kubeadmConfigTemplate'
  t.match(clusterApiProblems(spec, CELL_FIELDS), [
    { field: 'spec.cell.clusterAPI.bootstrapConfigTemplateRef.kind', message: /is not a kind/ }
  ])
})

t.test('the bootstrap template group and kind are allowlisted: the agent creates the config with its own rights', async (t) => {
  const refused = (apiGroup: string, kind: string) => {
    const spec = capiSpec(true)
    spec.cell.clusterAPI.bootstrapConfigTemplateRef = { apiGroup, kind, name: 'join' }
    return poolProblems('cells', spec)
  }
  t.same(refused('rbac.authorization.k8s.io', 'KubeadmConfigTemplate'), [
    {
      field: 'spec.cell.clusterAPI.bootstrapConfigTemplateRef.apiGroup',
      message:
        'spec.cell.clusterAPI.bootstrapConfigTemplateRef.apiGroup "rbac.authorization.k8s.io" is not allowed: the workload agent creates bootstrap configs of bootstrap.cluster.x-k8s.io only'
    }
  ])
  t.same(refused('bootstrap.cluster.x-k8s.io', 'SecretTemplate'), [
    {
      field: 'spec.cell.clusterAPI.bootstrapConfigTemplateRef.kind',
      message:
        'spec.cell.clusterAPI.bootstrapConfigTemplateRef.kind "SecretTemplate" is not allowed: the workload agent creates configs of KubeadmConfigTemplate, RKE2ConfigTemplate, KThreesConfigTemplate only'
    }
  ])
  for (const kind of ['KubeadmConfigTemplate', 'RKE2ConfigTemplate', 'KThreesConfigTemplate'])
    t.same(refused('bootstrap.cluster.x-k8s.io', kind), [], `${kind} is allowed`)
})

t.test('the settings resolved', async (t) => {
  t.same(resolveClusterApi(capiSpec(true)), { clusterName: 'gpu-cluster', version: 'v1.33.3', bootstrapTemplate: TEMPLATE })
  const bare = capiSpec()
  delete bare.cell.clusterAPI.version
  t.same(resolveClusterApi(bare), { clusterName: 'gpu-cluster', version: '' })
  t.equal(resolveClusterApi(poolSpec()), undefined)
  t.ok(usesBootstrapTemplate(capiSpec(true)))
  t.notOk(usesBootstrapTemplate(capiSpec(false)))
})

t.test('the config kind of a template kind', async (t) => {
  t.equal(configKindOf('KubeadmConfigTemplate'), 'KubeadmConfig')
  t.equal(configKindOf('CloudInitConfigTemplate'), 'CloudInitConfig')
})
