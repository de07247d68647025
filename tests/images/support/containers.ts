/**
 * Containers and Pods a test file starts, labelled with its process id so that it removes them
 * at the end (or, if it was killed, the next test file removes them once that process is gone),
 * and the waits the tests use: on a log line, on a port answering; never on a fixed time.
 */
import { spawn } from 'node:child_process'
import { readFileSync, readdirSync, readlinkSync } from 'node:fs'
import { connect } from 'node:net'
import { alive } from '../../support/ports.ts'
import { CommandError, containersEnv, podman } from './podman.ts'

/** The label every container and Pod of this process carries. */
export const OWNER_LABEL = 'gpuhooks.test.owner'
export const OWNED = `--label=${OWNER_LABEL}=${process.pid}`

async function ownersOf(kind: 'pod' | 'container'): Promise<{ id: string; owner: number }[]> {
  const args = kind === 'pod' ? ['pod', 'ps'] : ['ps', '--all']
  const listed = JSON.parse(await podman([...args, '--format', 'json', '--filter', `label=${OWNER_LABEL}`])) as {
    Id: string
    Labels?: Record<string, string>
  }[]
  return listed.map((entry) => ({ id: entry.Id, owner: Number(entry.Labels?.[OWNER_LABEL]) }))
}

/**
 * Removes the Pods and containers of this process, and those of test processes that are gone.
 * Others' (a test file running beside this one) stay.
 */
export async function removeContainers(): Promise<void> {
  const mine = (owner: number): boolean => owner === process.pid || !Number.isSafeInteger(owner) || !alive(owner)
  for (const pod of (await ownersOf('pod')).filter((p) => mine(p.owner)))
    await podman(['pod', 'rm', '--force', pod.id]).catch(() => undefined)
  for (const c of (await ownersOf('container')).filter((p) => mine(p.owner))) await podman(['rm', '--force', c.id]).catch(() => undefined)
}

/** `podman inspect` of one container. */
export async function inspect(container: string): Promise<Record<string, any>> {
  const [entry] = JSON.parse(await podman(['container', 'inspect', container])) as Record<string, any>[]
  if (entry === undefined) throw new Error(`no container ${container}`)
  return entry
}

/** The container's address on `network`. */
export async function addressOf(container: string, network: string): Promise<string> {
  const address = (await inspect(container)).NetworkSettings?.Networks?.[network]?.IPAddress as string | undefined
  if (address === undefined || address === '') throw new Error(`container ${container} has no address on ${network}`)
  return address
}

/** The host PID of the container's first process (0 when it is not running). */
export async function hostPid(container: string): Promise<number> {
  return Number((await inspect(container)).State?.Pid ?? 0)
}

/** A process of a PID namespace, seen from the host. */
export interface NamespacedProcess {
  /** Its PID on the host, where its /proc/<pid>/status can be read. */
  host: number
  /** Its PID in the namespace. */
  inNs: number
  /** Its command name (/proc/<pid>/comm). */
  comm: string
}

/** The processes of the PID namespace `pidNs` (a /proc/<pid>/ns/pid link, `pid:[...]`) now. */
export function processesIn(pidNs: string): NamespacedProcess[] {
  const found: NamespacedProcess[] = []
  for (const entry of readdirSync('/proc').filter((e) => /^[0-9]+$/.test(e))) {
    try {
      if (readlinkSync(`/proc/${entry}/ns/pid`) !== pidNs) continue
      const nspid =
        /^NSpid:\s*(.*)$/m
          .exec(readFileSync(`/proc/${entry}/status`, 'utf8'))?.[1]
          ?.trim()
          .split(/\s+/) ?? []
      const comm = readFileSync(`/proc/${entry}/comm`, 'utf8').trim()
      found.push({ host: Number(entry), inNs: Number(nspid[nspid.length - 1]), comm })
    } catch {
      // gone meanwhile
    }
  }
  return found
}

/**
 * Resolves with the first line of the container's output (stdout or stderr, from its start)
 * that matches; rejects with the output when the container's log ends first, or after
 * `deadlineMs` (a failure bound, never a wait).
 */
export function waitForLog(container: string, pattern: RegExp, deadlineMs = 180_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('podman', ['logs', '--follow', container], { env: containersEnv(), stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    let settled = false
    const finish = (error: Error | undefined, line?: string): void => {
      if (settled) return
      settled = true
      clearTimeout(timer)
      child.kill('SIGTERM')
      if (error === undefined) resolve(line ?? '')
      else reject(error)
    }
    const timer = setTimeout(
      () => finish(new Error(`no line matching ${pattern} from ${container} in ${deadlineMs} ms: ${output.slice(-3000)}`)),
      deadlineMs
    )
    const read = (chunk: Buffer): void => {
      output += chunk.toString()
      const line = output.split('\n').find((l) => pattern.test(l))
      if (line !== undefined) finish(undefined, line)
    }
    child.stdout.on('data', read)
    child.stderr.on('data', read)
    child.once('error', (error) => finish(error))
    child.once('exit', () => finish(new Error(`the log of ${container} ended without a line matching ${pattern}: ${output.slice(-3000)}`)))
  })
}

/** Resolves once a TCP connection to host:port is accepted (retrying refusals), or rejects after `deadlineMs`. */
export async function waitForPort(host: string, port: number, deadlineMs = 120_000): Promise<void> {
  const deadline = Date.now() + deadlineMs
  for (;;) {
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect({ host, port })
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (accepted) return
    if (Date.now() > deadline) throw new Error(`nothing accepted connections on ${host}:${port} within ${deadlineMs} ms`)
    // A refusal comes back at once: pace the retries on the event loop's next turns.
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** The exit code `podman wait` reports once the container has stopped. */
export async function exitCode(container: string): Promise<number> {
  return Number((await podman(['wait', container])).trim())
}

export { CommandError }
