/**
 * InstanceActivity (`worker.gpustack.ai/v1alpha1`, namespaced): the child of an Instance that
 * carries the GPU activity the workload agent observes and the stop the Instance hook requests
 * (docs/lifecycle.md). One per Instance whose type has `spec.lifecycle` and whose Pod runs, named
 * after the Instance and owned by it.
 *
 * Two writers, each of one half, as for a CellNodeSet:
 * - `spec`: the Instance sync hook, through Metacontroller (only Metacontroller's service account
 *   may change it: ValidatingAdmissionPolicy `gpuhooks-instance-activity-writers`).
 * - `status`: the agent's activity controller, through the status subresource (only the agent's
 *   service account may write it: the same policy).
 *
 * The agent observes every Instance in one Prometheus query per round, the maximum over the round
 * of `gpustack_instance_accelerator_cores_utilization_percent` by namespace, Instance name and uid,
 * so the window it observes is its round: no per-Instance window is asked for. The threshold is
 * the type's, so it is in the spec.
 */
import { Type, type Static } from '@sinclair/typebox'
import { conditionSchema, CustomResource, StringEnum, listMap } from './kit.ts'
import { DNS_SUBDOMAIN_PATTERN } from '../k8s/names.ts'

/** Type key of InstanceActivities in a v2 hook request. */
export const INSTANCE_ACTIVITY_KEY = 'InstanceActivity.worker.gpustack.ai/v1alpha1'

/**
 * What the agent writes on an Instance it stopped: `<Idle|MaxRunDuration> <RFC 3339 time>`. The
 * hook reads it (parsed values only) for `status.lifecycle.stoppedBy` while `spec.stop` is true.
 */
export const STOPPED_BY_ANNOTATION = 'gpustack.ai/stopped-by'

/** Why the hook asks for a stop (docs/lifecycle.md). */
export const STOP_REASONS = ['Idle', 'MaxRunDuration'] as const
export type StopReason = (typeof STOP_REASONS)[number]

/** The reasons of the `Observed` condition the agent writes. */
export const OBSERVED_REASONS = [
  /** Prometheus answered and had a series for the Instance. */
  'Observed',
  /** Prometheus could not be reached or answered an error. */
  'PrometheusUnreachable',
  /** Prometheus answered without a series for the Instance. */
  'NoSeries',
  /** The spec's Pod is not the one running (a restart the agent saw before the hook did). */
  'PodChanged'
] as const

const UID = { maxLength: 128, pattern: '^[A-Za-z0-9-]+$' }
const TIME = { format: 'date-time' }

/** What the hook asks of the agent. */
export const InstanceActivitySpecSchema = Type.Object(
  {
    instanceUID: Type.String({ ...UID, description: 'The uid of the Instance this object observes.' }),
    podName: Type.String({ pattern: DNS_SUBDOMAIN_PATTERN, maxLength: 253, description: "The name of the Instance's Pod." }),
    podUID: Type.String({ ...UID, description: "The uid of the Instance's Pod: an observation or a stop applies to this Pod only." }),
    idleThreshold: Type.Integer({
      minimum: 0,
      maximum: 100,
      description: 'Percent of GPU cores at or below which an accelerator counts as idle (the type’s spec.lifecycle.idleThreshold).'
    }),
    noticeTime: Type.Optional(
      Type.String({
        ...TIME,
        description:
          "When the hook first said the stop was scheduled (the Instance's condition StopScheduled True) for this Pod: " +
          'no stop is requested before stopNotice after it.'
      })
    ),
    postponement: Type.Optional(
      Type.Object(
        {
          until: Type.String({ ...TIME, description: 'The annotation gpustack.ai/keep-running-until as parsed.' }),
          firstObservedTime: Type.String({
            ...TIME,
            description: 'When the hook first saw this value: the postponement holds at most maxPostpone after it.'
          })
        },
        { description: "The Instance's postponement as the hook first saw it." }
      )
    ),
    stop: Type.Optional(
      Type.Object(
        {
          requested: Type.Boolean({ description: 'The hook asks the agent to stop the Instance (spec.stop: true).' }),
          reason: StringEnum(STOP_REASONS, { description: 'Idle or MaxRunDuration.' }),
          at: Type.String({ ...TIME, description: 'When the stop became due.' })
        },
        { description: 'Present once the hook has decided that the Instance stops.' }
      )
    )
  },
  { description: 'Written by the Instance hook through Metacontroller only.' }
)
export type InstanceActivitySpec = Static<typeof InstanceActivitySpecSchema>

/** What the agent observed. */
export const InstanceActivityStatusSchema = Type.Object(
  {
    podUID: Type.Optional(Type.String({ ...UID, description: 'The Pod uid of the spec this observation was made for.' })),
    lastActiveTime: Type.Optional(
      Type.String({ ...TIME, description: 'The last time any accelerator of the Instance was above the threshold.' })
    ),
    observedTime: Type.Optional(Type.String({ ...TIME, description: 'When the agent last completed an observation.' })),
    roundSeconds: Type.Optional(
      Type.Integer({ minimum: 1, maximum: 86400, description: "The agent's round, seconds: an observation older than three is stale." })
    ),
    source: Type.Optional(Type.String({ maxLength: 1024, description: 'Where the observation came from: the query and the server.' })),
    conditions: Type.Optional(
      Type.Array(conditionSchema('Observed: the agent has a current observation of the Instance.'), {
        maxItems: 8,
        description: 'Observed, the one condition.',
        ...listMap('type')
      })
    )
  },
  { description: 'Written by the agent through the status subresource only.' }
)
export type InstanceActivityStatus = Static<typeof InstanceActivityStatusSchema>

/** InstanceActivity as stored. */
export const InstanceActivitySchema = CustomResource(
  { spec: Type.Optional(InstanceActivitySpecSchema), status: Type.Optional(InstanceActivityStatusSchema) },
  { description: "An Instance's observed GPU activity and the stop its lifecycle asks for." }
)
export type InstanceActivity = Static<typeof InstanceActivitySchema>
