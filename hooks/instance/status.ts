/**
 * The Instance's status (docs/api.md, docs/instance.md "Status"): a pure function of what was observed.
 *
 * Status must be deterministic (docs/metacontroller.md rule 2): no field depends on the clock except
 * `lastTransitionTime`, which `stampConditions` carries over until a condition's status changes.
 * Absent facts are omitted, never written as null.
 *
 * Choices where the spec is silent:
 * - With a spec error every observed child is kept, so the phase follows the kept Pod (a Pod that
 *   ended → `Failed`) and only an Instance without a Pod is `Failed`. `stop: true` is acted on
 *   even then (sync.ts), so it decides the phase first: `Stopping`, then `Stopped`.
 * - A Pod being replaced (ended, deleting, or built from an older generation) means the Instance is
 *   `Pending` its new Pod; the old Pod's names and addresses are still reported while it exists.
 * - `accessAddresses` and `connect` are given in phase `Running` only, IPv6 host IPs in brackets
 *   (`connect.ssh` names the host bare: ssh takes the port from -p and would read brackets as part
 *   of the name). `connect` falls back to the host IP only when it is an IP address, and with an
 *   unusable Setting `instance-access-address` carries only a message, never the host IP instead.
 * - A Pod that Kueue's admission gate holds makes the Instance `Queued` (queue-status.ts gives the
 *   conditions Admitted and Evicted); a stopping Pod that Kueue's finalizer holds says so.
 * - `accelerator` comes with an observed Pod whose Instance asks for an accelerator or whose `main`
 *   container requests an extended resource; family and count are the spec's (defaults filled in),
 *   and `claim` the ResourceClaim the Pod's status names for its claim `accelerator`.
 */
import { SSH_PORT_NAME, type InstancePhase, type InstanceStatus } from '../api/instance.ts'
import type { AccessAddress } from '../api/setting.ts'
import { stampConditions, type ConditionInput } from '../k8s/conditions.ts'
import { withoutStop } from '../k8s/sentences.ts'
import { isIanaServiceName } from '../k8s/names.ts'
import { asList, asRecord, asText, isRecord, recordOf, type KubeObject } from '../k8s/objects.ts'
import { ACCELERATOR_CLAIM, KUEUE_POD_FINALIZER, MAIN_CONTAINER, type PodQueue } from './labels.ts'
import { admittedCondition, evictedCondition, heldByKueue, podQueueName, queuedByKueue } from './queue-status.ts'
import { portIdentity, protocolOf } from './ports.ts'
import { connectStatus, hostPort } from './connect.ts'
import { observedServicePorts, servicePortName } from './service.ts'
import type { SpecProblem } from './problems.ts'

/** How the Pod the Instance runs differs from what it would build now. */
export type Drift =
  | { kind: 'None'; podName?: string }
  | { kind: 'Deleting' }
  | { kind: 'SpecChanged'; podName: string; podGeneration: string | undefined; generation: number; held: boolean }
  | { kind: 'InstanceTypeChanged'; podName: string; typeName: string }
  | { kind: 'SettingChanged'; podName: string; setting: string; was: string | undefined; now: string }
  | { kind: 'AccessRevoked'; podName: string; typeName: string; namespace: string }

/** Everything the status is computed from. */
export interface StatusInput {
  /** The Instance's spec as stored (possibly invalid: read defensively). */
  spec: unknown
  generation: number | undefined
  /** The parent's previous `status.conditions`, for transition times. */
  previousConditions: unknown
  now: Date
  finalizing: boolean
  problems: readonly SpecProblem[]
  /** The observed Pod of this Instance. */
  pod: KubeObject | undefined
  /** Set when the observed Pod is being left out to be replaced: why, as a clause. */
  replacing?: string
  /** The observed Service of this Instance (a child). */
  service: KubeObject | undefined
  drift: Drift
  /** The InstanceType's queue (`spec.queue`), when it has one: the Admitted and Evicted conditions. */
  queue?: PodQueue
  /** The Setting `instance-access-address` as read (request.ts); absent or empty means unset. */
  accessAddress?: AccessAddress
  /** `status.lifecycle` and the condition StopScheduled (lifecycle-sync.ts), with a lifecycle. */
  lifecycle?: InstanceStatus['lifecycle']
  stopScheduled?: ConditionInput
}

interface Waiting {
  container: string
  reason: string
}

