/**
 * A cell's phase (cellpool.md, "Phases"): from its observed SwiftGuest and its row in the
 * CellNodeSet's status, with the budgets that apply until the cell's first Ready.
 *
 * Everything here is a pure function of plain data the request reader produced (request.ts), so
 * each rule has its own table test. The removal phases (`Draining`, `Deleting`) are decided by
 * the scaling module; this one says what the cell is, not what is done with it.
 *
 * Choices where the spec is silent:
 * - A stopped clock restarts: while the workload cluster is unobserved a waiting cell's reason is
 *   `WorkloadUnobserved` and its transition time is stamped when the pause begins and again when
 *   it ends, so after an agent outage the phase gets its whole budget again. The status keeps one
 *   time per cell; an outage never fails a cell, which is what the rule is for.
 * - `Pending` (no guest yet) also waits on the workload cluster (the row must show no Node of the
 *   cell's name), so its clock stops with `Joining`'s.
 * - A guest reporting `Failed` keeps the cell's earlier guest phase (`Pending` through `Booting`),
 *   so its clock keeps running from the same start.
 */
import type { CellDevice, CellNodeStatus } from '../api/cellnodeset.ts'
import { CELL_PHASES, type CellPhase } from '../api/gpucellpool.ts'

export { CELL_PHASES, type CellPhase }

/** Phases a cell passes while it is built, before its first Ready ("creating"). */
export const CREATING_PHASES: ReadonlySet<CellPhase> = new Set([
  'Pending',
  'AllocatingGPU',
  'GuestProvisioning',
  'Booting',
  'Joining',
  'AwaitingGPUCapacity'
])

/** Phases under `bootstrap.readyTimeout`. */
const BOOTSTRAP_PHASES: ReadonlySet<CellPhase> = new Set(['Pending', 'AllocatingGPU', 'GuestProvisioning', 'Booting', 'Joining'])

/** Reason of a waiting phase whose clock is stopped because the workload cluster is unobserved. */
export const UNOBSERVED_REASON = 'WorkloadUnobserved'
/** Reason of a phase shown by a cell that was Ready before. */
export const REGRESSED_REASON = 'Regressed'

/** A guest condition as read from `status.conditions`. */
export interface GuestCondition {
  type: string
  status: string
  reason?: string
  message?: string
}

/** What the hook read of a cell's observed SwiftGuest (request.ts reads it defensively). */
export interface GuestView {
  name: string
  uid: string
  /** `status.phase`: Pending, Scheduling, Running, Stopped, Failed (anything else as given). */
  phase: string | undefined
  /** `status.gpu.devices`, each as a string. */
  devices: string[]
  /** `status.gpu.nodeName`, else `status.nodeName`: the infrastructure node running the VM. */
  hostNode: string | undefined
  /** `status.network.interfaces[]` with a name. */
  interfaces: ReadonlyArray<{ name: string; ip?: string }>
  primaryIP: string | undefined
  conditions: readonly GuestCondition[]
  /** The guest carries a deletion timestamp. */
  deleting: boolean
  /** Its `cells.kubeswift.io/template-hash` annotation. */
  templateHash: string | undefined
}

/** What the workload side tells about the pool (observed/unobserved rule, cellpool.md). */
export interface WorkloadState {
  /** Reachable=True and an observedTime less than 2 minutes before now. */
  observed: boolean
  /** `status.observedGeneration` equals the CellNodeSet's `metadata.generation`. */
  generationMatched: boolean
  /** Why it is unobserved (CellNodeSet reason, `Stale`, `NotObserved`), or `Reachable`. */
  reason: string
  message: string
}

/** A cell as decided for this answer: what its scaling plan and its status row both carry. */
export interface DecidedCell {
  index: number
  name: string
  phase: CellPhase
  reason: string
  message: string
  lastTransitionTime: string
  readyOnce: boolean
  failureCount: number
}

