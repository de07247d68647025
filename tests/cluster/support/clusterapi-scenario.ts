/**
 * What the Cluster API cell scenario files share on top of their world (clusterapi-cells.ts):
 * references and reads of the pool's objects, a pool manifest of the unit fixtures' spec for
 * `provisioner: ClusterAPI`, the user's bootstrap config template, HAMi's device plugin for the
 * pool Nodes that joined, rounds of Metacontroller until a pool check holds, and the lines in
 * which Cluster API's manager says it drained a Machine's Node.
 *
 * The deletion hook names are written out here rather than imported from the product, so that a
 * wrong name in the product fails the scenarios instead of passing with them.
 */
import { Kubelets } from './agent.ts'
import { CELLS, poolManifest, scenarioWorkloadCluster } from './cellpool.ts'
import { capiRefs } from './clusterapi.ts'
import type { ClusterApiCellsWorld } from './clusterapi-cells.ts'
import { BOOTSTRAP_GROUP, KINDS, standInRef } from './clusterapi-providers.ts'
import type { KubeClient, ResourceRef } from './kube.ts'
import { roundsUntil } from './env.ts'
import { reader } from './reads.ts'
import type { JsonObject } from '../../support/merge.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

export const PRE_DRAIN = 'pre-drain.delete.hook.machine.cluster.x-k8s.io/gpuhooks-drain'
export const PRE_TERMINATE = 'pre-terminate.delete.hook.machine.cluster.x-k8s.io/gpuhooks-drain'
export const EXCLUDE_NODE_DRAINING = 'machine.cluster.x-k8s.io/exclude-node-draining'
/** What the user's bootstrap config template gives the kubelet: its own labels, none of the pool's. */
export const TEMPLATE_JOIN = '#cloud-config\nruncmd:\n  - kubeadm join --node-labels=gpu=on\n'
/** The reference to that template, `cells-join`, as a pool names it. */
export const TEMPLATE_REF = { apiGroup: BOOTSTRAP_GROUP, kind: KINDS.bootstrapTemplate.kind, name: 'cells-join' }

/** The row of cell `name` in the pool's status. */
export const cellOf = (p: Loose, name: string): Loose => (p?.status?.cells ?? []).find((c: Loose) => c.name === name)
/** An object's owner references as `{kind, name, controller}`. */
export const owners = (o: Loose): Loose[] =>
  (o.metadata.ownerReferences ?? []).map((r: Loose) => ({ kind: r.kind, name: r.name, controller: r.controller === true }))
/** The CellInfrastructure status rows as `[name, kubeSwiftMachine, bootstrapConfig, released]`. */
export const machineRows = (cinfra: Loose): Loose[] =>
  (cinfra?.status?.machines ?? []).map((r: Loose) => [r.name, r.kubeSwiftMachine, r.bootstrapConfig, r.released])

/** The shared part of a Cluster API cell scenario file, for the pools of one namespace. */
export interface ClusterApiScenario {
  infra: ReturnType<typeof reader<Loose>>
  work: ReturnType<typeof reader<Loose>>
  list: (client: KubeClient, ref: ResourceRef) => Promise<Loose[]>
  poolRef: (name: string) => ResourceRef
  cellsRef: (resource: string, name?: string) => ResourceRef
  machine: (name: string) => Promise<Loose>
  /**
   * A Cluster API pool of the unit fixtures' spec: `cell` merged into the cell spec (its
   * `clusterAPI` defaults to the world's Cluster), `more` into the spec; its Nodes join through
   * `wl-kubeconfig`, labelled, annotated and tainted.
   */
  pool: (name: string, replicas: number, cell?: JsonObject, more?: JsonObject) => JsonObject
  /** Creates the user's bootstrap config template {@link TEMPLATE_REF}. */
  createJoinTemplate: () => Promise<void>
  /** Rounds of Metacontroller and HAMi until `check` holds for the pool (or it is gone, `undefined`). */
  until: (pool: string, what: string, check: (p: Loose) => boolean, seconds?: number) => Promise<Loose>
  /** The manager's log lines that say it drained the Node of Machine `cell`: none is ever expected. */
  drainedByClusterApi: (cell: string) => string[]
}