/** The first waiting container of a Pod (`main` first), with its reason. */
export function waitingContainer(pod: KubeObject | undefined): Waiting | undefined {
  const statuses = [...asList(asRecord(pod?.status).initContainerStatuses), ...asList(asRecord(pod?.status).containerStatuses)]
    .map(asRecord)
    .sort((a, b) => Number(b.name === MAIN_CONTAINER) - Number(a.name === MAIN_CONTAINER))
  for (const s of statuses) {
    const reason = asText(asRecord(asRecord(s.state).waiting).reason)
    if (reason !== undefined) return { container: asText(s.name) ?? 'a container', reason }
  }
  return undefined
}

function podCondition(pod: KubeObject, type: string): Record<string, unknown> | undefined {
  return asList(asRecord(pod.status).conditions)
    .map(asRecord)
    .find((c) => c.type === type)
}

/** True when the Pod ended (phase Failed or Succeeded): it never runs again. */
export function podEnded(pod: KubeObject): boolean {
  const phase = asRecord(pod.status).phase
  return phase === 'Failed' || phase === 'Succeeded'
}

/** True when the Pod is being deleted. */
export function podDeleting(pod: KubeObject): boolean {
  return asText(pod.metadata.deletionTimestamp) !== undefined
}

/** True when the Pod is bound to a node: `spec.nodeName` set or condition PodScheduled True. */
export function podScheduled(pod: KubeObject): boolean {
  return asText(asRecord(pod.spec).nodeName) !== undefined || podCondition(pod, 'PodScheduled')?.status === 'True'
}

/** The phase and message the observed Pod alone gives. */
export function phaseFromPod(pod: KubeObject): { phase: InstancePhase; message: string } {
  const name = pod.metadata.name ?? ''
  const status = asRecord(pod.status)
  const node = asText(asRecord(pod.spec).nodeName)
  if (podEnded(pod)) {
    const reason = asText(status.reason)
    return {
      phase: 'Failed',
      message: `Pod ${name} ended with phase ${String(status.phase)}${reason !== undefined ? ` (${reason})` : ''}.`
    }
  }
  if (status.phase === 'Running' && podCondition(pod, 'Ready')?.status === 'True') {
    return { phase: 'Running', message: `Pod ${name} is running on node ${node ?? 'unknown'}.` }
  }
  if (podScheduled(pod)) {
    const waiting = waitingContainer(pod)
    const detail = waiting !== undefined ? `: container ${waiting.container} is waiting (${waiting.reason})` : ''
    return { phase: 'Starting', message: `Pod ${name} is starting on node ${node ?? 'unknown'}${detail}.` }
  }
  if (queuedByKueue(pod)) {
    const queue = podQueueName(pod, undefined)
    return {
      phase: 'Queued',
      message: `Pod ${name} is waiting for quota in ${queue !== undefined ? `LocalQueue ${queue}` : 'its LocalQueue'}.`
    }
  }
  const why = asText(podCondition(pod, 'PodScheduled')?.message)
  return { phase: 'Pending', message: `Pod ${name} is waiting to be scheduled${why !== undefined ? `: ${withoutStop(why)}` : ''}.` }
}

/** The Instance's phase and its one-sentence message (docs/instance.md, "Status"). */
export function instancePhase(input: StatusInput): { phase: InstancePhase; message: string } {
  const { pod, service } = input
  if (input.finalizing) {
    if (pod !== undefined) return { phase: 'Deleting', message: `Deleting: waiting for Pod ${pod.metadata.name} to terminate.` }
    if (service !== undefined) return { phase: 'Deleting', message: `Deleting: removing Service ${service.metadata.name}.` }
    return { phase: 'Deleting', message: 'Deleting: every child is gone.' }
  }
  if (asRecord(input.spec).stop === true) {
    const keeps = service !== undefined ? `; Service ${service.metadata.name} keeps its node ports` : ''
    if (pod !== undefined) {
      // While Kueue is down its finalizer keeps a deleted Pod (and the quota it holds) in place.
      const kueue = podDeleting(pod) && heldByKueue(pod) ? ` and for Kueue to release it (finalizer ${KUEUE_POD_FINALIZER})` : ''
      return { phase: 'Stopping', message: `Stopping: waiting for Pod ${pod.metadata.name} to terminate${kueue}${keeps}.` }
    }
    return { phase: 'Stopped', message: `Stopped${keeps}.` }
  }
  if (input.problems.length > 0) {
    if (pod !== undefined) return phaseFromPod(pod)
    const [first] = input.problems
    const more = input.problems.length - 1
    const tail = more > 0 ? ` (and ${more} more, see condition SpecValid)` : ''
    return { phase: 'Failed', message: `The Instance cannot run: ${withoutStop(first?.message ?? '')}${tail}.` }
  }
  if (pod === undefined) return { phase: 'Pending', message: 'Waiting for the Pod to be created.' }
  if (input.replacing !== undefined) return { phase: 'Pending', message: `Replacing Pod ${pod.metadata.name}: ${input.replacing}.` }
  return phaseFromPod(pod)
}

