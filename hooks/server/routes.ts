/**
 * The route table, derived from the controllers' descriptors (hooks/controllers.ts): per
 * controller `/hooks/<name>/customize`, `sync` and (where it has one) `finalize`, each bound to
 * its request schema and pure function, sync and finalize to the rule their answers must obey
 * (answer-guard.ts); then `/admission/<name>` for every controller with an admission webhook.
 * Adding a controller is adding its descriptor.
 */
import { hookRoute, type HookRoute } from './app.ts'
import { DEFAULT_CONTEXT, type ControllerDescriptor, type Hook, type HookContext } from '../metacontroller/descriptor.ts'
import type { TSchema } from '@sinclair/typebox'
import { CONTROLLERS } from '../controllers.ts'

/** The hook routes of one controller, in the order customize, sync, finalize. */
function controllerRoutes(controller: ControllerDescriptor, context: HookContext): HookRoute[] {
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
            handle: (body, now) => hook.run(body, now, context),
            guard: guarded ? controller.rule : null
          })
        ]
  )
}

/** The admission route of a controller that has one. */
function admissionRoutes(controller: ControllerDescriptor, context: HookContext): HookRoute[] {
  const admission = controller.admission
  if (admission === undefined) return []
  return [
    hookRoute({
      path: `/admission/${controller.name}`,
      hook: `admission_${controller.name}`,
      surface: 'admission',
      schema: admission.request,
      handle: (body, now) => admission.run(body, now, context),
      guard: null
    })
  ]
}

/** All routes of the service, every hook given `context`. */
export function buildRoutes(context: HookContext = DEFAULT_CONTEXT): readonly HookRoute[] {
  return [...CONTROLLERS.flatMap((c) => controllerRoutes(c, context)), ...CONTROLLERS.flatMap((c) => admissionRoutes(c, context))]
}

/** All routes of a service whose environment sets no context. */
export const routes: readonly HookRoute[] = buildRoutes()
