/**
 * The agent's decisions for one CellInfrastructure (docs/cellpool.md, "Cluster API cells"):
 * `(cellInfrastructure, snapshot) → {status, actions}`, pure, as core.ts is for a CellNodeSet.
 *
 * Per `spec.machines[]` entry whose Machine exists and is controlled by the pool (its controller
 * owner reference is the GPUCellPool of `spec.poolUID`):
 * 1. the KubeSwiftMachine and the bootstrap config are created once each, named after the
 *    Machine, owned by it without the controller flag (Cluster API's Machine controller then
 *    makes itself their controller, which it refuses to do over another controller); one that
 *    exists is never written, and one owned by another Machine of the same name (an earlier one,
 *    being deleted) is waited for;
 * 2. the bootstrap config's spec is the template's `spec.template.spec`, read when the config is
 *    created, as a MachineSet copies it;
 * 3. `release: true`: the Machine gets `machine.cluster.x-k8s.io/exclude-node-draining` and loses
 *    the pool's pre-drain and pre-terminate hooks, with a merge patch guarded by the
 *    resourceVersion seen; only the Machine whose uid the entry's `machineUID` names (when it
 *    names one), so that a Machine rebuilt under the same name keeps its hooks while this copy
 *    of the entry is older than it.
 * A Machine being deleted gets nothing created. A Machine the pool does not control is never
 * written, whatever the spec says. An entry whose template hash is not the Machine's was written
 * for an earlier Machine of that name (this copy of the spec lags behind): nothing is created
 * from it until the pool's entry for this Machine is seen.
 */
import {
  BOOTSTRAP_CONFIG_VERSION,
  CLUSTER_API_VERSION,
  EXCLUDE_NODE_DRAINING,
  KUBESWIFT_MACHINE_API_VERSION,
  KUBESWIFT_MACHINE_KIND,
  PRE_DRAIN_HOOK,
  PRE_TERMINATE_HOOK,
  SWIFT_GUEST_REFS,
  type CellInfrastructureSpec,
  type CellInfrastructureStatus,
  type CellMachine,
  type CellMachineStatus
} from '../../api/cellinfrastructure.ts'
import { TEMPLATE_HASH_ANNOTATION } from '../../api/gpucellpool.ts'
import { canonicalJson } from '../../k8s/hash.ts'
import { asText, isRecord, ownValue } from '../../k8s/objects.ts'

/** The CellInfrastructure as the core reads it: metadata and a spec that passed the schema. */
export interface InfrastructureInput {
  metadata: { name: string; namespace: string; generation?: number }
  spec: CellInfrastructureSpec
  status?: CellInfrastructureStatus
}

/** What the pass read for one CellInfrastructure, by Machine name; undefined: not found. */
export interface InfrastructureSnapshot {
  machines: ReadonlyMap<string, unknown>
  kubeSwiftMachines: ReadonlyMap<string, unknown>
  bootstrapConfigs: ReadonlyMap<string, unknown>
  /** Templates by `apiGroup/kind/name`. */
  templates: ReadonlyMap<string, unknown>
}

/** One write in the infrastructure cluster. */
export type InfrastructureAction =
  | { type: 'create'; machine: string; object: Record<string, unknown> }
  | { type: 'patchMachine'; machine: string; patch: Record<string, unknown> }

/** The decision of one pass. */
export interface InfrastructureDecision {
  status: CellInfrastructureStatus
  writeStatus: boolean
  actions: InfrastructureAction[]
}

/** The key of a template in {@link InfrastructureSnapshot.templates}. */
export function templateKey(apiGroup: string, kind: string, name: string): string {
  return `${apiGroup}/${kind}/${name}`
}

/** The template kind of a config kind (`KubeadmConfig` → `KubeadmConfigTemplate`). */
export function templateKindOf(configKind: string): string {
  return `${configKind}Template`
}

const meta = (obj: unknown): Record<string, unknown> => (isRecord(obj) && isRecord(obj.metadata) ? obj.metadata : {})
/** A string value of `key` in `record`, own properties only. */
const ownString = (record: unknown, key: string): string | undefined => {
  const value = ownValue(record, key)
  return typeof value === 'string' ? value : undefined
}
const refsOf = (obj: unknown): Record<string, unknown>[] => {
  const refs = meta(obj).ownerReferences
  return Array.isArray(refs) ? refs.filter(isRecord) : []
}

