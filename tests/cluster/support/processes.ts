// Child processes of the test cluster: started with their output in a log
// file, stopped with SIGTERM then SIGKILL, and never left behind, not even
// when the test process itself is killed.
import { spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync, closeSync, openSync, readFileSync, rmSync } from 'node:fs'

/** A process of the test cluster whose stdout and stderr go to a log file. */
export interface ManagedProcess {
  name: string
  logFile: string
  child: ChildProcess
  /** Settles when the process has exited: its exit code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** Everything still running, so that the exit handlers can end it. */
const running = new Set<ChildProcess>()
/** Directories to remove when the test process ends without stopping its cluster. */
const ownedDirs = new Set<string>()
let handlersInstalled = false

/**
 * Starts `command` with `args`, writing both output streams to `logFile`.
 * Its pid is appended to `pidFile`, which the watchdog reads if this process
 * dies without cleaning up.
 */
export function startProcess(name: string, command: string, args: string[], logFile: string, pidFile: string): ManagedProcess {
  installExitHandlers()
  const fd = openSync(logFile, 'a')
  let child: ChildProcess
  try {
    child = spawn(command, args, { stdio: ['ignore', fd, fd] })
  } finally {
    closeSync(fd)
  }
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child)
      resolve({ code, signal })
    })
    child.once('error', (error) => {
      appendFileSync(logFile, `\n[harness] could not start ${command}: ${error.message}\n`)
      running.delete(child)
      resolve({ code: null, signal: null })
    })
  })
  if (child.pid !== undefined) {
    running.add(child)
    appendFileSync(pidFile, `${child.pid}\n`)
  }
  return { name, logFile, child, exited }
}

/** Sends SIGTERM, then SIGKILL if the process is still there after `graceMs`. */
export async function stopProcess(proc: ManagedProcess, graceMs = 5000): Promise<void> {
  if (proc.child.exitCode !== null || proc.child.signalCode !== null || proc.child.pid === undefined) {
    return
  }
  proc.child.kill('SIGTERM')
  let timer: NodeJS.Timeout | undefined
  const killed = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      proc.child.kill('SIGKILL')
      resolve()
    }, graceMs)
  })
  await Promise.race([proc.exited.then(() => undefined), killed])
  clearTimeout(timer)
  await proc.exited
}

/** The last `lines` lines of a log file, or a note that it cannot be read. */
export function tailLog(logFile: string, lines = 30): string {
  try {
    const text = readFileSync(logFile, 'utf8').trimEnd()
    return text.split('\n').slice(-lines).join('\n')
  } catch (error) {
    return `(cannot read ${logFile}: ${(error as Error).message})`
  }
}

/** Marks a directory for removal should the test process end without cleaning up. */
export function ownDirectory(dir: string): void {
  installExitHandlers()
  ownedDirs.add(dir)
}

/** Forgets a directory that the caller has removed (or chooses to keep). */
export function releaseDirectory(dir: string): void {
  ownedDirs.delete(dir)
}

/**
 * Starts a detached shell that waits for this process to end and then kills
 * every pid listed in `pidFile` and removes `dir` (if given). It covers the one case the
 * exit handlers cannot: this process being killed with SIGKILL (a test
 * runner's timeout, an OOM kill). A normal stop ends the watchdog as well.
 */
export function startWatchdog(dir: string | undefined, pidFile: string): ChildProcess {
  const script = [
    'parent=$1 dir=$2 pids=$3',
    'while kill -0 "$parent" 2>/dev/null; do sleep 1; done',
    'if [ -f "$pids" ]; then while read -r pid; do kill -KILL "$pid" 2>/dev/null; done < "$pids"; fi',
    'if [ -n "$dir" ]; then rm -rf "$dir"; fi'
  ].join('\n')
  const watchdog = spawn('sh', ['-c', script, 'watchdog', String(process.pid), dir ?? '', pidFile], {
    detached: true,
    stdio: 'ignore'
  })
  // Without it the test process would still clean up on every exit but SIGKILL; say so, don't crash.
  watchdog.once('error', (error) => {
    process.stderr.write(`[harness] the cluster watchdog could not start (${error.message}); a SIGKILLed test leaves its cluster running\n`)
  })
  watchdog.unref()
  return watchdog
}

function installExitHandlers(): void {
  if (handlersInstalled) return
  handlersInstalled = true
  // 'exit' also runs after an uncaught exception; only synchronous work is
  // possible there, which is all that killing and removing need.
  process.on('exit', cleanUpNow)
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      cleanUpNow()
      process.removeListener(signal, onSignal)
      // Re-raise, so that the default action (or the test runner's own
      // handler) still ends the process.
      process.kill(process.pid, signal)
    }
    process.on(signal, onSignal)
  }
}

function cleanUpNow(): void {
  for (const child of running) {
    child.kill('SIGKILL')
  }
  running.clear()
  for (const dir of ownedDirs) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3 })
    } catch {
      // A killed process may still be writing into it; the watchdog retries.
    }
  }
  ownedDirs.clear()
}
