/**
 * CellInfrastructure (`cells.kubeswift.io/v1alpha1`, namespaced): the objects a Cluster API cell
 * pool needs beside its Machines, which Metacontroller cannot create for it (docs/cellpool.md,
 * "Cluster API cells").
 *
 * Cluster API's Machine controller makes itself the controller owner of a Machine's
 * InfraMachine and BootstrapConfig, and refuses one that has another controller ("already owned
 * by another ... controller"); Metacontroller gives every child it creates a controller reference.
 * So the pool answers its Machines as children, and, in one child per pool named after it, what
 * each Machine's KubeSwiftMachine and bootstrap config must be. The workload agent creates those
 * objects once, with a non-controller owner reference to their Machine, and releases a Machine
 * the pool has drained (removes the pool's deletion hooks) since Metacontroller never updates a
 * child that is being deleted. The agent decides nothing: every value comes from this spec.
 */
import { Type, type Static } from '@sinclair/typebox'
import { CustomResource, OpenObject, StringEnum, StringMap, listMap } from './kit.ts'

/** Type key of CellInfrastructures in a v2 hook request. */
export const CELL_INFRASTRUCTURE_TYPE_KEY = 'CellInfrastructure.cells.kubeswift.io/v1alpha1'

/** Cluster API's core API version (Machine). */
export const CLUSTER_API_VERSION = 'cluster.x-k8s.io/v1beta2'
/** Type key of Machines in a v2 hook request. */
export const MACHINE_TYPE_KEY = 'Machine.cluster.x-k8s.io/v1beta2'
/** API group of KubeSwift's Cluster API infrastructure provider. */
export const INFRASTRUCTURE_GROUP = 'infrastructure.cluster.x-k8s.io'
/** API version of KubeSwiftMachine (the provider's v1alpha1 serves contract v1beta2). */
export const KUBESWIFT_MACHINE_API_VERSION = 'infrastructure.cluster.x-k8s.io/v1alpha1'
/** Kind of the InfraMachine every Cluster API cell references. */
export const KUBESWIFT_MACHINE_KIND = 'KubeSwiftMachine'
/**
 * Version of a bootstrap config and its template: Cluster API references carry no version, and
 * gpucellpool creates the config at v1beta2, the contract version of Cluster API v1.11 and later.
 */
export const BOOTSTRAP_CONFIG_VERSION = 'v1beta2'

/**
 * The name of the pool's Machine deletion hooks, under Cluster API's prefixes
 * `pre-drain.delete.hook.machine.cluster.x-k8s.io/` and `pre-terminate.delete.hook.machine.cluster.x-k8s.io/`.
 */
export const MACHINE_HOOK_NAME = 'gpuhooks-drain'
/** Pre-drain hook annotation: Cluster API neither cordons nor evicts while it is on the Machine (and the Machine has a nodeRef). */
export const PRE_DRAIN_HOOK = `pre-drain.delete.hook.machine.cluster.x-k8s.io/${MACHINE_HOOK_NAME}`
/** Pre-terminate hook annotation: Cluster API does not delete the KubeSwiftMachine (the VM) while it is on the Machine. */
export const PRE_TERMINATE_HOOK = `pre-terminate.delete.hook.machine.cluster.x-k8s.io/${MACHINE_HOOK_NAME}`
/** Value of both hook annotations: who owns them. */
export const MACHINE_HOOK_OWNER = 'gpuhooks'
/** Machine annotation that makes Cluster API skip its drain (evictions) when the pool has drained the cell itself. */
export const EXCLUDE_NODE_DRAINING = 'machine.cluster.x-k8s.io/exclude-node-draining'

/**
 * The bootstrap configs the agent creates: Cluster API's bootstrap group, and the kinds of the
 * providers that serve them at {@link BOOTSTRAP_CONFIG_VERSION} (kubeadm, RKE2, k3s). The agent
 * creates them with its own rights, so a pool may not name another group or kind (an object of
 * any kind the agent may create, read from any template it may read); its RBAC grants kubeadm's.
 */
export const BOOTSTRAP_GROUP = 'bootstrap.cluster.x-k8s.io'
/** The config kinds of {@link BOOTSTRAP_GROUP} a pool may name (each as `<kind>Template`). */
export const BOOTSTRAP_CONFIG_KINDS = ['KubeadmConfig', 'RKE2Config', 'KThreesConfig'] as const
export type BootstrapConfigKind = (typeof BOOTSTRAP_CONFIG_KINDS)[number]

/** Whether `kind` is one of {@link BOOTSTRAP_CONFIG_KINDS}. */
export function isBootstrapConfigKind(kind: string): kind is BootstrapConfigKind {
  return (BOOTSTRAP_CONFIG_KINDS as readonly string[]).includes(kind)
}

/**
 * The KubeSwiftMachine's references to KubeSwift objects (`spec.backend.swiftGuest`), each by
 * name only, in the Machine's namespace: a namespace or a kind beside the name would point the
 * provider at an object of the pool author's choosing elsewhere.
 */