/** Condition Ready: True iff Running; else a container's waiting reason, or the phase. */
export function readyCondition(phase: InstancePhase, message: string, pod: KubeObject | undefined): ConditionInput {
  if (phase === 'Running') return { type: 'Ready', status: 'True', reason: 'Running', message }
  const waiting = phase === 'Deleting' || phase === 'Stopping' ? undefined : waitingContainer(pod)
  return { type: 'Ready', status: 'False', reason: waiting?.reason ?? phase, message }
}

/**
 * At most this many problems are spelled out in SpecValid, so that a spec with thousands of bad
 * entries cannot push the status past what the API server stores; the rest are counted.
 */
export const MAX_REPORTED_PROBLEMS = 20

/** Condition SpecValid: the first problem's reason and every message (up to the bound), joined. */
export function specValidCondition(problems: readonly SpecProblem[]): ConditionInput {
  if (problems.length === 0) return { type: 'SpecValid', status: 'True', reason: 'Valid', message: 'The spec is valid.' }
  const shown = problems.slice(0, MAX_REPORTED_PROBLEMS).map((p) => withoutStop(p.message))
  const more = problems.length - shown.length
  return {
    type: 'SpecValid',
    status: 'False',
    reason: problems[0]?.reason ?? 'InvalidSpec',
    message: shown.join('; ') + (more > 0 ? `; and ${more} more problem${more === 1 ? '' : 's'}` : '') + '.'
  }
}

/** Condition UpToDate: whether the running Pod is what the Instance would build now. */
export function upToDateCondition(drift: Drift): ConditionInput {
  const c = (status: 'True' | 'False', reason: string, message: string): ConditionInput => ({ type: 'UpToDate', status, reason, message })
  switch (drift.kind) {
    case 'None':
      return drift.podName !== undefined
        ? c('True', 'UpToDate', `Pod ${drift.podName} matches the current spec, InstanceType and Settings.`)
        : c('True', 'UpToDate', 'No Pod runs; the next one is built from the current spec.')
    case 'Deleting':
      return c('True', 'UpToDate', 'The Instance is being deleted; nothing is updated any more.')
    case 'SpecChanged': {
      const built = `Pod ${drift.podName} was built from generation ${drift.podGeneration ?? 'unknown'}, the spec is at generation ${drift.generation}`
      return c('False', 'SpecChanged', drift.held ? `${built}; it is kept until the spec is valid.` : `${built}; it is being replaced.`)
    }
    case 'InstanceTypeChanged':
      return c(
        'False',
        'InstanceTypeChanged',
        `InstanceType ${drift.typeName} changed after Pod ${drift.podName} was built; the change applies at the next start (set spec.stop true, then false).`
      )
    case 'AccessRevoked':
      return c(
        'False',
        'AccessRevoked',
        `InstanceType ${drift.typeName} no longer admits namespace ${drift.namespace}; Pod ${drift.podName} keeps running, and the next start is refused.`
      )
    case 'SettingChanged':
      return c(
        'False',
        'SettingChanged',
        `Setting ${drift.setting} changed after Pod ${drift.podName} was built (it runs ${drift.was ?? 'no sidecar'}, the Setting asks for ${drift.now}); the change applies at the next start.`
      )
  }
}

/**
 * Port names the spec gives, by identity (`8888/TCP` → `jupyter`). Only a name the spec schema
 * admits (an IANA service name) is taken: a spec kept with errors may hold anything there.
 */
export function specPortNames(spec: unknown): Map<string, string> {
  const out = new Map<string, string>()
  for (const p of asList(asRecord(spec).ports).map(asRecord)) {
    const name = asText(p.name)
    if (typeof p.port === 'number' && name !== undefined && isIanaServiceName(name)) out.set(portIdentity(p.port, protocolOf(p)), name)
  }
  return out
}

/** `status.ports`: the observed Service's entries with their node ports, named as the spec names them. */
export function statusPorts(service: KubeObject | undefined, spec: unknown): NonNullable<InstanceStatus['ports']> {
  const names = specPortNames(spec)
  return observedServicePorts(service).map((p) => {
    const fallback = p.name === SSH_PORT_NAME ? SSH_PORT_NAME : servicePortName(p.port, p.protocol, false)
    const entry: NonNullable<InstanceStatus['ports']>[number] = {
      name: names.get(portIdentity(p.port, p.protocol)) ?? fallback,
      port: p.port,
      protocol: p.protocol
    }
    if (p.nodePort !== undefined) entry.nodePort = p.nodePort
    return entry
  })
}

