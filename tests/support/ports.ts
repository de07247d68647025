/**
 * Free loopback ports for processes the tests start.
 *
 * A port from `listen(0)` comes from the kernel's ephemeral range, which outgoing connections use
 * too, and two test processes asking at the same moment can be handed the same one between its
 * close here and the child's bind. So ports are taken from a range below the ephemeral one and
 * below the node-port range (20000-29999), and each is claimed with a lock file created
 * exclusively in a directory every test process shares: a claim holds until the process that made
 * it exits (a claim whose process is gone is taken over). A claimed port is also checked to be
 * bindable on 127.0.0.1, so a port some other program holds is skipped.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const FIRST = 20000
const LAST = 29999
const claimDir = join(tmpdir(), 'gpuhooks-ports')
const claimed = new Set<number>()

process.once('exit', () => {
  for (const port of claimed) rmSync(join(claimDir, String(port)), { force: true })
})

/** Whether a process of that PID exists (EPERM: it does, owned by another user). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Claims `port` for this process; false when another live process holds it. */
function claim(port: number): boolean {
  const file = join(claimDir, String(port))
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' })
      return true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    let owner = Number.NaN
    try {
      owner = Number(readFileSync(file, 'utf8'))
    } catch {
      continue // released meanwhile: try again
    }
    // A claim being written reads empty for a moment; only a claim of a process that is gone
    // is taken over.
    if (!Number.isSafeInteger(owner) || owner <= 0 || alive(owner)) return false
    rmSync(file, { force: true })
  }
  return false
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer()
    server.once('error', () => resolve(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)))
  })
}

/** `count` distinct free TCP ports on 127.0.0.1, claimed for this process until it exits. */
export async function freePorts(count: number): Promise<number[]> {
  mkdirSync(claimDir, { recursive: true })
  const ports: number[] = []
  const span = LAST - FIRST + 1
  let tries = 0
  while (ports.length < count) {
    if (++tries > span) throw new Error(`no free port in ${FIRST}-${LAST} after ${span} tries`)
    const port = FIRST + Math.floor(Math.random() * span)
    if (claimed.has(port) || !claim(port)) continue
    claimed.add(port)
    if (await bindable(port)) ports.push(port)
  }
  return ports
}