/** The shared part for the world `w`, its pools in `namespace`, their cells Machines of the Cluster `clusterName`. */
export function clusterApiScenario(w: ClusterApiCellsWorld, namespace: string, clusterName: string): ClusterApiScenario {
  const { kube, wl } = w
  const infra = reader<Loose>(kube)
  const work = reader<Loose>(wl)
  const hami = new Kubelets(wl)
  const list = async (client: KubeClient, ref: ResourceRef): Promise<Loose[]> => (await client.list(ref)).body as Loose[]
  const poolRef = (name: string): ResourceRef => ({ apiVersion: CELLS, resource: 'gpucellpools', namespace, name })
  const cellsRef = (resource: string, name?: string): ResourceRef => ({ apiVersion: CELLS, resource, namespace, name })

  /** HAMi's device plugin: every pool Node that has joined registers its GPU once. */
  const hamiRegisters = async (pool: string): Promise<void> => {
    for (const node of await list(wl, { apiVersion: 'v1', resource: 'nodes' })) {
      const name = String(node.metadata.name)
      if (name.startsWith(`${pool}-`) && node.metadata.annotations?.['hami.io/node-nvidia-register'] === undefined)
        await hami.hamiRegisters(name)
    }
  }

  const until = async (pool: string, what: string, check: (p: Loose) => boolean, seconds = 240): Promise<Loose> => {
    return roundsUntil(what, {
      round: async () => {
        await w.sync(pool)
        await hamiRegisters(pool)
      },
      read: () => infra.get(poolRef(pool)),
      check,
      seconds,
      explain: async (p) =>
        `cells ${JSON.stringify(p?.status?.cells?.map((c: Loose) => [c.name, c.phase, c.reason, c.message]))}\n` +
        `conditions ${JSON.stringify(p?.status?.conditions?.map((c: Loose) => [c.type, c.status, c.reason, c.message]))}\n` +
        `CellInfrastructure status ${JSON.stringify((await infra.get(cellsRef('cellinfrastructures', pool)))?.status)}\n` +
        `CellNodeSet status ${JSON.stringify((await infra.get(cellsRef('cellnodesets', pool)))?.status)}\n` +
        `stand-in problems ${JSON.stringify([...w.providers.problems])}\nagent log:\n${w.agent.logTail(20)}\n` +
        `manager log:\n${w.manager.logText().split('\n').slice(-15).join('\n')}`
    })
  }

  const pool = (name: string, replicas: number, cell: JsonObject = {}, more: JsonObject = {}): JsonObject =>
    poolManifest(name, namespace, {
      replicas,
      cell: {
        provisioner: 'ClusterAPI',
        guestTemplate: { imageRef: { name: 'noble' }, guestClassRef: { name: 'gpu' }, interfaces: [{ name: 'primary' }] },
        nodeIPFrom: null,
        clusterAPI: { clusterName },
        ...cell
      },
      workloadCluster: scenarioWorkloadCluster(name),
      ...more
    })

  const createJoinTemplate = async (): Promise<void> => {
    await kube.create(standInRef(KINDS.bootstrapTemplate, namespace), {
      apiVersion: `${KINDS.bootstrapTemplate.group}/${KINDS.bootstrapTemplate.version}`,
      kind: KINDS.bootstrapTemplate.kind,
      metadata: { name: TEMPLATE_REF.name, namespace },
      spec: { template: { spec: { userData: TEMPLATE_JOIN } } }
    })
  }

  const drainedByClusterApi = (cell: string): string[] =>
    w.manager
      .logText()
      .split('\n')
      .filter(
        (line) =>
          line.includes(`Machine="${namespace}/${cell}"`) &&
          /Draining Node|Drain not completed|remaining Pods on the Node have been evicted/.test(line)
      )

  return {
    infra,
    work,
    list,
    poolRef,
    cellsRef,
    machine: (name) => infra.get(capiRefs.machine(namespace, name)),
    pool,
    createJoinTemplate,
    until,
    drainedByClusterApi
  }
}