/** The cell's state kept in the pool's previous status (`status.cells[]`). */
export interface PreviousCell {
  phase: CellPhase
  reason: string
  message: string
  lastTransitionTime: string | undefined
  readyOnce: boolean
  failureCount: number
  guestUID: string | undefined
  templateHash: string | undefined
}

/** Budgets and expectations from the resolved spec. */
export interface PhaseConfig {
  /** `bootstrap.readyTimeout`, seconds. */
  bootstrapReadyTimeoutSeconds: number
  /** `capacity.readyTimeout`, seconds. */
  capacityReadyTimeoutSeconds: number
  /** `capacity.hami.expectedDevicesPerCell`, default `gpu.count`. */
  expectedDevices: number
  /** `cell.nodeIPFrom`. */
  nodeIPFrom: string | undefined
}

/** The workload cluster's window: an `observedTime` older than this is stale. */
export const OBSERVED_WITHIN_SECONDS = 120

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
 * The phase observation gives (cellpool.md table). `previousPhase` is the phase the cell showed
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
  if (guest.devices.length === 0) {
    if (failedReason !== undefined) return { phase: keptGuestPhase(previousPhase, 'AllocatingGPU'), ...failedReason, paused: false }
    return { phase: 'AllocatingGPU', reason: 'NoDevices', message: 'The guest has no GPU device bound yet.', paused: false }
  }
  if (guest.phase !== 'Running') {
    if (failedReason !== undefined) return { phase: keptGuestPhase(previousPhase, 'GuestProvisioning'), ...failedReason, paused: false }
    return {
      phase: 'GuestProvisioning',
      reason: 'GuestNotRunning',
      message: `The guest's GPU is bound; the guest is ${guest.phase ?? 'without a phase'}.`,
      paused: false
    }
  }
  const nodeIP = nodeAddress(guest, config.nodeIPFrom)
  if (nodeIP === undefined || nodeIP === '') {
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
    // registration, which the agent adopts in the pass that reported it (workload.md): the
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
      message: `No Node of this guest in the workload cluster yet (node address ${nodeIP}).`,
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

/** The phase of a cell with its history applied. */
export interface CellPhaseResult {
  phase: CellPhase
  reason: string
  message: string
  nodeIP?: string
  readyOnce: boolean
  /** Kept from the previous status unless the phase changed (or its clock paused or resumed). */
  lastTransitionTime: string
  /** When the phase's budget runs out (only while it runs). */
  deadline?: Date
  /** This call turned the cell Failed. */
  failedNow: boolean
}

/** `now` as status stamps times (seconds, `Z`). */
export function stamp(now: Date): string {
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z')
}

/** A duration in seconds as people write it (`15m`, `90s`, `1h30m`). */
export function formatSeconds(seconds: number): string {
  if (seconds <= 0) return '0s'
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = Math.round(seconds % 60)
  return `${h > 0 ? `${h}h` : ''}${m > 0 ? `${m}m` : ''}${s > 0 ? `${s}s` : ''}`
}

/** Milliseconds of an RFC 3339 time, or undefined when unreadable. */
export function parseTime(value: string | undefined): number | undefined {
  if (value === undefined) return undefined
  const ms = Date.parse(value)
  return Number.isNaN(ms) ? undefined : ms
}

/**
 * The phase of a cell of the current build: observation, then its history (cellpool.md
 * "Phases"): a Failed cell stays Failed; a cell that was Ready and now shows an earlier phase is
 * `Regressed` and never times out; before the first Ready each phase has its budget, measured
 * from the cell's `lastTransitionTime`, and outliving it fails the cell.
 *
 * `previous` must be the same build's state (the caller drops it when the guest was replaced).
 */
export function cellPhase(input: {
  guest: GuestView | undefined
  row: CellNodeStatus | undefined
  workload: WorkloadState
  config: PhaseConfig
  previous: PreviousCell | undefined
  now: Date
}): CellPhaseResult {
  const { previous, now, config } = input
  const nowStamp = stamp(now)
  if (previous?.phase === 'Failed') {
    return {
      phase: 'Failed',
      reason: previous.reason,
      message: previous.message,
      readyOnce: previous.readyOnce,
      lastTransitionTime: previous.lastTransitionTime ?? nowStamp,
      failedNow: false
    }
  }
  const previousPhase = previous !== undefined && CELL_PHASES.includes(previous.phase) ? previous.phase : undefined
  const seen = observedPhase({ ...input, previousPhase })
  const readyOnce = (previous?.readyOnce ?? false) || seen.phase === 'Ready'
  const wasPaused = previous?.reason === UNOBSERVED_REASON
  const kept =
    previous !== undefined && previous.phase === seen.phase && wasPaused === seen.paused && previous.lastTransitionTime !== undefined
  const lastTransitionTime = kept ? (previous.lastTransitionTime as string) : nowStamp
  const base = { phase: seen.phase, reason: seen.reason, message: seen.message, readyOnce, lastTransitionTime, failedNow: false }
  const withIP = seen.nodeIP !== undefined ? { ...base, nodeIP: seen.nodeIP } : base
  if (seen.phase === 'Ready') return withIP
  if (previous?.readyOnce === true) {
    return { ...withIP, reason: REGRESSED_REASON, message: `The cell was Ready and regressed: ${seen.message}` }
  }
  if (seen.paused) return withIP
  const bootstrap = BOOTSTRAP_PHASES.has(seen.phase)
  const budget = bootstrap ? config.bootstrapReadyTimeoutSeconds : config.capacityReadyTimeoutSeconds
  const since = parseTime(lastTransitionTime) ?? now.getTime()
  const deadline = new Date(since + budget * 1000)
  if (now.getTime() >= deadline.getTime()) {
    const field = bootstrap ? 'bootstrap.readyTimeout' : 'capacity.readyTimeout'
    return {
      ...withIP,
      phase: 'Failed',
      reason: bootstrap ? 'ReadyTimeout' : 'CapacityTimeout',
      message: `The cell stayed ${seen.phase} longer than ${field} (${formatSeconds(budget)}): ${seen.message}`,
      lastTransitionTime: nowStamp,
      failedNow: true
    }
  }
  return { ...withIP, deadline }
}

/**
 * The observed/unobserved rule: the workload cluster is observed when the CellNodeSet's status has
 * `Reachable=True` and an `observedTime` less than 2 minutes before `now`.
 */
export function workloadState(input: {
  hasStatus: boolean
  reachable: { status: string; reason?: string; message?: string } | undefined
  observedTime: string | undefined
  observedGeneration: number | undefined
  generation: number | undefined
  now: Date
}): WorkloadState {
  const generationMatched =
    input.observedGeneration !== undefined && input.generation !== undefined && input.observedGeneration === input.generation
  if (!input.hasStatus) {
    return {
      observed: false,
      generationMatched,
      reason: 'NotObserved',
      message: 'The CellNodeSet has no status: the workload agent is not running or has not served it yet.'
    }
  }
  if (input.reachable?.status !== 'True') {
    const reason = input.reachable?.reason ?? 'NotObserved'
    const message = input.reachable?.message ?? 'The CellNodeSet status has no Reachable condition.'
    return { observed: false, generationMatched, reason, message }
  }
  const at = parseTime(input.observedTime)
  if (at === undefined || input.now.getTime() - at >= OBSERVED_WITHIN_SECONDS * 1000) {
    return {
      observed: false,
      generationMatched,
      reason: 'Stale',
      message: `The workload agent's last observation (${input.observedTime ?? 'none'}) is more than ${OBSERVED_WITHIN_SECONDS / 60} minutes old.`
    }
  }
  return {
    observed: true,
    generationMatched,
    reason: 'Reachable',
    message: input.reachable.message ?? 'The workload agent observes the workload cluster.'
  }
}
