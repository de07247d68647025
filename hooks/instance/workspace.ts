/**
 * The persistent workspace (docs/instance.md, "The persistent workspace"): the PersistentVolumeClaim
 * `<instance>-workspace` and what status says of it.
 *
 * The claim is answered whenever one is observed or `spec.workspace.persistent` asks for one,
 * whether the Instance runs or not; only finalize leaves it out. It is updated in place
 * (Metacontroller InPlace), and only where the API server takes the update, so a sync never fails
 * on it: the size grows only while the claim is Bound and its StorageClass allows volume
 * expansion (the PersistentVolumeClaimResize admission plugin refuses any other grow), never
 * shrinks, and the class is never changed. Otherwise the claim is answered as observed and
 * `status.workspace.message` says why.
 *
 * Choices where the spec is silent:
 * - The claim carries the Service's labels (part-of the Instance, managed-by gpuhooks): it is not
 *   a Pod, so the resource-type label the isolation policy selects has no business on it.
 * - A size equal to the observed request (`1Gi` against `1024Mi`) is answered in the observed
 *   form: the API server stores quantities canonically, and another spelling would be an update
 *   on every sync.
 * - `storageClassName` absent is not written: the DefaultStorageClass admission plugin sets the
 *   default class on create, and the merge keeps that (as it keeps `volumeMode` and `volumeName`).
 * - Status takes from the observed claim only values of a known shape (a phase of the three, a
 *   quantity, a DNS subdomain), never free text; the node the scheduler chose is not named.
 */
import type { InstanceStatus, PersistentWorkspace } from '../api/instance.ts'
import { MANAGED_BY, MANAGED_BY_LABEL, PART_OF_LABEL } from '../k8s/labels.ts'
import { isDnsSubdomain } from '../k8s/names.ts'
import { asRecord, asText, type KubeObject } from '../k8s/objects.ts'
import { compareQuantities } from '../k8s/quantity.ts'
import { keepAsIs } from '../metacontroller/keep.ts'
import { workspaceClaimName } from './labels.ts'

/** The annotation the scheduler sets on a WaitForFirstConsumer claim once it chose a node. */
const SELECTED_NODE_ANNOTATION = 'volume.kubernetes.io/selected-node'
/** The annotations that mark the default StorageClass (the beta one is still honoured). */
const DEFAULT_CLASS_ANNOTATIONS = ['storageclass.kubernetes.io/is-default-class', 'storageclass.beta.kubernetes.io/is-default-class']
const CLAIM_PHASES = ['Pending', 'Bound', 'Lost']

/** What the claim is decided from. */
export interface WorkspaceInput {
  name: string
  namespace: string
  /** `spec.workspace.persistent` of a valid spec; undefined when it asks for none or is invalid. */
  persistent: PersistentWorkspace | undefined
  /** The observed claim `<instance>-workspace`. */
  claim: KubeObject | undefined
  storageClasses: readonly KubeObject[]
}

/** The claim to answer, and why it differs from the spec when it does. */
export interface WorkspaceDecision {
  child: KubeObject | undefined
  held?: string
}

/** The claim a persistent workspace asks for, as rendered from the spec. */
export function buildWorkspaceClaim(name: string, namespace: string, persistent: PersistentWorkspace, storage: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: workspaceClaimName(name),
      namespace,
      labels: { [PART_OF_LABEL]: name, [MANAGED_BY_LABEL]: MANAGED_BY }
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage } },
      ...(persistent.storageClassName !== undefined ? { storageClassName: persistent.storageClassName } : {})
    }
  }
}

/** The claim's requested storage as observed. */
function requestedOf(claim: KubeObject): unknown {
  return asRecord(asRecord(asRecord(claim.spec).resources).requests).storage
}

function classNameOf(claim: KubeObject | undefined): string | undefined {
  const name = asText(asRecord(claim?.spec).storageClassName)
  return name !== undefined && isDnsSubdomain(name) ? name : undefined
}

/** The StorageClass of a claim: its own, else the spec's, else the cluster's default. */
function storageClass(input: WorkspaceInput): { name: string | undefined; object: KubeObject | undefined } {
  const name = classNameOf(input.claim) ?? input.persistent?.storageClassName
  if (name !== undefined) return { name, object: input.storageClasses.find((c) => c.metadata.name === name) }
  const fallback = input.storageClasses.find((c) => DEFAULT_CLASS_ANNOTATIONS.some((a) => asRecord(c.metadata.annotations)[a] === 'true'))
  return { name: fallback?.metadata.name, object: fallback }
}

/** Decide the claim to answer for a valid spec (sync's happy path). */
export function decideWorkspaceClaim(input: WorkspaceInput): WorkspaceDecision {
  const { claim, persistent } = input
  const claimName = workspaceClaimName(input.name)
  if (persistent === undefined) {
    if (claim === undefined) return { child: undefined }
    return {
      child: keepAsIs(claim),
      held: `spec.workspace.persistent is absent; PersistentVolumeClaim ${claimName} is kept with its files`
    }
  }
  const size = String(persistent.size)
  if (claim === undefined) return { child: buildWorkspaceClaim(input.name, input.namespace, persistent, size) }
  const kept = (held: string): WorkspaceDecision => ({ child: keepAsIs(claim), held })
  if (asText(claim.metadata.deletionTimestamp) !== undefined) return kept(`PersistentVolumeClaim ${claimName} is being deleted`)
  const observedClass = classNameOf(claim)
  const rawClass = asRecord(claim.spec).storageClassName
  if (persistent.storageClassName !== undefined && rawClass !== undefined && rawClass !== persistent.storageClassName) {
    return kept(
      `spec.workspace.persistent.storageClassName ${persistent.storageClassName} differs from the claim's class ${observedClass ?? '(unreadable)'}; a claim's class cannot change`
    )
  }
  const requested = quantityText(requestedOf(claim))
  const order = compareQuantities(persistent.size, requested)
  if (requested === undefined || order === undefined)
    return kept(`the requested storage of PersistentVolumeClaim ${claimName} cannot be read`)
  if (order === 0) return { child: buildWorkspaceClaim(input.name, input.namespace, persistent, requested) }
  if (order === -1) return kept(`spec.workspace.persistent.size ${size} is below the claim's ${requested}; a claim cannot shrink`)
  const bound = asRecord(claim.status).phase === 'Bound'
  const expands = storageClass(input).object?.allowVolumeExpansion === true
  if (!bound || !expands) {
    const why = !bound ? 'the claim is not Bound yet' : `StorageClass ${observedClass ?? 'of the claim'} does not allow volume expansion`
    return kept(`spec.workspace.persistent.size ${size} waits: ${why}`)
  }
  return { child: buildWorkspaceClaim(input.name, input.namespace, persistent, size) }
}

