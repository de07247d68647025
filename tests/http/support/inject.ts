/**
 * Requests through `app.inject`, shared by the route tests of the hook service: a JSON POST, and
 * the wrongly shaped requests every composite controller's hooks must answer with a 400 naming the
 * field (Metacontroller sends the same envelope to each).
 */
import { readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'
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

/**
 * {@link poster}, or, with GPUHOOKS_SERVICE_URL set (`http://host:port` of a running service),
 * a POST over the network: to that URL, and for `/admission/` paths to GPUHOOKS_ADMISSION_URL
 * (`https://host:port`), verified with the CA in the file GPUHOOKS_ADMISSION_CA for the name
 * GPUHOOKS_ADMISSION_SERVERNAME, as the API server verifies the webhook. The image tests run the
 * route tests this way against the image.
 */
export function servicePoster(app: App): (url: string, payload: unknown) => Promise<Answer> {
  const hooks = process.env['GPUHOOKS_SERVICE_URL']
  if (hooks === undefined) return poster(app)
  const admission = process.env['GPUHOOKS_ADMISSION_URL']
  const caFile = process.env['GPUHOOKS_ADMISSION_CA']
  const ca = caFile === undefined ? undefined : readFileSync(caFile)
  const servername = process.env['GPUHOOKS_ADMISSION_SERVERNAME']
  return (path, payload) => {
    const secure = path.startsWith('/admission/')
    const base = new URL(secure ? (admission ?? 'https://admission-url-not-set') : hooks)
    const body = JSON.stringify(payload)
    const options = {
      host: base.hostname,
      port: base.port,
      path,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      ...(secure ? { ca, servername } : {})
    }
    return new Promise((resolve, reject) => {
      const req = (secure ? httpsRequest : httpRequest)(options, (res) => {
        let text = ''
        res.on('data', (c: Buffer) => (text += c.toString()))
        res.on('error', reject)
        res.on('end', () => {
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> })
          } catch (error) {
            reject(new Error(`${path} answered ${res.statusCode} with a body that is not JSON: ${text.slice(0, 500)}`, { cause: error }))
          }
        })
      })
      req.on('error', reject)
      req.end(body)
    })
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
