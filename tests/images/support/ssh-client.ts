/**
 * The OpenSSH client (ssh, scp, sftp) as a user runs it against an Instance's sidecar: keys
 * only, no host key kept (every Pod makes its own), and what a session reports of its own
 * privilege (the lines of /proc/<pid>/status that say it).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'

const exec = promisify(execFile)

/** What a client run printed and how it ended. */
export interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/** A client key pair: the private key's file and the public key's line. */
export interface Key {
  file: string
  line: string
}

/** A new ed25519 key in `dir`. */
export async function newKey(dir: string, name: string): Promise<Key> {
  const file = join(dir, name)
  await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', file])
  return { file, line: readFileSync(`${file}.pub`, 'utf8') }
}

/** The options every client run takes: this key only, no prompt, no host key kept. */
export function clientOptions(key: Key): string[] {
  return [
    '-i',
    key.file,
    '-o',
    'BatchMode=yes',
    '-o',
    'IdentitiesOnly=yes',
    '-o',
    'StrictHostKeyChecking=no',
    '-o',
    'UserKnownHostsFile=/dev/null',
    '-o',
    'LogLevel=ERROR',
    '-o',
    'ConnectTimeout=60'
  ]
}

/** Runs `program args` to its end with `input` on stdin (none: stdin closed); rejects after `deadlineMs`. */
export function runClient(program: 'ssh' | 'scp' | 'sftp', args: string[], input = '', deadlineMs = 120_000): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${program} ${args.join(' ')} did not end within ${deadlineMs} ms: ${stdout} ${stderr}`))
    }, deadlineMs)
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    child.once('error', reject)
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    child.stdin.end(input)
  })
}

/** Starts a long-running client (a forwarding `ssh -N`); the caller ends it. */
export function startClient(program: 'ssh', args: string[]): { child: ChildProcess; output: () => string; closed: Promise<number | null> } {
  const child = spawn(program, args, { stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout?.on('data', (c: Buffer) => (output += c.toString()))
  child.stderr?.on('data', (c: Buffer) => (output += c.toString()))
  const closed = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)))
  return { child, output: () => output, closed }
}

/** The privilege a process holds, from its /proc/<pid>/status. */
export interface Privilege {
  uid: number
  capEff: string
  capPrm: string
  capInh: string
  capBnd: string
  capAmb: string
  noNewPrivs: string
}

/** Reads {@link Privilege} from the text of a /proc/<pid>/status (the first one, if several are concatenated). */
export function privilegeOf(status: string): Privilege {
  const field = (name: string): string => {
    const match = new RegExp(`^${name}:\\s*(.*)$`, 'm').exec(status)
    if (match?.[1] === undefined) throw new Error(`no ${name} in ${status.slice(0, 2000)}`)
    return match[1].trim()
  }
  return {
    uid: Number(field('Uid').split(/\s+/)[1]),
    capEff: field('CapEff'),
    capPrm: field('CapPrm'),
    capInh: field('CapInh'),
    capBnd: field('CapBnd'),
    capAmb: field('CapAmb'),
    noNewPrivs: field('NoNewPrivs')
  }
}

/** No capability in any set, and no_new_privs: what every session must hold, as `uid`. */
export function unprivileged(uid: number): Privilege {
  const none = '0000000000000000'
  return { uid, capEff: none, capPrm: none, capInh: none, capBnd: none, capAmb: none, noNewPrivs: '1' }
}