/** Whether the Machine's controller owner reference is the GPUCellPool of `poolUID`. */
export function controlledByPool(machine: unknown, poolUID: string): boolean {
  const controller = refsOf(machine).find((r) => r.controller === true)
  return (
    controller !== undefined &&
    controller.kind === 'GPUCellPool' &&
    (asText(controller.apiVersion) ?? '').startsWith('cells.kubeswift.io/') &&
    controller.uid === poolUID
  )
}

/** Whether `obj` has an owner reference to the Machine of `uid`. */
function ownedByMachine(obj: unknown, uid: string): boolean {
  return refsOf(obj).some((r) => r.kind === 'Machine' && (asText(r.apiVersion) ?? '').startsWith('cluster.x-k8s.io/') && r.uid === uid)
}

/**
 * The fields of a KubeSwiftMachine spec's references ({@link SWIFT_GUEST_REFS}) beside a name:
 * each refers to an object in the Machine's namespace by name only, as a string or `{name}`.
 */
export function refusedRefs(spec: unknown): string[] {
  const guest = ownValue(ownValue(spec, 'backend'), 'swiftGuest')
  return SWIFT_GUEST_REFS.flatMap((ref) => {
    const value = ownValue(guest, ref)
    if (value === undefined || typeof value === 'string') return []
    if (!isRecord(value)) return [`spec.backend.swiftGuest.${ref}`]
    return Object.keys(value)
      .filter((key) => key !== 'name' || typeof value.name !== 'string')
      .map((key) => `spec.backend.swiftGuest.${ref}.${key.slice(0, 63)}`)
  })
}

/** Decides one pass. */
export function decideInfrastructure(input: InfrastructureInput, snapshot: InfrastructureSnapshot): InfrastructureDecision {
  const actions: InfrastructureAction[] = []
  const rows: CellMachineStatus[] = []
  for (const entry of input.spec.machines ?? []) {
    const { row, actions: own } = machineStep(input, entry, snapshot)
    rows.push(row)
    actions.push(...own)
  }
  // The generation counts as carried out only by a pass that had nothing left to do.
  const observedGeneration = actions.length === 0 ? input.metadata.generation : input.status?.observedGeneration
  const status: CellInfrastructureStatus = {
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
    machines: rows
  }
  const previous: CellInfrastructureStatus = {
    ...(input.status?.observedGeneration !== undefined ? { observedGeneration: input.status.observedGeneration } : {}),
    machines: input.status?.machines ?? []
  }
  return { status, writeStatus: canonicalJson(status) !== canonicalJson(previous), actions }
}

