/**
 * The activity controller of the agent (docs/workload.md, "Instance activity"): while this replica
 * may act, a round every `roundMs` (with `PROMETHEUS_URL`: one query for every InstanceActivity
 * in the cache and the status writes it calls for), and a stop pass after each round and at once
 * when an InstanceActivity that requests a stop is added or changed (with `ACTIVITY_STOPS`). It
 * shares the agent's leadership, Event limits and metrics.
 */
import type { LogTo } from '../../logger.ts'
import { Sleeper, type Clock } from '../runtime/clock.ts'
import type { ObjectCache } from '../model/apis.ts'
import type { AgentMetrics } from '../runtime/metrics.ts'
import { EventLimiter } from '../runtime/event-limiter.ts'
import { INACTIVE_POLL_MS } from '../runtime/loop.ts'
import type { ActivityConfig } from '../runtime/config.ts'
import { ownValue } from '../../k8s/objects.ts'
import type { ActivityApi } from './client.ts'
import type { Memory } from './decide.ts'
import { runRound, runStops, type ActivityReport } from './pass.ts'
import { activityQuery, type QueryPrometheus } from './prometheus.ts'

/** What the controller works with. */
export interface ActivityControllerDeps {
  activities: ObjectCache
  api: ActivityApi
  /** Undefined: no observation (no `PROMETHEUS_URL`). */
  query: QueryPrometheus | undefined
  config: ActivityConfig
  active(): boolean
  clock: Clock
  metrics: AgentMetrics
  log: LogTo<'debug' | 'info' | 'warn' | 'error'>
}

/** The activity controller of one agent process. */
export class ActivityController {
  private readonly sleeper: Sleeper
  private readonly memory = new Map<string, Memory>()
  private readonly limiter = new EventLimiter()
  private stopping = false
  private stopsPending = false
  private done: Promise<void> = Promise.resolve()

  constructor(private readonly deps: ActivityControllerDeps) {
    this.sleeper = new Sleeper(deps.clock)
  }

  /** Informer handler: an InstanceActivity was added, changed or deleted. */
  changed(object: unknown): void {
    if (this.deps.config.stops && ownValue(ownValue(ownValue(object, 'spec'), 'stop'), 'requested') === true) {
      this.stopsPending = true
      this.sleeper.wake()
    }
  }

  /** Looks again at once whether it may act (call on a change of leadership). */
  wake(): void {
    this.sleeper.wake()
  }

  /** The loop, until `stop()`. */
  run(): Promise<void> {
    this.done = this.loop()
    return this.done
  }

  /** Takes no more work; resolves once the round in progress is done. */
  async stop(): Promise<void> {
    this.stopping = true
    this.sleeper.wake()
    await this.done
  }

  private async loop(): Promise<void> {
    const { clock, config } = this.deps
    let nextRound = clock.now()
    while (!this.stopping) {
      if (!this.deps.active()) {
        await this.sleeper.sleep(INACTIVE_POLL_MS)
        continue
      }
      const roundDue = clock.now() >= nextRound
      if (roundDue) {
        nextRound = clock.now() + config.roundMs
        if (this.deps.query !== undefined) await this.observe(this.deps.query)
      }
      if (config.stops && (roundDue || this.stopsPending)) {
        this.stopsPending = false
        await this.carryOutStops()
      }
      if (this.stopping) break
      await this.sleeper.sleep(Math.max(0, nextRound - clock.now()))
    }
  }

  private async observe(query: QueryPrometheus): Promise<void> {
    const { clock, config, metrics, api } = this.deps
    const started = clock.now()
    // Twice the round: a recording rule evaluated once a round always has a sample in the window.
    const promQL = activityQuery(2 * Math.round(config.roundMs / 1000))
    const report = await runRound({
      objects: this.deps.activities.list(),
      api,
      query: async (q) => {
        const answer = await query(q)
        metrics.activity.querySeconds.observe((clock.now() - started) / 1000)
        if (!answer.ok) metrics.activity.queryFailures.inc()
        return answer
      },
      promQL,
      source: `${config.prometheusURL ?? ''} ${promQL}`,
      memory: this.memory,
      nowMs: started,
      roundMs: config.roundMs,
      refreshMs: config.refreshMs
    })
    for (const state of ['active', 'idle', 'noSeries', 'unreachable', 'podChanged'] as const) {
      metrics.activity.instances.set({ state }, report.seen[state] ?? 0)
    }
    metrics.activity.statusWrites.inc(report.statusWrites)
    this.logReport('activity round', report, { answered: report.answered })
  }

  private async carryOutStops(): Promise<void> {
    const { clock, metrics, api } = this.deps
    const report = await runStops({
      objects: this.deps.activities.list(),
      api,
      memory: this.memory,
      limiter: this.limiter,
      nowMs: clock.now()
    })
    for (const stop of report.stopped) metrics.activity.stops.inc({ reason: stop.reason })
    if (report.ignored.length > 0) metrics.activity.stopsIgnored.inc(report.ignored.length)
    for (const event of report.events) metrics.events.inc(event)
    if (report.stopped.length + report.ignored.length + report.errors.length > 0) this.logReport('activity stops', report, {})
  }

  private logReport(message: string, report: ActivityReport, extra: Record<string, unknown>): void {
    for (const error of report.errors) this.deps.metrics.errors.inc({ reason: error.reason })
    const level = report.errors.length > 0 || report.ignored.length > 0 ? 'warn' : report.stopped.length > 0 ? 'info' : 'debug'
    this.deps.log[level]({ ...extra, ...report }, message)
  }
}
