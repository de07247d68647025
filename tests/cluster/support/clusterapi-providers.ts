/**
 * Stand-ins for the Cluster API providers that cannot be built here, written from Cluster API's
 * v1beta2 provider contracts (docs/book/src/developer/providers/contracts in the cluster-api
 * module, and internal/contract, which is where the core controllers read each field):
 *
 * - **KubeSwiftMachine** (`infrastructure.cluster.x-k8s.io/v1alpha1`, the InfraMachine of
 *   KubeSwift's provider): once a Machine owns it, the Cluster's infrastructure is provisioned and
 *   the Machine has `spec.bootstrap.dataSecretName`, it "boots the VM": `spec.providerID
 *   kubeswift://<namespace>/<name>`, `status.initialization.provisioned: true`; then the VM's
 *   kubelet registers a Node of the same name in the workload cluster, with the labels its
 *   bootstrap data gives `--node-labels`, renews its Lease, and the provider writes the Node's
 *   `spec.providerID`, as KubeSwift's provider does. Deleting it stops the VM: the kubelet stops
 *   renewing, and the provider's finalizer goes. A scenario can {@link StandInProviders.hold} the
 *   VMs of a name: the provider takes their KubeSwiftMachines (its finalizer) but boots nothing,
 *   as when no host has a free GPU, until it lets them go.
 * - **KubeSwiftCluster**, the InfraCluster, and **ExternalControlPlane**, the control plane of
 *   the workload cluster (its second API server, which nothing in Cluster API manages): their
 *   status is written once, provisioned and initialized, by the scenario.
 * - **KubeadmConfig** (the kubeadm bootstrap provider's kind, with its `...Template`, the one
 *   group and kinds a pool may name; only the fields below are served): once a
 *   Machine owns it and the control plane is initialized, its `spec.userData` becomes the data
 *   Secret `<name>` (key `value`), `status.dataSecretName` and
 *   `status.initialization.dataSecretCreated: true`.
 *
 * Each CRD carries the contract label `cluster.x-k8s.io/v1beta2: <version>`, from which Cluster
 * API resolves the version of a `{apiGroup, kind, name}` reference. The providers poll; every
 * write is a merge patch, so nothing here races Cluster API's own patches.
 */
import type { JsonObject } from '../../support/merge.ts'
import { Kubelets, nodeRef } from './agent.ts'
import { isReason, resourcePath, type KubeClient, type ResourceRef } from './kube.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

export const INFRA_GROUP = 'infrastructure.cluster.x-k8s.io'
export const INFRA_VERSION = 'v1alpha1'
/** Cluster API's bootstrap group: the only one a pool may name (hooks/api/cellinfrastructure.ts). */
export const BOOTSTRAP_GROUP = 'bootstrap.cluster.x-k8s.io'
export const CONTROL_PLANE_GROUP = 'controlplane.test.gpuhooks.io'
/** The providerID scheme of KubeSwift's provider. */
export const PROVIDER_ID_SCHEME = 'kubeswift'
/** The finalizer KubeSwift's provider puts on a KubeSwiftMachine. */
export const MACHINE_FINALIZER = 'kubeswiftmachine.infrastructure.cluster.x-k8s.io/finalizer'
/** On a KubeSwiftMachine: the VM boots, but its kubelet never registers a Node (a join that fails). */
export const NO_KUBELET_ANNOTATION = 'stand-in.gpuhooks.test/no-kubelet'

/** One stand-in kind: where it lives and how it is named. */
export interface StandInKind {
  group: string
  version: string
  kind: string
  plural: string
}

export const KINDS = {
  machine: { group: INFRA_GROUP, version: INFRA_VERSION, kind: 'KubeSwiftMachine', plural: 'kubeswiftmachines' },
  infraCluster: { group: INFRA_GROUP, version: INFRA_VERSION, kind: 'KubeSwiftCluster', plural: 'kubeswiftclusters' },
  bootstrapConfig: { group: BOOTSTRAP_GROUP, version: 'v1beta2', kind: 'KubeadmConfig', plural: 'kubeadmconfigs' },
  bootstrapTemplate: { group: BOOTSTRAP_GROUP, version: 'v1beta2', kind: 'KubeadmConfigTemplate', plural: 'kubeadmconfigtemplates' },
  controlPlane: { group: CONTROL_PLANE_GROUP, version: 'v1beta2', kind: 'ExternalControlPlane', plural: 'externalcontrolplanes' }
} as const satisfies Record<string, StandInKind>

/** A reference to an object of a stand-in kind. */
export function standInRef(kind: StandInKind, namespace: string, name?: string): ResourceRef {
  return { apiVersion: `${kind.group}/${kind.version}`, resource: kind.plural, namespace, ...(name === undefined ? {} : { name }) }
}

/** A Cluster API `ContractVersionedObjectReference` to an object of a stand-in kind. */
export function contractRef(kind: StandInKind, name: string): JsonObject {
  return { apiGroup: kind.group, kind: kind.kind, name }
}

