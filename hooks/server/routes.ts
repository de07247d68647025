/**
 * The route table, derived from the controllers' descriptors (hooks/controllers.ts): per
 * controller `/hooks/<name>/customize`, `sync` and (where it has one) `finalize`, each bound to
 * its request schema and pure function, sync and finalize to the rule their answers must obey
 * (answer-guard.ts); then `/admission/<name>` for every controller with an admission webhook.
 * Adding a controller is adding its descriptor.
 */
import { hookRoute, type HookRoute } from './app.ts'
import type { ControllerDescriptor, Hook } from '../metacontroller/descriptor.ts'
import type { TSchema } from '@sinclair/typebox'
import { CONTROLLERS } from '../controllers.ts'

/** The hook routes of one controller, in the order customize, sync, finalize. */
function controllerRoutes(controller: ControllerDescriptor): HookRoute[] {
  const hooks: Array<[string, Hook<TSchema, unknown> | undefined, boolean]> = [
    ['customize', controller.customize, false],
    ['sync', controller.sync, true],
    ['finalize', controller.finalize, true]
  ]
  return hooks.flatMap(([step, hook, guarded]) =>
    hook === undefined
      ? []
      : [
          hookRoute({
            path: `/hooks/${controller.name}/${step}`,
            hook: `${controller.name}_${step}`,
            surface: 'hooks',
            schema: hook.request,
            handle: (body, now) => hook.run(body, now),
            guard: guarded ? controller.rule : null
          })
        ]
  )
}

/** The admission route of a controller that has one. */
function admissionRoutes(controller: ControllerDescriptor): HookRoute[] {
  const admission = controller.admission
  if (admission === undefined) return []
  return [
    hookRoute({
      path: `/admission/${controller.name}`,
      hook: `admission_${controller.name}`,
      surface: 'admission',
      schema: admission.request,
      handle: (body, now) => admission.run(body, now),
      guard: null
    })
  ]
}

/** All routes of the service. */
export const routes: readonly HookRoute[] = [...CONTROLLERS.flatMap(controllerRoutes), ...CONTROLLERS.flatMap(admissionRoutes)]
