/**
 * A cell's phase as observation alone gives it (docs/cellpool.md, "Phases", the phase table): from its
 * observed machine and its row in the CellNodeSet's status, before budgets and history
 * (phases.ts). Each rule has its own table test.
 *
 * Choices where the spec is silent:
 * - `Pending` (no guest yet) also waits on the workload cluster (the row must show no Node of the
 *   cell's name), so its clock stops with `Joining`'s.
 * - A guest reporting `Failed` keeps the cell's earlier guest phase (`Pending` through `Booting`),
 *   so its clock keeps running from the same start.
 */
import type { CellDevice, CellNodeStatus } from '../../api/cellnodeset.ts'
import type { CellPhase } from '../../api/gpucellpool.ts'
import type { PhaseConfig } from '../model/cell.ts'
import type { GuestCondition, GuestView } from '../model/provisioner.ts'
import type { WorkloadState } from '../model/workload.ts'

/** Reason of a waiting phase whose clock is stopped because the workload cluster is unobserved. */
export const UNOBSERVED_REASON = 'WorkloadUnobserved'

/** A phase as observation alone gives it, before budgets and history. */
export interface ObservedPhase {
  phase: CellPhase
  reason: string
  message: string
  /** The clock of this phase is stopped (the workload cluster is unobserved). */
  paused: boolean
  nodeIP?: string
}

/**
 * The node address of a guest: the `nodeIPFrom` interface's IP, else `primaryIP` (KubeSwift fills
 * IPs only for the primary NIC).
 */
export function nodeAddress(guest: GuestView, nodeIPFrom: string | undefined): string | undefined {
  if (nodeIPFrom !== undefined) {
    const named = guest.interfaces.find((i) => i.name === nodeIPFrom)
    if (named?.ip !== undefined && named.ip !== '') return named.ip
  }
  return guest.primaryIP
}

/** The first condition of the guest that is not True (shown while the guest reports Failed). */
export function firstNotTrue(guest: GuestView): GuestCondition | undefined {
  return guest.conditions.find((c) => c.status !== 'True')
}

/** Healthy HAMi devices of a row. */
export function healthyDevices(row: CellNodeStatus): number {
  return (row.devices ?? []).filter((d: CellDevice) => d.healthy).length
}

/**
 * The row that describes this guest's Node: only a row whose `instance` equals the guest's uid
 * counts (an earlier VM's Node under the same name says nothing about this one).
 */
export function rowOfGuest(row: CellNodeStatus | undefined, guest: GuestView | undefined): CellNodeStatus | undefined {
  if (row === undefined || guest === undefined || guest.uid === '') return undefined
  return row.present && row.instance === guest.uid ? row : undefined
}

const GUEST_PHASES: ReadonlySet<CellPhase> = new Set(['Pending', 'AllocatingGPU', 'GuestProvisioning', 'Booting'])
const WORKLOAD_PHASES: ReadonlySet<CellPhase> = new Set(['Joining', 'AwaitingGPUCapacity', 'Ready'])

/**
 * The phase observation gives (docs/cellpool.md table). `previousPhase` is the phase the cell showed
 * before, used where a phase is kept: a guest reporting Failed, and the workload phases while
 * the workload cluster is unobserved.
 */
