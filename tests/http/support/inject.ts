/**
 * Requests through `app.inject`, shared by the route tests of the hook service: a JSON POST, and
 * the wrongly shaped requests every composite controller's hooks must answer with a 400 naming the
 * field (Metacontroller sends the same envelope to each).
 */
import type { buildApp } from '../../../hooks/server/app.ts'

type App = Pick<Awaited<ReturnType<typeof buildApp>>, 'inject'>

/** What a POST answered: the status code and the JSON body. */
export interface Answer {
  status: number
  body: Record<string, unknown>
}

/** A function that POSTs a JSON payload to a path of `app`. */
export function poster(app: App): (url: string, payload: unknown) => Promise<Answer> {
  return async (url, payload) => {
    const res = await app.inject({ method: 'POST', url, payload: payload as Record<string, unknown> })
    return { status: res.statusCode, body: res.json<Record<string, unknown>>() }
  }
}

/** A request that must answer 400 naming `field`. */
export interface Malformed {
  name: string
  url: string
  payload: unknown
  field: string
}

/**
 * The wrongly shaped sync and finalize requests of the composite controller whose hooks are under
 * `base` (`/hooks/instance`): no children, a parent without a namespace, a spec that is not an
 * object, finalizing that is not a boolean. `parent` is a valid parent of that controller.
 */
export function malformedComposite(base: string, parent: Record<string, unknown>): Malformed[] {
  return [
    { name: 'a sync without children', url: `${base}/sync`, payload: { parent }, field: 'children' },
    {
      name: 'a sync whose parent has no namespace',
      url: `${base}/sync`,
      payload: { parent: { metadata: { name: 'a' }, spec: {} }, children: {} },
      field: 'parent.metadata.namespace'
    },
    {
      name: 'a sync whose spec is not an object',
      url: `${base}/sync`,
      payload: { parent: { ...parent, spec: 'x' }, children: {} },
      field: 'parent.spec'
    },
    {
      name: 'a finalize whose finalizing is not a boolean',
      url: `${base}/finalize`,
      payload: { parent, children: {}, finalizing: 'yes' },
      field: 'finalizing'
    }
  ]
}