export const SWIFT_GUEST_REFS = ['imageRef', 'guestClassRef', 'networkRef', 'nodeNetworkRef'] as const

/** The bootstrap config of one Machine, copied from a template as a MachineSet would copy it. */
export const CellBootstrapConfigSchema = Type.Object(
  {
    apiGroup: StringEnum([BOOTSTRAP_GROUP], { description: 'API group of the config and its template: bootstrap.cluster.x-k8s.io.' }),
    kind: StringEnum(BOOTSTRAP_CONFIG_KINDS, {
      description: 'Kind of the config (the template kind without Template): KubeadmConfig, RKE2Config or KThreesConfig.'
    }),
    templateName: Type.String({
      minLength: 1,
      maxLength: 253,
      description: 'The template in this namespace whose spec.template.spec becomes the config spec, read once, when the config is created.'
    }),
    labels: Type.Optional(StringMap('Labels of the bootstrap config.'))
  },
  { description: 'A bootstrap config created from a template; absent: the Machine names a data Secret of the pool.' }
)
export type CellBootstrapConfig = Static<typeof CellBootstrapConfigSchema>

/** What one Machine of the pool needs. */
export const CellMachineSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 63, description: 'The Machine name, the cell name; the objects below get it too.' }),
    kubeSwiftMachine: Type.Object(
      {
        labels: Type.Optional(StringMap('Labels of the KubeSwiftMachine.')),
        annotations: Type.Optional(StringMap('Annotations of the KubeSwiftMachine.')),
        spec: OpenObject({ description: 'The KubeSwiftMachine spec.' })
      },
      { description: 'The KubeSwiftMachine (infrastructure.cluster.x-k8s.io/v1alpha1) the Machine references.' }
    ),
    bootstrapConfig: Type.Optional(CellBootstrapConfigSchema),
    release: Type.Optional(
      Type.Boolean({
        description:
          'true: the pool has drained the cell; the agent adds machine.cluster.x-k8s.io/exclude-node-draining to the Machine ' +
          'and removes the pool deletion hooks, so Cluster API deletes the VM without evicting anything.'
      })
    ),
    machineUID: Type.Optional(
      Type.String({
        maxLength: 128,
        description:
          'With release: the uid of the Machine the pool lets go. The agent releases no other Machine of this name, such as one ' +
          'rebuilt under the same name while its copy of this entry is older than that Machine.'
      })
    )
  },
  { description: 'The objects one Machine references, and whether the pool lets it go.' }
)
export type CellMachine = Static<typeof CellMachineSchema>

/** What the cellpool hook asks the agent to create and release. */
export const CellInfrastructureSpecSchema = Type.Object(
  {
    poolUID: Type.String({ minLength: 1, description: 'The pool uid; the agent acts only for Machines this pool controls.' }),
    machines: Type.Optional(Type.Array(CellMachineSchema, { ...listMap('name'), description: 'One entry per Machine of the pool.' }))
  },
  { description: 'Written by the cellpool controller only.' }
)
export type CellInfrastructureSpec = Static<typeof CellInfrastructureSpecSchema>

/** What the agent did for one Machine. */
export const CellMachineStatusSchema = Type.Object(
  {
    name: Type.String({ description: 'The Machine (the spec entry).' }),
    kubeSwiftMachine: Type.Optional(Type.Boolean({ description: 'The KubeSwiftMachine exists for this Machine.' })),
    bootstrapConfig: Type.Optional(Type.Boolean({ description: 'The bootstrap config exists for this Machine (or none is needed).' })),
    released: Type.Optional(Type.Boolean({ description: 'The Machine carries none of the pool deletion hooks.' })),
    message: Type.Optional(Type.String({ description: 'Why something could not be done yet.' }))
  },
  { description: 'What the agent did for one Machine.' }
)
export type CellMachineStatus = Static<typeof CellMachineStatusSchema>

/** What the agent reports. */
export const CellInfrastructureStatusSchema = Type.Object(
  {
    observedGeneration: Type.Optional(Type.Integer({ description: 'The spec generation the agent carried out.' })),
    machines: Type.Optional(Type.Array(CellMachineStatusSchema, { ...listMap('name'), description: 'One row per spec.machines entry.' }))
  },
  { description: 'Written by the workload agent only.' }
)
export type CellInfrastructureStatus = Static<typeof CellInfrastructureStatusSchema>

/** CellInfrastructure as stored. */
export const CellInfrastructureSchema = CustomResource(
  { spec: CellInfrastructureSpecSchema, status: Type.Optional(CellInfrastructureStatusSchema) },
  {
    description:
      'The KubeSwiftMachines and bootstrap configs of a Cluster API cell pool (spec, written by the cellpool controller) ' +
      'and what the workload agent created and released (status).'
  }
)
export type CellInfrastructure = Static<typeof CellInfrastructureSchema>
