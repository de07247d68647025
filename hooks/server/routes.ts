/**
 * The route table: every hook path of docs/README.md ("Hook endpoints"), each bound to its request schema and its
 * pure function. Adding a controller means adding its rows here.
 */
import { hookRoute, type HookRoute } from './app.ts'
import { AdmissionReviewSchema, admissionResponse } from '../admission/review.ts'
import { InstanceCustomizeRequestSchema, customize as instanceCustomize } from '../instance/customize.ts'
import { InstanceSyncRequestSchema } from '../instance/request.ts'
import { sync as instanceSync } from '../instance/sync.ts'
import { finalize as instanceFinalize } from '../instance/finalize.ts'
import { reviewInstance } from '../instance/admission.ts'
import { reviewCellPool } from '../cellpool/admission.ts'
import { CellPoolCustomizeRequestSchema, customize as cellpoolCustomize } from '../cellpool/customize.ts'
import { CellPoolSyncRequestSchema } from '../cellpool/request.ts'
import { sync as cellpoolSync } from '../cellpool/sync.ts'
import { finalize as cellpoolFinalize } from '../cellpool/finalize.ts'
import { IsolationCustomizeRequestSchema, customize as isolationCustomize } from '../isolation/customize.ts'
import { IsolationSyncRequestSchema, sync as isolationSync } from '../isolation/sync.ts'

/** All routes of the service. */
export const routes: readonly HookRoute[] = [
  hookRoute({
    path: '/hooks/instance/customize',
    hook: 'instance_customize',
    surface: 'hooks',
    schema: InstanceCustomizeRequestSchema,
    handle: (body) => instanceCustomize(body)
  }),
  hookRoute({
    path: '/hooks/instance/sync',
    hook: 'instance_sync',
    surface: 'hooks',
    schema: InstanceSyncRequestSchema,
    handle: (body, now) => instanceSync(body, now)
  }),
  hookRoute({
    path: '/hooks/instance/finalize',
    hook: 'instance_finalize',
    surface: 'hooks',
    schema: InstanceSyncRequestSchema,
    handle: (body, now) => instanceFinalize(body, now)
  }),
  hookRoute({
    path: '/hooks/isolation/customize',
    hook: 'isolation_customize',
    surface: 'hooks',
    schema: IsolationCustomizeRequestSchema,
    handle: (body) => isolationCustomize(body)
  }),
  hookRoute({
    path: '/hooks/isolation/sync',
    hook: 'isolation_sync',
    surface: 'hooks',
    schema: IsolationSyncRequestSchema,
    handle: (body) => isolationSync(body)
  }),
  hookRoute({
    path: '/hooks/cellpool/customize',
    hook: 'cellpool_customize',
    surface: 'hooks',
    schema: CellPoolCustomizeRequestSchema,
    handle: (body) => cellpoolCustomize(body)
  }),
  hookRoute({
    path: '/hooks/cellpool/sync',
    hook: 'cellpool_sync',
    surface: 'hooks',
    schema: CellPoolSyncRequestSchema,
    handle: (body, now) => cellpoolSync(body, now)
  }),
  hookRoute({
    path: '/hooks/cellpool/finalize',
    hook: 'cellpool_finalize',
    surface: 'hooks',
    schema: CellPoolSyncRequestSchema,
    handle: (body, now) => cellpoolFinalize(body, now)
  }),
  hookRoute({
    path: '/admission/cellpool',
    hook: 'admission_cellpool',
    surface: 'admission',
    schema: AdmissionReviewSchema,
    handle: (body) => admissionResponse(body.request.uid, reviewCellPool(body.request))
  }),
  hookRoute({
    path: '/admission/instance',
    hook: 'admission_instance',
    surface: 'admission',
    schema: AdmissionReviewSchema,
    handle: (body) => admissionResponse(body.request.uid, reviewInstance(body.request))
  })
]
