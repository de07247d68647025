/**
 * The route table: every hook path of the spec README, each bound to its request schema, its
 * pure function and, for sync and finalize, the rule its answers must obey (answer-guard.ts).
 * Adding a controller means adding its rows here.
 */
import { hookRoute, type HookRoute } from './app.ts'
import { AdmissionReviewSchema, admissionResponse } from '../admission/review.ts'
import { InstanceCustomizeRequestSchema, customize as instanceCustomize } from '../instance/customize.ts'
import { InstanceSyncRequestSchema } from '../instance/request.ts'
import { sync as instanceSync } from '../instance/sync.ts'
import { finalize as instanceFinalize } from '../instance/finalize.ts'
import { reviewInstance } from '../instance/admission.ts'
import { sync as cellpoolSync, reviewCellPool, customize as cellpoolCustomize, finalize as cellpoolFinalize } from '../cellpool/hooks.ts'
import { IsolationCustomizeRequestSchema, customize as isolationCustomize } from '../isolation/customize.ts'
import { IsolationSyncRequestSchema, sync as isolationSync } from '../isolation/sync.ts'
import { INSTANCE_CHILD_RULE } from '../instance/answer-rule.ts'
import { ISOLATION_ATTACHMENT_RULE } from '../isolation/answer-rule.ts'
import { CELL_POOL_CHILD_RULE } from '../cellpool/request/answer-rule.ts'
import { CellPoolCustomizeRequestSchema, CellPoolSyncRequestSchema } from '../cellpool/model/request.ts'

/** All routes of the service. */
export const routes: readonly HookRoute[] = [
  hookRoute({
    path: '/hooks/instance/customize',
    hook: 'instance_customize',
    surface: 'hooks',
    schema: InstanceCustomizeRequestSchema,
    handle: (body) => instanceCustomize(body),
    guard: null
  }),
  hookRoute({
    path: '/hooks/instance/sync',
    hook: 'instance_sync',
    surface: 'hooks',
    schema: InstanceSyncRequestSchema,
    handle: (body, now) => instanceSync(body, now),
    guard: INSTANCE_CHILD_RULE
  }),
  hookRoute({
    path: '/hooks/instance/finalize',
    hook: 'instance_finalize',
    surface: 'hooks',
    schema: InstanceSyncRequestSchema,
    handle: (body, now) => instanceFinalize(body, now),
    guard: INSTANCE_CHILD_RULE
  }),
  hookRoute({
    path: '/hooks/isolation/customize',
    hook: 'isolation_customize',
    surface: 'hooks',
    schema: IsolationCustomizeRequestSchema,
    handle: (body) => isolationCustomize(body),
    guard: null
  }),
  hookRoute({
    path: '/hooks/isolation/sync',
    hook: 'isolation_sync',
    surface: 'hooks',
    schema: IsolationSyncRequestSchema,
    handle: (body) => isolationSync(body),
    guard: ISOLATION_ATTACHMENT_RULE
  }),
  hookRoute({
    path: '/hooks/cellpool/customize',
    hook: 'cellpool_customize',
    surface: 'hooks',
    schema: CellPoolCustomizeRequestSchema,
    handle: (body) => cellpoolCustomize(body),
    guard: null
  }),
  hookRoute({
    path: '/hooks/cellpool/sync',
    hook: 'cellpool_sync',
    surface: 'hooks',
    schema: CellPoolSyncRequestSchema,
    handle: (body, now) => cellpoolSync(body, now),
    guard: CELL_POOL_CHILD_RULE
  }),
  hookRoute({
    path: '/hooks/cellpool/finalize',
    hook: 'cellpool_finalize',
    surface: 'hooks',
    schema: CellPoolSyncRequestSchema,
    handle: (body, now) => cellpoolFinalize(body, now),
    guard: CELL_POOL_CHILD_RULE
  }),
  hookRoute({
    path: '/admission/cellpool',
    hook: 'admission_cellpool',
    surface: 'admission',
    schema: AdmissionReviewSchema,
    handle: (body) => admissionResponse(body.request.uid, reviewCellPool(body.request)),
    guard: null
  }),
  hookRoute({
    path: '/admission/instance',
    hook: 'admission_instance',
    surface: 'admission',
    schema: AdmissionReviewSchema,
    handle: (body) => admissionResponse(body.request.uid, reviewInstance(body.request)),
    guard: null
  })
]
