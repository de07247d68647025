/**
 * Every version of the objects of one resource, as the API server's watch delivers them, so a
 * scenario can check a state too brief to be polled for reliably (a Machine the agent releases
 * within a second of its deletion) and that a state never occurred (a Machine that never had a
 * Node). The watch starts at the resourceVersion of a list and resumes after the last event it
 * saw when the server ends the stream; a resumption the server refuses (410 Gone: the events were
 * compacted away) would leave a hole in the history, so {@link History.versions} then throws
 * rather than answer an incomplete one.
 */
import https from 'node:https'
import { resourcePath, type KubeClient, type ResourceRef } from './kube.ts'

/** Scenario reads are loose views, checked by value. */
type Loose = any

/** One watch event: what happened to the object, and the object as it was then. */
export interface Version {
  type: 'ADDED' | 'MODIFIED' | 'DELETED'
  object: Loose
}

/** The versions recorded so far, and the end of the recording. */
export interface History {
  /** Every version since the recording began, in order, of the objects named `name` (all without a name). */
  versions(name?: string): Version[]
  /** Ends the watch. */
  stop(): void
}

/**
 * Starts recording every version of the objects of `ref` (a list reference: namespace and resource)
 * after this moment; `onEvent` is told of each as it arrives.
 */
export async function recordHistory(kube: KubeClient, ref: ResourceRef, onEvent?: (version: Version) => void): Promise<History> {
  const listed = (await kube.request('GET', resourcePath({ ...ref, name: undefined }))).body as Loose
  let resourceVersion = String(listed.metadata.resourceVersion)
  const seen: Version[] = []
  let broken: string | undefined
  let stopped = false
  let request: ReturnType<typeof https.request> | undefined
  const { connection } = kube

  const open = (): void => {
    if (stopped || broken !== undefined) return
    const query = `?watch=true&allowWatchBookmarks=true&resourceVersion=${encodeURIComponent(resourceVersion)}`
    const url = new URL(resourcePath({ ...ref, name: undefined }) + query, connection.server)
    const headers: Record<string, string> = { Accept: 'application/json' }
    if (connection.token !== undefined) headers.Authorization = `Bearer ${connection.token}`
    const options: https.RequestOptions = { headers, rejectUnauthorized: connection.insecureSkipTLSVerify !== true }
    if (connection.ca !== undefined) options.ca = connection.ca
    if (connection.cert !== undefined) options.cert = connection.cert
    if (connection.key !== undefined) options.key = connection.key
    let pending = ''
    request = https.get(url, options, (res) => {
      if (res.statusCode !== 200) {
        broken = `the watch of ${url.pathname} answered HTTP ${String(res.statusCode)}`
        res.resume()
        return
      }
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        pending += chunk
        for (let at = pending.indexOf('\n'); at >= 0; at = pending.indexOf('\n')) {
          const line = pending.slice(0, at).trim()
          pending = pending.slice(at + 1)
          if (line !== '') take(JSON.parse(line))
        }
      })
      res.on('end', () => setTimeout(open, 100))
      res.on('error', () => setTimeout(open, 100))
    })
    request.on('error', () => {
      if (!stopped) setTimeout(open, 100)
    })
  }

  const take = (event: Loose): void => {
    if (event.type === 'ERROR') {
      broken = `the watch lost events: ${JSON.stringify(event.object)}`
      return
    }
    resourceVersion = String(event.object?.metadata?.resourceVersion ?? resourceVersion)
    if (event.type === 'BOOKMARK') return
    const version: Version = { type: event.type, object: event.object }
    seen.push(version)
    onEvent?.(version)
  }

  open()
  return {
    versions: (name) => {
      if (broken !== undefined) throw new Error(broken)
      return seen.filter((v) => name === undefined || v.object?.metadata?.name === name)
    },
    stop: () => {
      stopped = true
      request?.destroy()
    }
  }
}