function machineStep(
  input: InfrastructureInput,
  entry: CellMachine,
  snapshot: InfrastructureSnapshot
): { row: CellMachineStatus; actions: InfrastructureAction[] } {
  const name = entry.name
  const machine = snapshot.machines.get(name)
  if (machine === undefined) return { row: { name, message: `Machine ${name} does not exist (yet)` }, actions: [] }
  if (!controlledByPool(machine, input.spec.poolUID)) {
    return { row: { name, message: `Machine ${name} is not controlled by this pool; nothing is done for it` }, actions: [] }
  }
  const uid = asText(meta(machine).uid) ?? ''
  const deleting = meta(machine).deletionTimestamp !== undefined
  const actions: InfrastructureAction[] = []
  const messages: string[] = []
  const row: CellMachineStatus = { name }

  const machineHash = ownString(meta(machine).annotations, TEMPLATE_HASH_ANNOTATION)
  const entryHash = ownString(entry.kubeSwiftMachine.annotations, TEMPLATE_HASH_ANNOTATION)
  if (!deleting && machineHash !== undefined && entryHash !== undefined && machineHash !== entryHash) {
    const message = `the entry for ${name} is of template ${entryHash}, the Machine of ${machineHash}: it was written for an earlier Machine; waiting for this one's`
    return { row: { name, message }, actions: [] }
  }

  const owner = { apiVersion: CLUSTER_API_VERSION, kind: 'Machine', name, uid }
  const ksm = snapshot.kubeSwiftMachines.get(name)
  const refused = refusedRefs(entry.kubeSwiftMachine.spec)
  if (ksm !== undefined) {
    row.kubeSwiftMachine = ownedByMachine(ksm, uid)
    if (!row.kubeSwiftMachine) messages.push(`KubeSwiftMachine ${name} belongs to another Machine of this name; waiting for it to go`)
  } else if (deleting) {
    row.kubeSwiftMachine = false
  } else if (refused.length > 0) {
    // Admission refuses such a pool; a spec that says otherwise is not carried out with the agent's rights.
    messages.push(`the KubeSwiftMachine spec refers by more than a name (${refused.slice(0, 5).join(', ')}); it is not created`)
    row.kubeSwiftMachine = false
  } else {
    actions.push({
      type: 'create',
      machine: name,
      object: {
        apiVersion: KUBESWIFT_MACHINE_API_VERSION,
        kind: KUBESWIFT_MACHINE_KIND,
        metadata: {
          name,
          namespace: input.metadata.namespace,
          ...(entry.kubeSwiftMachine.labels !== undefined ? { labels: { ...entry.kubeSwiftMachine.labels } } : {}),
          ...(entry.kubeSwiftMachine.annotations !== undefined ? { annotations: { ...entry.kubeSwiftMachine.annotations } } : {}),
          ownerReferences: [owner]
        },
        spec: structuredClone(entry.kubeSwiftMachine.spec)
      }
    })
    row.kubeSwiftMachine = false
  }

  const wanted = entry.bootstrapConfig
  if (wanted === undefined) {
    row.bootstrapConfig = true
  } else {
    const config = snapshot.bootstrapConfigs.get(name)
    if (config !== undefined) {
      row.bootstrapConfig = ownedByMachine(config, uid)
      if (!row.bootstrapConfig) messages.push(`${wanted.kind} ${name} belongs to another Machine of this name; waiting for it to go`)
    } else if (deleting) {
      row.bootstrapConfig = false
    } else {
      row.bootstrapConfig = false
      const templateKind = templateKindOf(wanted.kind)
      const template = snapshot.templates.get(templateKey(wanted.apiGroup, templateKind, wanted.templateName))
      const spec =
        isRecord(template) && isRecord(template.spec) && isRecord(template.spec.template) ? template.spec.template.spec : undefined
      if (!isRecord(spec)) {
        messages.push(
          template === undefined
            ? `${templateKind} ${wanted.templateName} (${wanted.apiGroup}) does not exist; no ${wanted.kind} is made without it`
            : `${templateKind} ${wanted.templateName} has no spec.template.spec object to copy`
        )
      } else {
        actions.push({
          type: 'create',
          machine: name,
          object: {
            apiVersion: `${wanted.apiGroup}/${BOOTSTRAP_CONFIG_VERSION}`,
            kind: wanted.kind,
            metadata: {
              name,
              namespace: input.metadata.namespace,
              ...(wanted.labels !== undefined ? { labels: { ...wanted.labels } } : {}),
              ownerReferences: [owner]
            },
            spec: structuredClone(spec)
          }
        })
      }
    }
  }

  const annotations = isRecord(meta(machine).annotations) ? (meta(machine).annotations as Record<string, unknown>) : {}
  const hooked = Object.hasOwn(annotations, PRE_DRAIN_HOOK) || Object.hasOwn(annotations, PRE_TERMINATE_HOOK)
  row.released = !hooked
  // A release names the Machine it is for; an entry without the uid predates the field.
  const forThis = entry.machineUID === undefined || entry.machineUID === uid
  if (entry.release === true && !forThis) {
    messages.push(`the release is for Machine uid ${entry.machineUID}, an earlier Machine of this name; this one keeps its hooks`)
  }
  if (entry.release === true && forThis && (hooked || annotations[EXCLUDE_NODE_DRAINING] === undefined)) {
    actions.push({
      type: 'patchMachine',
      machine: name,
      patch: {
        metadata: {
          resourceVersion: asText(meta(machine).resourceVersion) ?? '',
          annotations: { [EXCLUDE_NODE_DRAINING]: 'true', [PRE_DRAIN_HOOK]: null, [PRE_TERMINATE_HOOK]: null }
        }
      }
    })
  }
  if (messages.length > 0) row.message = messages.join('; ')
  return { row, actions }
}