/** `<hostIP>:<nodePort>` per allocated port (IPv6 in brackets). */
export function accessAddresses(hostIP: string, ports: NonNullable<InstanceStatus['ports']>): string[] {
  return ports.flatMap((p) => (p.nodePort === undefined ? [] : [hostPort(hostIP, p.nodePort)]))
}

/** `status.accelerator` from the observed Pod's `main` container and the spec's family and count. */
export function podAccelerator(pod: KubeObject, spec: unknown): InstanceStatus['accelerator'] {
  const main = asList(asRecord(pod.spec).containers)
    .map(asRecord)
    .find((c) => c.name === MAIN_CONTAINER)
  const resources = asRecord(main?.resources)
  const requested = new Map([...Object.entries(asRecord(resources.limits)), ...Object.entries(asRecord(resources.requests))])
  const extended = recordOf(
    [...requested.keys()].sort().flatMap((key) => {
      const value = requested.get(key)
      return key.includes('/') && (typeof value === 'string' || typeof value === 'number') ? [[key, String(value)] as const] : []
    })
  )
  const declared = asRecord(asRecord(asRecord(spec).resources).accelerator)
  const hasBlock = isRecord(asRecord(asRecord(spec).resources).accelerator)
  const count = typeof declared.count === 'number' ? declared.count : hasBlock ? 1 : 0
  if (count === 0 && Object.keys(extended).length === 0) return undefined
  const claim = asList(asRecord(pod.status).resourceClaimStatuses)
    .map(asRecord)
    .find((c) => c.name === ACCELERATOR_CLAIM)
  const claimName = asText(claim?.resourceClaimName)
  return {
    family: asText(declared.family) ?? 'Whole',
    count,
    resources: extended,
    ...(claimName !== undefined ? { claim: claimName } : {})
  }
}

/**
 * `8888:31000/TCP,22:31022/TCP`: every allocated node port on one line, for the Ports printer
 * column (a printer column shows only the first match of a list path).
 */
export function nodePortSummary(ports: NonNullable<InstanceStatus['ports']>): string {
  return ports
    .filter((p) => p.nodePort !== undefined)
    .map((p) => `${p.port}:${p.nodePort}/${p.protocol}`)
    .join(',')
}

/** The whole status. */
export function instanceStatus(input: StatusInput): InstanceStatus {
  const { phase, message } = instancePhase(input)
  const status: InstanceStatus = { phase, message }
  const pod = input.pod
  const podStatus = asRecord(pod?.status)
  if (pod !== undefined) {
    status.podName = pod.metadata.name
    const nodeName = asText(asRecord(pod.spec).nodeName)
    if (nodeName !== undefined) status.nodeName = nodeName
    const podIP = asText(podStatus.podIP)
    if (podIP !== undefined) status.podIP = podIP
  }
  const hostIP = asText(podStatus.hostIP)
  if (hostIP !== undefined) status.hostIP = hostIP
  const ports = statusPorts(input.service, input.spec)
  if (ports.length > 0) {
    status.ports = ports
    const summary = nodePortSummary(ports)
    if (summary !== '') status.nodePorts = summary
  }
  if (phase === 'Running' && hostIP !== undefined) {
    const addresses = accessAddresses(hostIP, ports)
    if (addresses.length > 0) status.accessAddresses = addresses
  }
  if (phase === 'Running') {
    const connect = connectStatus({ spec: input.spec, pod, hostIP, service: input.service, ports, accessAddress: input.accessAddress })
    if (connect !== undefined) status.connect = connect
  }
  const accelerator = pod !== undefined ? podAccelerator(pod, input.spec) : undefined
  if (accelerator !== undefined) status.accelerator = accelerator
  const conditions = [readyCondition(phase, message, pod), specValidCondition(input.problems), upToDateCondition(input.drift)]
  if (input.queue !== undefined && !input.finalizing) conditions.push(admittedCondition(pod, input.queue))
  const evicted = input.finalizing ? undefined : evictedCondition(pod, input.queue, input.previousConditions)
  if (evicted !== undefined) conditions.push(evicted)
  if (input.lifecycle !== undefined) status.lifecycle = input.lifecycle
  if (input.stopScheduled !== undefined && !input.finalizing) conditions.push(input.stopScheduled)
  status.conditions = stampConditions(conditions, input.previousConditions, input.now, input.generation)
  if (input.generation !== undefined) status.observedGeneration = input.generation
  return status
}
