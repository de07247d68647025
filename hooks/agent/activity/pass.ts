/**
 * The activity controller's I/O, thin around decide.ts: a round (one Prometheus query for every
 * InstanceActivity in the cache, then the status writes decide.ts asks for) and a stop pass (for
 * each InstanceActivity that requests a stop: read its Instance and Pod, decide, patch, tell).
 * Neither throws for anything a cluster, Prometheus or an object can do: each failure is reported
 * and the next round or pass tries again.
 */
import type { ActivityApi } from './client.ts'
import { decideStatus, decideStop, readActivity, type Memory, type StatusDecision } from './decide.ts'
import type { QueryPrometheus } from './prometheus.ts'
import type { EventLimiter } from '../runtime/event-limiter.ts'
import { statusCode } from '../runtime/clients.ts'
import { errorText } from '../workload/reachability.ts'
import { asText, ownValue } from '../../k8s/objects.ts'

/** What a round or a stop pass did, for logs and metrics. */
export interface ActivityReport {
  /** InstanceActivities by what the round saw. */
  seen: Partial<Record<StatusDecision['seen'], number>>
  statusWrites: number
  stopped: { key: string; reason: string }[]
  ignored: { key: string; why: string }[]
  notServed: { key: string; why: string }[]
  errors: { key: string; reason: string; message: string }[]
}

/** A report with nothing in it. */
export function emptyReport(): ActivityReport {
  return { seen: {}, statusWrites: 0, stopped: [], ignored: [], notServed: [], errors: [] }
}

/** What a round works with. */
export interface RoundDeps {
  objects: ReadonlyArray<unknown>
  api: ActivityApi
  query: QueryPrometheus
  /** The query this round sends. */
  promQL: string
  source: string
  memory: Map<string, Memory>
  nowMs: number
  roundMs: number
  refreshMs: number
}

/** One observation round: one query, then each InstanceActivity's status when it must be written. */
export async function runRound(deps: RoundDeps): Promise<ActivityReport & { answered: boolean }> {
  const report = emptyReport()
  const answer = await deps.query(deps.promQL)
  const round = { answer, nowMs: deps.nowMs, roundMs: deps.roundMs, refreshMs: deps.refreshMs, source: deps.source }
  const keys = new Set<string>()
  for (const object of deps.objects) {
    const input = readActivity(object)
    if (typeof input === 'string') {
      report.notServed.push({ key: keyText(object), why: input })
      continue
    }
    const key = `${input.namespace}/${input.name}`
    keys.add(key)
    const decision = decideStatus(input, round, deps.memory.get(key))
    deps.memory.set(key, decision.memory)
    report.seen[decision.seen] = (report.seen[decision.seen] ?? 0) + 1
    if (!decision.write) continue
    try {
      await deps.api.patchStatus(input.namespace, input.name, decision.status)
      report.statusWrites += 1
    } catch (error) {
      // Gone since the cache listed it: nothing to write.
      if (statusCode(error) !== 404) report.errors.push({ key, reason: 'StatusWrite', message: errorText(error) })
    }
  }
  for (const key of deps.memory.keys()) if (!keys.has(key)) deps.memory.delete(key)
  return { ...report, answered: answer.ok }
}

/** What a stop pass works with. */
export interface StopDeps {
  objects: ReadonlyArray<unknown>
  api: ActivityApi
  memory: Map<string, Memory>
  limiter: EventLimiter
  nowMs: number
}

/** Carries out the stops requested, once each, and records an Event on each Instance stopped. */
export async function runStops(deps: StopDeps): Promise<ActivityReport & { events: { reason: string; result: string }[] }> {
  const report = { ...emptyReport(), events: [] as { reason: string; result: string }[] }
  for (const object of deps.objects) {
    const input = readActivity(object)
    if (typeof input === 'string' || input.spec.stop?.requested !== true) continue
    const key = `${input.namespace}/${input.name}`
    try {
      const instance = await deps.api.getInstance(input.namespace, input.name)
      const pod = instance === undefined ? undefined : await deps.api.getPod(input.namespace, input.spec.podName)
      const decision = decideStop(input, instance, pod, deps.nowMs)
      if (decision.kind === 'ignore') {
        report.ignored.push({ key, why: decision.why })
        if (decision.podChanged !== undefined)
          deps.memory.set(key, { ...remembered(deps.memory, key, input.spec.podUID), podChanged: decision.podChanged })
        continue
      }
      if (decision.kind !== 'stop') continue
      await deps.api.patchInstance(input.namespace, input.name, decision.patch)
      report.stopped.push({ key, reason: decision.reason })
      report.events.push({ reason: decision.reason, result: await tell(deps, decision) })
    } catch (error) {
      const code = statusCode(error)
      // 422: a test of the patch failed (the Instance changed since it was read); the next pass reads it again.
      report.errors.push({ key, reason: code === 422 || code === 409 ? 'StopConflict' : 'StopWrite', message: errorText(error) })
    }
  }
  return report
}

function remembered(memory: Map<string, Memory>, key: string, podUID: string): Memory {
  const entry = memory.get(key)
  return entry?.podUID === podUID ? entry : { podUID }
}

/** Writes the stop's Event within the limiter's bounds; answers the result for the metric. */
async function tell(deps: StopDeps, stop: Extract<ReturnType<typeof decideStop>, { kind: 'stop' }>): Promise<string> {
  const eventKey = { objectUid: stop.instance.uid, type: 'Normal', reason: stop.reason, message: stop.message }
  const admission = deps.limiter.admit(eventKey, deps.nowMs)
  if (admission.action === 'limited') return 'limited'
  const now = new Date(deps.nowMs)
  try {
    if (admission.action === 'recount') {
      try {
        await deps.api.recountEvent(stop.instance.namespace, admission.name, admission.count, now)
        deps.limiter.wrote(eventKey, admission.name, admission.count, deps.nowMs)
        return 'counted'
      } catch (error) {
        if (statusCode(error) !== 404) throw error
      }
    }
    const name = await deps.api.event(stop.instance, stop.reason, stop.message, now)
    if (name !== undefined) deps.limiter.wrote(eventKey, name, 1, deps.nowMs)
    return 'created'
  } catch {
    return 'failed'
  }
}

function keyText(object: unknown): string {
  const metadata = ownValue(object, 'metadata')
  return `${asText(ownValue(metadata, 'namespace')) ?? ''}/${asText(ownValue(metadata, 'name')) ?? ''}`.slice(0, 300)
}
