/**
 * Traffic for the real-node scenarios, sent only to the node's own addresses: a TCP or HTTP probe
 * from this process (the host), from inside a Pod (`kubectl exec` of the workload image's node),
 * or from the node's outside network namespace (a client that is neither the node nor a Pod). Each
 * probe is one connection with a deadline and reports what happened, never retries.
 */
import type { TestCluster } from './cluster.ts'
import { NODE_NET } from './node-host.ts'
import { runCommand } from './cluster.ts'
import { clientOptions, runClient, type Key, type Ran } from '../../images/support/ssh-client.ts'

/** What a connection attempt met: an answer (its first line), a refusal, or silence. */
export type ProbeResult = { open: true; answer: string } | { open: false; error: string }

/**
 * The probe program, run by `node -e` wherever the probe runs: one TCP connection to
 * argv[1]:argv[2] with a 5-second deadline, a line written, the first line read back; or, with
 * argv[3] = "dns", one DNS query for `probe.test` through a resolver set to argv[1]:argv[2].
 * Prints one JSON line.
 */
const PROBE = String.raw`
const [host, port, kind] = process.argv.slice(1)
const done = (r) => { process.stdout.write(JSON.stringify(r) + '\n'); process.exit(0) }
setTimeout(() => done({ open: false, error: 'ETIMEDOUT' }), 5000)
if (kind === 'dns') {
  const { Resolver } = require('node:dns').promises
  const r = new Resolver({ timeout: 4000, tries: 1 })
  r.setServers([host + ':' + port])
  r.resolve4('probe.test').then((a) => done({ open: true, answer: a.join(',') }), (e) => done({ open: false, error: e.code || e.message }))
} else {
  const s = require('node:net').connect({ host, port: Number(port) })
  let data = ''
  s.on('connect', () => s.write('GET / HTTP/1.0\r\n\r\n'))
  s.on('data', (c) => { data += c; })
  s.on('end', () => done({ open: true, answer: data.split('\r\n\r\n').slice(1).join('') || data.split('\n')[0] }))
  s.on('error', (e) => done({ open: false, error: e.code || e.message }))
}
`

function parse(stdout: string, stderr: string): ProbeResult {
  const line = stdout.trim().split('\n').pop() ?? ''
  try {
    return JSON.parse(line) as ProbeResult
  } catch {
    throw new Error(`the probe printed no result: ${stdout.trim()} ${stderr.trim()}`)
  }
}

/** A probe from this process, as the node itself (its own addresses are the sources). */
export async function probeFromHost(host: string, port: number, kind: 'tcp' | 'dns' = 'tcp'): Promise<ProbeResult> {
  const result = await runCommand(process.execPath, ['-e', PROBE, host, String(port), kind])
  return parse(result.stdout, result.stderr)
}

/** A probe from the outside network namespace: a client outside every pod CIDR. */
export async function probeFromOutside(host: string, port: number): Promise<ProbeResult> {
  const result = await runCommand('ip', ['netns', 'exec', NODE_NET.outside.netns, process.execPath, '-e', PROBE, host, String(port), 'tcp'])
  return parse(result.stdout, result.stderr)
}

/** A probe from inside a Pod's container (its image must have `node` on PATH). */
export async function probeFromPod(
  cluster: TestCluster,
  pod: { namespace: string; name: string; container?: string },
  host: string,
  port: number,
  kind: 'tcp' | 'dns' = 'tcp'
): Promise<ProbeResult> {
  const result = await cluster.kubectl(
    ['exec', '-n', pod.namespace, pod.name, '-c', pod.container ?? 'main', '--', 'node', '-e', PROBE, host, String(port), kind],
    { allowFail: true }
  )
  if (result.code !== 0) throw new Error(`kubectl exec in ${pod.namespace}/${pod.name} exited with ${result.code}: ${result.stderr.trim()}`)
  return parse(result.stdout, result.stderr)
}

/**
 * The workload of the scenarios' Instances: an HTTP server on each port in `PORTS` (comma-separated,
 * default 8080) answering `<hostname> <port> <client address>`, so a test sees which Pod answered
 * and from where the connection came. As PID 1 it must exit on SIGTERM itself (the kernel ignores
 * a signal PID 1 has no handler for), or every stop waits out the 30-second grace period.
 */
export const HTTP_SERVER = String.raw`
process.on('SIGTERM', () => process.exit(0))
const os = require('node:os')
for (const port of (process.env.PORTS || '8080').split(',')) {
  require('node:http').createServer((q, s) => s.end(os.hostname() + ' ' + port + ' ' + q.socket.remoteAddress)).listen(Number(port))
}
`

/**
 * A stand-in DNS server: on UDP port 53, answers every A query with 192.0.2.53 (a DNS message
 * read and written by hand: header, the question echoed, one answer); on TCP port 53 it answers
 * `dns-tcp`, and on TCP 8053 `not-dns`, a port of the same Pod that is not DNS.
 */
export const DNS_SERVER = String.raw`
process.on('SIGTERM', () => process.exit(0))
const answer = (q) => {
  let end = 12
  while (q[end] !== 0) end += q[end] + 1
  end += 5
  const head = Buffer.from(q.subarray(0, 12))
  head.writeUInt16BE(0x8180, 2); head.writeUInt16BE(1, 4); head.writeUInt16BE(1, 6); head.writeUInt32BE(0, 8)
  const rr = Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 53])
  return Buffer.concat([head, q.subarray(12, end), rr])
}
const udp = require('node:dgram').createSocket('udp4')
udp.on('message', (m, r) => udp.send(answer(m), r.port, r.address))
udp.bind(53)
require('node:net').createServer((s) => s.end('dns-tcp\n')).listen(53)
require('node:net').createServer((s) => s.end('not-dns\n')).listen(8053)
`

/**
 * One ssh session as root to `address:port`, retried only while the port refuses: kube-proxy opens
 * a node port once it has seen the Ready endpoint, on its own schedule (at most 60 s).
 */
export async function sshOnce(key: Key, address: string, port: number, command: string): Promise<Ran> {
  const deadline = Date.now() + 60_000
  for (;;) {
    const ran = await runClient('ssh', [...clientOptions(key), '-p', String(port), `root@${address}`, command])
    if (ran.code === 0 || !/Connection refused/.test(ran.stderr) || Date.now() > deadline) return ran
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}
