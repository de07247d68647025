/**
 * The service as a real process, started the way `npm start` starts it (tsx hooks/main.ts), with
 * its JSON log lines collected and awaitable.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { childEnv } from '../../support/child-env.ts'

const TSX = join(process.cwd(), 'node_modules', '.bin', 'tsx')

/** A started service. */
export interface Started {
  child: ChildProcess
  /** Every log line so far, parsed. */
  lines: () => Record<string, unknown>[]
  /** Resolves with the first log line whose `msg` matches (already logged or still to come). */
  logged: (msg: RegExp) => Promise<Record<string, unknown>>
  /** The exit code (null when killed by a signal). */
  exit: Promise<number | null>
}

/**
 * The sampled load bounds off unless a test sets them: they depend on how busy the machine is,
 * and a test must answer the same on a loaded CI runner.
 */
const UNSAMPLED = { MAX_EVENT_LOOP_DELAY_MS: '0', MAX_HEAP_USED_BYTES: '0' }

/** Starts the service with `env` and waits until `readyLines` listeners said they listen. */
export async function startService(env: Record<string, string>, readyLines: number): Promise<Started> {
  const child = spawn(TSX, ['hooks/main.ts'], { env: childEnv({ ...UNSAMPLED, ...env }), stdio: ['ignore', 'pipe', 'pipe'] })
  const parsed: Record<string, unknown>[] = []
  const waiters: { msg: RegExp; resolve: (line: Record<string, unknown>) => void }[] = []
  let buffer = ''
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString()
    let newline = buffer.indexOf('\n')
    while (newline >= 0) {
      const line = JSON.parse(buffer.slice(0, newline)) as Record<string, unknown>
      parsed.push(line)
      for (const w of waiters.filter((w) => w.msg.test(String(line.msg)))) {
        waiters.splice(waiters.indexOf(w), 1)
        w.resolve(line)
      }
      buffer = buffer.slice(newline + 1)
      newline = buffer.indexOf('\n')
    }
  })
  const logged = (msg: RegExp): Promise<Record<string, unknown>> => {
    const found = parsed.find((l) => msg.test(String(l.msg)))
    if (found !== undefined) return Promise.resolve(found)
    return new Promise((resolve) => waiters.push({ msg, resolve }))
  }
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start: ${JSON.stringify(parsed)}`)), 30000)
    const check = (): void => {
      if (parsed.filter((l) => /listening/.test(String(l.msg))).length >= readyLines) {
        clearTimeout(timer)
        child.stdout?.off('data', check)
        child.off('exit', failed)
        resolve()
      }
    }
    const failed = (code: number | null): void => reject(new Error(`service exited with ${code}: ${JSON.stringify(parsed)}`))
    child.stdout?.on('data', check)
    child.on('exit', failed)
  })
  return { child, lines: () => parsed, logged, exit }
}
