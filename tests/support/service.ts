/**
 * The service as a real process, started the way `npm start` starts it (`node --import tsx hooks/main.ts`), or,
 * with GPUHOOKS_SERVICE_DIR set, the built service of that directory (`node dist/hooks/main.js`,
 * as the image runs it), or, with GPUHOOKS_SERVICE_LAUNCHER set, as the module it names says
 * (its `serviceCommand(env)` gives the command that starts the service with those variables: the
 * image tests start it in a container), with its log lines collected and awaitable. The one
 * starter of the service for every layer: the HTTP layer's process tests and the cluster layer's
 * hook service (tests/cluster/support/service.ts) start it here.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { childEnv } from './child-env.ts'

const BUILT = process.env['GPUHOOKS_SERVICE_DIR']
/**
 * Started through `env -u NODE_OPTIONS`: tap puts its process-info loader into NODE_OPTIONS of
 * every process a test spawns, and that loader catches SIGTERM and a dozen other signals in the
 * child, so a child started with it does not meet a signal as the real process does (a SIGTERM
 * before the service's own handlers are installed was survived under tap and fatal outside it).
 */
const COMMAND: [string, string[]] = [
  'env',
  [
    '-u',
    'NODE_OPTIONS',
    process.execPath,
    ...(BUILT === undefined ? ['--import', 'tsx', 'hooks/main.ts'] : [join(BUILT, 'dist', 'hooks', 'main.js')])
  ]
]
const LAUNCHER = process.env['GPUHOOKS_SERVICE_LAUNCHER']
const launcher =
  LAUNCHER === undefined ? undefined : ((await import(LAUNCHER)) as { serviceCommand: (env: Record<string, string>) => [string, string[]] })

/** A started service. */
export interface Started {
  child: ChildProcess
  /** Every log line so far, parsed; a line that is not JSON is kept as `{ unparsed: line }`. */
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

/**
 * The service's own line for a listener that accepts connections (fastify's "Server listening at"
 * comes before the service has started its second listener, so it is not counted).
 */
const LISTENING = /^(hooks|admission) listening/

/**
 * Starts the service with `env` and waits until `readyLines` listeners said they listen, at most
 * `startTimeoutMs` (30 s; the cluster layer, on a machine busy with API servers, gives it more).
 * Every stream and the child have an error handler, so a broken pipe or a failed start fails the
 * start with what was printed instead of crashing the test file.
 */
export async function startService(
  env: Record<string, string>,
  readyLines: number,
  options: { startTimeoutMs?: number } = {}
): Promise<Started> {
  const [command, args] = launcher?.serviceCommand({ ...UNSAMPLED, ...env }) ?? COMMAND
  const child = spawn(command, args, { cwd: BUILT, env: childEnv({ ...UNSAMPLED, ...env }), stdio: ['ignore', 'pipe', 'pipe'] })
  const parsed: Record<string, unknown>[] = []
  const waiters: { msg: RegExp; resolve: (line: Record<string, unknown>) => void }[] = []
  let buffer = ''
  let stderr = ''
  const exit = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)))
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
  child.stderr?.on('error', (err) => (stderr += `\n[harness] stderr: ${err.message}`))
  child.stdout?.on('data', (chunk: Buffer) => {
    buffer += chunk.toString()
    let newline = buffer.indexOf('\n')
    while (newline >= 0) {
      const text = buffer.slice(0, newline)
      let line: Record<string, unknown>
      try {
        line = JSON.parse(text) as Record<string, unknown>
      } catch {
        line = { unparsed: text }
      }
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
    const printed = (): string => `${JSON.stringify(parsed)} ${stderr}`
    const timeoutMs = options.startTimeoutMs ?? 30_000
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`service did not start in ${timeoutMs} ms: ${printed()}`))
    }, timeoutMs)
    const done = (error?: Error): void => {
      clearTimeout(timer)
      child.stdout?.off('data', check)
      child.off('exit', exited)
      if (error === undefined) resolve()
      else reject(error)
    }
    const check = (): void => {
      if (parsed.filter((l) => LISTENING.test(String(l.msg))).length >= readyLines) done()
    }
    const exited = (code: number | null): void => done(new Error(`service exited with ${code}: ${printed()}`))
    child.once('error', (err) => done(new Error(`service could not be started: ${err.message}`)))
    child.stdout?.on('error', (err) => done(new Error(`service stdout failed: ${err.message}`)))
    child.stdout?.on('data', check)
    child.on('exit', exited)
  })
  return { child, lines: () => parsed, logged, exit }
}