/** The CRD of a stand-in kind: namespaced, open schema, status subresource, and the contract label. */
export function standInCrd(kind: StandInKind): JsonObject {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${kind.plural}.${kind.group}`, labels: { 'cluster.x-k8s.io/v1beta2': kind.version } },
    spec: {
      group: kind.group,
      scope: 'Namespaced',
      names: { plural: kind.plural, singular: kind.kind.toLowerCase(), kind: kind.kind, listKind: `${kind.kind}List` },
      versions: [
        {
          name: kind.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } }
        }
      ]
    }
  }
}

/** The Machine that owns `obj` (a Machine owner reference, controller or not), as providers find it. */
function owningMachine(obj: Loose): string | undefined {
  const refs: Loose[] = Array.isArray(obj.metadata?.ownerReferences) ? obj.metadata.ownerReferences : []
  return refs.find((ref) => ref.kind === 'Machine' && String(ref.apiVersion).startsWith('cluster.x-k8s.io/'))?.name
}

/** The `k=v` pairs a kubelet would get from `--node-labels=...` in its bootstrap data. */
export function registrationLabels(bootstrapData: string): Record<string, string> {
  const flag = /--node-labels[= ]"?([^\s"]+)/.exec(bootstrapData)
  const labels: Record<string, string> = {}
  for (const pair of flag?.[1]?.split(',') ?? []) {
    const at = pair.indexOf('=')
    if (at > 0) labels[pair.slice(0, at)] = pair.slice(at + 1)
  }
  return labels
}

const clusterRef = (namespace: string, name: string): ResourceRef => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  resource: 'clusters',
  namespace,
  name
})
const machineRef = (namespace: string, name: string): ResourceRef => ({
  apiVersion: 'cluster.x-k8s.io/v1beta2',
  resource: 'machines',
  namespace,
  name
})
const secretRef = (namespace: string, name: string): ResourceRef => ({ apiVersion: 'v1', resource: 'secrets', namespace, name })

/**
 * The KubeSwiftMachine and KubeadmConfig providers of one namespace, as a poll loop (every
 * 300 ms) against the infrastructure cluster, with the VMs' kubelets played in the workload
 * cluster. `problems` keeps each object's last reconcile error, for a failing scenario to show.
 */
export class StandInProviders {
  readonly problems = new Map<string, string>()
  private readonly kubelets: Kubelets
  /** The Nodes whose providerID this provider wrote (once per boot). */
  private readonly nodesWithProviderID = new Set<string>()
  /** The names whose VMs do not boot for now. */
  private readonly held = new Set<string>()
  private running = false
  private loop: Promise<void> | undefined

  constructor(
    private readonly kube: KubeClient,
    private readonly workload: KubeClient,
    private readonly namespace: string
  ) {
    this.kubelets = new Kubelets(workload)
  }

  /** Starts the loop. */
  start(): void {
    this.running = true
    this.loop = (async () => {
      while (this.running) {
        await this.pass()
        await new Promise((resolve) => setTimeout(resolve, 300))
      }
    })()
  }

  /** Ends the loop after its current pass and stops every kubelet. */
  async stop(): Promise<void> {
    this.running = false
    await this.loop
    this.kubelets.stopAll()
  }

  /**
   * The VMs named `name` do not boot (no host has a GPU free for them, say): a KubeSwiftMachine
   * of that name, this one and any made later under the same name, gets the provider's finalizer
   * and nothing more, so its Machine stays unprovisioned; deleting it works as ever.
   */
  hold(name: string): void {
    this.held.add(name)
  }

  /** The VMs named `name` boot again. */
  letGo(name: string): void {
    this.held.delete(name)
  }

  /** The VMs whose kubelets are running (renewing their Lease). */
  kubeletsRunning(): string[] {
    return this.kubelets.renewing()
  }

  private async pass(): Promise<void> {
    const reconcileAll = async (kind: StandInKind, reconcile: (obj: Loose) => Promise<void>): Promise<void> => {
      let items: Loose[]
      try {
        items = (await this.kube.list(standInRef(kind, this.namespace))).body
      } catch (error) {
        this.problems.set(kind.kind, (error as Error).message)
        return
      }
      for (const obj of items) {
        const key = `${kind.kind}/${String(obj.metadata.name)}`
        try {
          await reconcile(obj)
          this.problems.delete(key)
        } catch (error) {
          this.problems.set(key, (error as Error).message)
        }
      }
    }
    await reconcileAll(KINDS.bootstrapConfig, (obj) => this.reconcileBootstrapConfig(obj))
    await reconcileAll(KINDS.machine, (obj) => this.reconcileMachine(obj))
  }

  private async patchStatus(kind: StandInKind, name: string, status: JsonObject): Promise<void> {
    const path = resourcePath(standInRef(kind, this.namespace, name), 'status')
    await this.kube.request('PATCH', path, { status }, 'application/merge-patch+json')
  }

  /** The contract's bootstrap workflow: Machine owner, Cluster, data Secret, status. */
  private async reconcileBootstrapConfig(config: Loose): Promise<void> {
    const name = String(config.metadata.name)
    if (config.metadata.deletionTimestamp !== undefined || owningMachine(config) === undefined) return
    if (config.status?.initialization?.dataSecretCreated === true) return
    const clusterName = config.metadata.labels?.['cluster.x-k8s.io/cluster-name']
    if (clusterName === undefined) return
    const cluster: Loose = (await this.kube.get(clusterRef(this.namespace, clusterName))).body
    // A worker's join data needs an initialized control plane (the contract's typical workflow).
    if (cluster.status?.initialization?.controlPlaneInitialized !== true) return
    try {
      await this.kube.create(secretRef(this.namespace, name), {
        apiVersion: 'v1',
        kind: 'Secret',
        type: 'cluster.x-k8s.io/secret',
        metadata: {
          name,
          namespace: this.namespace,
          labels: { 'cluster.x-k8s.io/cluster-name': clusterName },
          ownerReferences: [
            {
              apiVersion: `${KINDS.bootstrapConfig.group}/${KINDS.bootstrapConfig.version}`,
              kind: KINDS.bootstrapConfig.kind,
              name,
              uid: config.metadata.uid,
              controller: true
            }
          ]
        },
        data: {
          value: Buffer.from(String(config.spec?.userData ?? '')).toString('base64'),
          format: Buffer.from('cloud-config').toString('base64')
        }
      })
    } catch (error) {
      if (!isReason(error, 'AlreadyExists')) throw error
    }
    await this.patchStatus(KINDS.bootstrapConfig, name, { dataSecretName: name, initialization: { dataSecretCreated: true } })
  }

  /** The contract's InfraMachine workflow, then the VM's kubelet. */
  private async reconcileMachine(ksm: Loose): Promise<void> {
    const name = String(ksm.metadata.name)
    const finalizers: string[] = ksm.metadata.finalizers ?? []
    if (ksm.metadata.deletionTimestamp !== undefined) {
      // The VM stops: its kubelet no longer renews the Lease; then the finalizer goes.
      this.kubelets.stop(name)
      this.nodesWithProviderID.delete(name)
      if (finalizers.includes(MACHINE_FINALIZER)) {
        const rest = finalizers.filter((f) => f !== MACHINE_FINALIZER)
        await this.kube.patch(
          standInRef(KINDS.machine, this.namespace, name),
          { metadata: { resourceVersion: ksm.metadata.resourceVersion, finalizers: rest } },
          'merge'
        )
      }
      return
    }
    const machineName = owningMachine(ksm)
    if (machineName === undefined) return
    if (!finalizers.includes(MACHINE_FINALIZER)) {
      const withOurs = [...finalizers, MACHINE_FINALIZER]
      await this.kube.patch(
        standInRef(KINDS.machine, this.namespace, name),
        { metadata: { resourceVersion: ksm.metadata.resourceVersion, finalizers: withOurs } },
        'merge'
      )
      return
    }
    if (this.held.has(name)) return
    const machine: Loose = (await this.kube.get(machineRef(this.namespace, machineName))).body
    const cluster: Loose = (await this.kube.get(clusterRef(this.namespace, String(machine.spec.clusterName)))).body
    if (cluster.status?.initialization?.infrastructureProvisioned !== true) return
    const dataSecretName = machine.spec?.bootstrap?.dataSecretName
    if (typeof dataSecretName !== 'string') return
    const secret: Loose = (await this.kube.get(secretRef(this.namespace, dataSecretName))).body
    const bootstrapData = Buffer.from(String(secret.data?.value ?? ''), 'base64').toString('utf8')

    const providerID = `${PROVIDER_ID_SCHEME}://${this.namespace}/${name}`
    if (ksm.spec?.providerID !== providerID) {
      await this.kube.patch(standInRef(KINDS.machine, this.namespace, name), { spec: { providerID } }, 'merge')
    }
    if (ksm.status?.initialization?.provisioned !== true) {
      await this.patchStatus(KINDS.machine, name, { initialization: { provisioned: true } })
    }
    if (ksm.metadata.annotations?.[NO_KUBELET_ANNOTATION] !== undefined) return
    // The kubelet registers its Node under the VM's hostname, the Machine name; the provider then
    // writes the Node's providerID, by which Cluster API finds it.
    if (!this.kubelets.renewing().includes(name)) await this.kubelets.join(name, registrationLabels(bootstrapData))
    if (!this.nodesWithProviderID.has(name)) {
      await this.workload.patch(nodeRef(name), { spec: { providerID } }, 'merge')
      this.nodesWithProviderID.add(name)
    }
  }
}