export function observedPhase(input: {
  guest: GuestView | undefined
  row: CellNodeStatus | undefined
  workload: WorkloadState
  config: PhaseConfig
  previousPhase: CellPhase | undefined
}): ObservedPhase {
  const { guest, row, workload, config, previousPhase } = input
  if (guest === undefined) {
    if (!workload.observed) {
      return {
        phase: 'Pending',
        reason: UNOBSERVED_REASON,
        message: `The guest is not created while the workload cluster is unobserved: ${workload.message}`,
        paused: true
      }
    }
    if (row?.present === true) {
      return row.conflict === true || row.live !== false
        ? {
            phase: 'Pending',
            reason: 'NodeNameConflict',
            message: `A live Node of this name belongs to another VM${row.message !== undefined ? ` (${row.message})` : ''}; the agent deletes it once it stops heartbeating.`,
            paused: false
          }
        : {
            phase: 'Pending',
            reason: 'StaleNode',
            message: 'A Node of an earlier VM under this name is still registered; waiting for the agent to sweep it.',
            paused: false
          }
    }
    return { phase: 'Pending', reason: 'GuestNotCreated', message: 'Waiting to create the guest.', paused: false }
  }
  const failedCondition = guest.phase === 'Failed' ? firstNotTrue(guest) : undefined
  const failedReason =
    guest.phase === 'Failed'
      ? {
          reason: failedCondition?.reason ?? 'GuestFailed',
          message: `The guest reports Failed: ${failedCondition?.message ?? failedCondition?.type ?? 'no condition says why'}.`
        }
      : undefined
  // A Cluster API Machine reports no devices or addresses: provisioned, it is Running.
  const reportsBoot = guest.observes !== 'provisioned'
  if (reportsBoot && guest.devices.length === 0) {
    if (failedReason !== undefined) return { phase: keptGuestPhase(previousPhase, 'AllocatingGPU'), ...failedReason, paused: false }
    return { phase: 'AllocatingGPU', reason: 'NoDevices', message: 'The guest has no GPU device bound yet.', paused: false }
  }
  if (guest.phase !== 'Running') {
    if (failedReason !== undefined) return { phase: keptGuestPhase(previousPhase, 'GuestProvisioning'), ...failedReason, paused: false }
    return {
      phase: 'GuestProvisioning',
      reason: reportsBoot ? 'GuestNotRunning' : 'MachineNotProvisioned',
      message: reportsBoot
        ? `The guest's GPU is bound; the guest is ${guest.phase ?? 'without a phase'}.`
        : `Cluster API reports the Machine ${guest.phase ?? 'without a phase'}${notTrueText(guest)}.`,
      paused: false
    }
  }
  const nodeIP = nodeAddress(guest, config.nodeIPFrom)
  if (reportsBoot && (nodeIP === undefined || nodeIP === '')) {
    const where =
      config.nodeIPFrom !== undefined
        ? `neither interface ${config.nodeIPFrom} nor the primary interface reports an address`
        : 'the primary interface reports no address'
    return { phase: 'Booting', reason: 'NoNodeAddress', message: `The guest runs; ${where} yet.`, paused: false }
  }
  if (!workload.observed) {
    const phase = previousPhase !== undefined && WORKLOAD_PHASES.has(previousPhase) ? previousPhase : 'Joining'
    return {
      phase,
      reason: UNOBSERVED_REASON,
      message: `The workload cluster is unobserved (${workload.reason}): ${workload.message}`,
      paused: true,
      nodeIP
    }
  }
  const own = rowOfGuest(row, guest)
  if (own === undefined) {
    // A live Node without an instance label that the agent does not refuse is this guest's own
    // registration, which the agent adopts in the pass that reported it (docs/workload.md): the
    // kubelet cannot carry the instance label, so the next pass shows it.
    if (row?.present === true && row.conflict !== true && (row.instance ?? '') === '' && row.live !== false) {
      return {
        phase: 'Joining',
        reason: 'NodeAdopting',
        message: `Node ${row.name} registered; the agent is writing this cell's instance, labels and taints onto it.`,
        paused: false,
        nodeIP
      }
    }
    if (row?.present === true) {
      return row.live !== false
        ? {
            phase: 'Joining',
            reason: 'NodeNameConflict',
            message: `Node ${row.name} is registered by another VM (instance ${row.instance === undefined || row.instance === '' ? 'none' : row.instance}) and still live; the agent deletes it once it stops heartbeating.`,
            paused: false,
            nodeIP
          }
        : {
            phase: 'Joining',
            reason: 'StaleNode',
            message: `Node ${row.name} of an earlier VM is not live; waiting for the agent to sweep it.`,
            paused: false,
            nodeIP
          }
    }
    return {
      phase: 'Joining',
      reason: 'NodeNotRegistered',
      message: `No Node of this guest in the workload cluster yet${nodeIP !== undefined ? ` (node address ${nodeIP})` : ''}.`,
      paused: false,
      nodeIP
    }
  }
  if (own.ready !== true)
    return { phase: 'Joining', reason: 'NodeNotReady', message: `Node ${own.name} is not Ready.`, paused: false, nodeIP }
  const healthy = healthyDevices(own)
  if (healthy < config.expectedDevices) {
    if (own.registration === 'Unparseable') {
      return {
        phase: 'AwaitingGPUCapacity',
        reason: 'RegistrationUnparseable',
        message: `HAMi's registration annotation on Node ${own.name} reads in neither format.`,
        paused: false,
        nodeIP
      }
    }
    const detail =
      own.registration === 'Missing' || own.registration === undefined
        ? 'HAMi has not registered its devices'
        : `HAMi reports ${healthy} healthy device(s)`
    return {
      phase: 'AwaitingGPUCapacity',
      reason: 'TooFewDevices',
      message: `Node ${own.name} is Ready; ${detail}, ${config.expectedDevices} expected.`,
      paused: false,
      nodeIP
    }
  }
  return { phase: 'Ready', reason: 'Ready', message: `Node ${own.name} is Ready with ${healthy} healthy device(s).`, paused: false, nodeIP }
}

function keptGuestPhase(previous: CellPhase | undefined, otherwise: CellPhase): CellPhase {
  return previous !== undefined && GUEST_PHASES.has(previous) && previous !== 'Pending' ? previous : otherwise
}

/** `: <reason>: <message>` of the machine's first condition that is not True, or nothing. */
function notTrueText(guest: GuestView): string {
  const c = firstNotTrue(guest)
  if (c === undefined) return ''
  return `: ${c.type}${c.reason !== undefined ? ` ${c.reason}` : ''}${c.message !== undefined ? ` (${c.message})` : ''}`
}
