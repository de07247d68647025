/**
 * Raw HTTP/1.1 over a `net` socket, for what a well-behaved client never sends: pipelined
 * requests in one write, a body cut short, a connection dropped mid-body. What comes back is read
 * as text and split into responses.
 */
import { connect, type Socket } from 'node:net'

/** One response read off a raw connection. */
export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

/** A raw connection: what it has read so far, and how it ended. */
export interface Raw {
  socket: Socket
  text: () => string
  /** Resolves once `count` whole responses have been read (or the connection closed first). */
  responses: (count: number) => Promise<RawResponse[]>
  /** Resolves once the connection is closed, by either side. */
  closed: Promise<void>
  /** How the server ended it: a FIN (`end`) or a reset (`error`); unresolved while it is open. */
  ended: Promise<'end' | 'error'>
}

/** Splits `text` into the whole responses it holds; a response without a length runs to the close. */
export function parseResponses(text: string, closed: boolean): RawResponse[] {
  const found: RawResponse[] = []
  let rest = text
  for (;;) {
    const head = rest.indexOf('\r\n\r\n')
    if (head < 0) return found
    const [statusLine = '', ...lines] = rest.slice(0, head).split('\r\n')
    const headers: Record<string, string> = {}
    for (const line of lines) {
      const colon = line.indexOf(':')
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
    }
    const status = Number(/^HTTP\/1\.1 (\d+)/.exec(statusLine)?.[1] ?? 'NaN')
    const length = headers['content-length']
    const start = head + 4
    if (length === undefined) {
      if (!closed) return found
      found.push({ status, headers, body: rest.slice(start) })
      return found
    }
    const end = start + Number(length)
    if (rest.length < end) return found
    found.push({ status, headers, body: rest.slice(start, end) })
    rest = rest.slice(end)
  }
}

/** Opens a raw connection to `port` on loopback. */
export function openRaw(port: number): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    let isClosed = false
    // latin1: one character a byte, so a content-length counts characters.
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')))
    const closed = new Promise<void>((resolveClosed) => socket.once('close', () => resolveClosed()))
    void closed.then(() => (isClosed = true))
    const ended = new Promise<'end' | 'error'>((resolveEnd) => {
      socket.once('end', () => resolveEnd('end'))
      socket.on('error', () => resolveEnd('error'))
    })
    const responses = async (count: number): Promise<RawResponse[]> => {
      for (;;) {
        const found = parseResponses(text, isClosed)
        if (found.length >= count || isClosed) return found
        await Promise.race([new Promise<void>((r) => socket.once('data', () => r())), closed])
      }
    }
    socket.once('connect', () => resolve({ socket, text: () => text, responses, closed, ended }))
    socket.once('error', reject)
  })
}

/** A POST of `body` to `path` with its `content-length` (or `length` where a test lies about it). */
export function post(path: string, body: string, length = Buffer.byteLength(body)): string {
  return `POST ${path} HTTP/1.1\r\nHost: gpuhooks\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n${body}`
}

/** A namespace customize body of exactly `size` bytes: valid JSON padded with spaces. */
export function padded(size: number): string {
  const json = JSON.stringify({ controller: {}, parent: { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a' } } })
  return json + ' '.repeat(size - Buffer.byteLength(json))
}

/** Sends one request on a connection of its own and reads its answer. */
export async function exchange(port: number, request: string): Promise<RawResponse> {
  const raw = await openRaw(port)
  raw.socket.write(request)
  const [answer] = await raw.responses(1)
  raw.socket.destroy()
  if (answer === undefined) throw new Error(`no answer; read ${JSON.stringify(raw.text().slice(0, 200))}`)
  return answer
}