/** What the claim means for the Instance: `status.workspace`, and why the Pod waits for it. */
export interface WorkspaceReport {
  status: NonNullable<InstanceStatus['workspace']>
  waiting?: { reason: 'WorkspacePending' | 'WorkspaceLost'; message: string }
}

/** A quantity the observed claim reports, when it reads as one. */
function quantityText(value: unknown): string | undefined {
  if (typeof value === 'number') return compareQuantities(value, 0) === undefined ? undefined : String(value)
  return typeof value === 'string' && compareQuantities(value, 0) !== undefined ? value : undefined
}

/** The report on the workspace claim; undefined when the Instance has none and asks for none. */
export function workspaceReport(input: WorkspaceInput, held: string | undefined, podScheduled: boolean): WorkspaceReport | undefined {
  const { claim } = input
  if (claim === undefined && input.persistent === undefined) return undefined
  const claimName = workspaceClaimName(input.name)
  const status: WorkspaceReport['status'] = { claimName }
  if (claim === undefined) {
    const message = `Waiting for PersistentVolumeClaim ${claimName} to be created.`
    return { status: { ...status, message }, waiting: { reason: 'WorkspacePending', message } }
  }
  const phase = asText(asRecord(claim.status).phase)
  if (phase !== undefined && CLAIM_PHASES.includes(phase)) status.phase = phase
  const capacity = quantityText(asRecord(asRecord(claim.status).capacity).storage)
  if (capacity !== undefined) status.capacity = capacity
  const requested = quantityText(requestedOf(claim))
  if (requested !== undefined) status.requested = requested
  const { name: className, object: classObject } = storageClass(input)
  if (classNameOf(claim) !== undefined) status.storageClassName = classNameOf(claim)
  const waiting = claimWaiting(claim, claimName, className, classObject, podScheduled)
  const sentences = [waiting?.message ?? waiting?.note, held !== undefined ? `${held}.` : undefined].filter((s) => s !== undefined)
  if (sentences.length > 0) status.message = sentences.join(' ')
  return { status, ...(waiting?.message !== undefined ? { waiting: { reason: waiting.reason, message: waiting.message } } : {}) }
}

/** Why a claim that is not Bound holds the Pod back (`message`), or a note when it does not. */
function claimWaiting(
  claim: KubeObject,
  claimName: string,
  className: string | undefined,
  classObject: KubeObject | undefined,
  podScheduled: boolean
): { reason: 'WorkspacePending' | 'WorkspaceLost'; message?: string; note?: string } | undefined {
  const phase = asRecord(claim.status).phase
  if (phase === 'Lost') {
    return {
      reason: 'WorkspaceLost',
      message: `PersistentVolumeClaim ${claimName} is Lost: its PersistentVolume is gone, and the Pod cannot mount it.`
    }
  }
  if (phase === 'Bound') return undefined
  const pending = `PersistentVolumeClaim ${claimName} is Pending`
  if (className === undefined) {
    return {
      reason: 'WorkspacePending',
      message: `${pending}: it names no StorageClass and the cluster has no default one, so only a PersistentVolume of no class can bind it.`
    }
  }
  if (classObject === undefined) return { reason: 'WorkspacePending', message: `${pending}: StorageClass ${className} does not exist.` }
  if (classObject.volumeBindingMode === 'WaitForFirstConsumer') {
    if (!podScheduled && asRecord(claim.metadata.annotations)[SELECTED_NODE_ANNOTATION] === undefined) {
      return {
        reason: 'WorkspacePending',
        note: `${pending} until the Pod is scheduled: StorageClass ${className} binds a volume for its first consumer (WaitForFirstConsumer).`
      }
    }
    return {
      reason: 'WorkspacePending',
      message: `${pending}: StorageClass ${className} is providing a volume on the node chosen for the Pod.`
    }
  }
  return { reason: 'WorkspacePending', message: `${pending}: no PersistentVolume of StorageClass ${className} is bound to it yet.` }
}

/**
 * `status` with `workspace` set and, while the Instance is Pending because of its claim, the
 * claim's reason in its message and Ready condition.
 */
export function withWorkspace(status: InstanceStatus, report: WorkspaceReport | undefined): InstanceStatus {
  if (report === undefined) return status
  const out: InstanceStatus = { ...status, workspace: report.status }
  const waiting = report.waiting
  if (waiting === undefined || status.phase !== 'Pending') return out
  out.message = waiting.message
  out.conditions = (status.conditions ?? []).map((c) =>
    c.type === 'Ready' && c.status === 'False' ? { ...c, reason: waiting.reason, message: waiting.message } : c
  )
  return out
}
