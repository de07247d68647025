/**
 * The SSH sidecar in real containers: Pods rendered by the Instance hook (with the sidecar image
 * named by the Setting, as an admin sets it) started in podman as a kubelet starts them
 * (instance-pod.ts), and an OpenSSH client logging in through the Pod's address. Every session
 * must land in `main` (its filesystem, hostname, mount namespace, user and environment) with no
 * capability in any set and no_new_privs.
 *
 * Three Pods: a root `main`; a `main` running as uid 1000 whose environment carries LD_PRELOAD of
 * a probe library and which serves a port on localhost; a root `main` whose first process
 * chrooted itself into /fake, a directory it controls, planted with programs at the paths a
 * privileged step might look up there.
 *
 * GPUHOOKS_SSHD_IMAGE runs the scenarios against another sidecar image (a local ref).
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePorts } from '../support/ports.ts'
import { buildImages } from './support/images.ts'
import { buildWorkspaceImages } from './support/workspace.ts'
import { hostPid, processesIn, removeContainers, waitForPort } from './support/containers.ts'
import { renderInstancePod, startPod, type StartedPod } from './support/instance-pod.ts'
import { CommandError, podman } from './support/podman.ts'
import { clientOptions, newKey, privilegeOf, runClient, startClient, unprivileged, type Key } from './support/ssh-client.ts'

const PROBE = '/usr/local/lib/gpuhooks-probe.so'
const HANDOVER = '/usr/local/lib/gpuhooks/gpuhooks-handover'

const refs = await buildImages()
const sshdImage = process.env['GPUHOOKS_SSHD_IMAGE'] ?? refs.sshd
const workspace = await buildWorkspaceImages(refs.debian)
await removeContainers()
t.teardown(removeContainers)
const dir = mkdtempSync(join(tmpdir(), 'gpuhooks-ssh-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const firstKey = await newKey(dir, 'first-key')
const rotatedKey = await newKey(dir, 'rotated-key')

const [rootPod, userPod, chrootPod] = await Promise.all([
  startPod(
    renderInstancePod({
      name: 'root-main',
      image: workspace.root,
      command: ['/bin/sh', '-c', 'exec sleep infinity'],
      env: [{ name: 'WORKSPACE_MARK', value: 'root-main' }],
      sshdImage,
      authorizedKeys: firstKey.line
    }),
    firstKey.line
  ),
  startPod(
    renderInstancePod({
      name: 'user-main',
      image: workspace.user,
      // `$$$$` is `$$` once the kubelet has expanded it: the shell's PID, which `exec` keeps.
      command: ['/bin/sh', '-c', `export LD_PRELOAD=/proc/$$$$/root${PROBE}; busybox httpd -p 127.0.0.1:8000 -h /srv; exec sleep infinity`],
      env: [{ name: 'WORKSPACE_MARK', value: 'user-main' }],
      sshdImage,
      authorizedKeys: firstKey.line
    }),
    firstKey.line
  ),
  startPod(
    renderInstancePod({
      name: 'chroot-main',
      image: workspace.root,
      command: ['chroot', '/fake', '/sleeper'],
      sshdImage,
      authorizedKeys: firstKey.line
    }),
    firstKey.line
  )
])

function session(pod: StartedPod, command: string, key: Key = firstKey): ReturnType<typeof runClient> {
  return runClient('ssh', [...clientOptions(key), `root@${pod.address}`, command])
}

/** What main's first process is, seen from the host: its PID there and in the Pod, and its namespaces. */
async function mainProcess(pod: StartedPod): Promise<{ host: number; inPod: number; start: string; mnt: string; pidNs: string }> {
  const host = await hostPid(pod.container('main'))
  const status = readFileSync(`/proc/${host}/status`, 'utf8')
  const nspid = /^NSpid:\s*(.*)$/m.exec(status)?.[1]?.trim().split(/\s+/) ?? []
  const stat = readFileSync(`/proc/${host}/stat`, 'utf8')
  const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? ''
  return {
    host,
    inPod: Number(nspid[nspid.length - 1]),
    start,
    mnt: readlinkSync(`/proc/${host}/ns/mnt`),
    pidNs: readlinkSync(`/proc/${host}/ns/pid`)
  }
}

const STATUS = 'cat /proc/self/status'

for (const [pod, uid, user, home] of [
  [rootPod, 0, 'root', '/root'],
  [userPod, 1000, 'dev', '/home/dev']
] as const) {
  t.test(
    `a ${uid === 0 ? 'root' : 'non-root'} main: a command runs in main, as its user, with its environment, and no capability`,
    async (t) => {
      const main = await mainProcess(pod)
      const ran = await session(
        pod,
        `${STATUS}; echo "id=$(id -u) user=$USER home=$HOME pwd=$(pwd) host=$(hostname) mark=$WORKSPACE_MARK"; echo "fds=$(ls /proc/self/fd | tr '\\n' ' ')"; readlink /proc/self/ns/mnt; cat /srv/index.html`
      )
      t.equal(ran.code, 0, ran.stderr)
      t.same(privilegeOf(ran.stdout), unprivileged(uid), 'CapEff, CapPrm, CapInh, CapBnd, CapAmb 0; NoNewPrivs 1')
      // ls's own: stdin, stdout (the pipe to tr), stderr, and 3, the directory it lists; anything
      // more would be a descriptor the sidecar or the handover left open.
      t.match(ran.stdout, '\nfds=0 1 2 3 \n', 'no descriptor of the sidecar reaches the session')
      t.match(
        ran.stdout,
        `id=${uid} user=${user} home=${home} pwd=${home} host=${String(pod.rendered.metadata.name)} mark=${uid === 0 ? 'root' : 'user'}-main\n`
      )
      t.match(ran.stdout, `\n${main.mnt}\n`, "main's mount namespace")
      t.match(ran.stdout, /served by main\n$/, "main's filesystem")
    }
  )
}

t.test('a command’s exit status and output streams come back separately', async (t) => {
  const ran = await session(rootPod, 'echo out; echo err >&2; exit 7')
  t.same(ran, { code: 7, stdout: 'out\n', stderr: 'err\n' })
})

t.test('an interactive login gets a terminal and a login shell, with no capability', async (t) => {
  const input = [
    'tty -s && echo "IS-A-$((1 + 1))-TTY"',
    'shopt -q login_shell && echo "LOGIN-$((2 + 2))"',
    'grep -E "^(CapEff|CapBnd|NoNewPrivs)" /proc/self/status',
    'exit 3',
    ''
  ].join('\n')
  const ran = await runClient('ssh', ['-tt', ...clientOptions(firstKey), `root@${rootPod.address}`], input)
  t.equal(ran.code, 3, ran.stderr)
  t.match(ran.stdout, 'IS-A-2-TTY')
  t.match(ran.stdout, 'LOGIN-4', 'a login shell')
  t.match(ran.stdout, /CapEff:\s+0{16}/)
  t.match(ran.stdout, /CapBnd:\s+0{16}/)
  t.match(ran.stdout, /NoNewPrivs:\s+1/)
})

t.test('scp and sftp copy files both ways, owned by main’s user', async (t) => {
  const content = `copied ${process.pid} ${Date.now()}\n`
  const local = join(dir, 'up.txt')
  writeFileSync(local, content)
  const scpUp = await runClient('scp', [...clientOptions(firstKey), local, `root@${userPod.address}:/tmp/scp.txt`])
  t.equal(scpUp.code, 0, scpUp.stderr)
  const scpDown = await runClient('scp', [...clientOptions(firstKey), `root@${userPod.address}:/tmp/scp.txt`, join(dir, 'down.txt')])
  t.equal(scpDown.code, 0, scpDown.stderr)
  t.equal(readFileSync(join(dir, 'down.txt'), 'utf8'), content)
  const batch = join(dir, 'batch')
  writeFileSync(
    batch,
    [`put ${local} /tmp/sftp.txt`, `get /tmp/sftp.txt ${join(dir, 'sftp-down.txt')}`, 'ls -n /tmp/sftp.txt', ''].join('\n')
  )
  const sftp = await runClient('sftp', [...clientOptions(firstKey), '-b', batch, `root@${userPod.address}`])
  t.equal(sftp.code, 0, sftp.stderr)
  t.equal(readFileSync(join(dir, 'sftp-down.txt'), 'utf8'), content)
  const owners = await session(userPod, 'stat -c "%u %n" /tmp/scp.txt /tmp/sftp.txt')
  t.equal(owners.stdout, '1000 /tmp/scp.txt\n1000 /tmp/sftp.txt\n')
})

t.test('an sftp session’s server runs as main’s user with no capability', async (t) => {
  const main = await mainProcess(userPod)
  // Batch commands from stdin, held back until the server has been read from the host.
  const sftp = spawn('sftp', [...clientOptions(firstKey), '-b', '-', `root@${userPod.address}`], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  sftp.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  const closed = new Promise<number | null>((resolve) => sftp.once('close', resolve))
  const deadline = Date.now() + 120_000
  let server = processesIn(main.pidNs).find((p) => p.comm === 'sftp-server')
  while (server === undefined && Date.now() < deadline && sftp.exitCode === null) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    server = processesIn(main.pidNs).find((p) => p.comm === 'sftp-server')
  }
  if (server === undefined) {
    sftp.stdin.end()
    t.fail(`no sftp-server appeared in the Pod: ${stderr}`)
    return
  }
  t.same(privilegeOf(readFileSync(`/proc/${server.host}/status`, 'utf8')), unprivileged(1000), 'uid 1000, every set empty, no_new_privs')
  const [serverRoot, mainRoot] = [statSync(`/proc/${server.host}/root`), statSync(`/proc/${main.host}/root`)]
  t.same([serverRoot.dev, serverRoot.ino], [mainRoot.dev, mainRoot.ino], 'in main’s root')
  sftp.stdin.end('pwd\n')
  t.equal(await closed, 0, stderr)
})

t.test('ssh -L reaches a port of main; ssh -R is refused', async (t) => {
  const [local, remote] = (await freePorts(2)) as [number, number]
  const forward = startClient('ssh', [
    '-N',
    '-o',
    'ExitOnForwardFailure=yes',
    '-L',
    `127.0.0.1:${local}:127.0.0.1:8000`,
    ...clientOptions(firstKey),
    `root@${userPod.address}`
  ])
  t.teardown(() => void forward.child.kill('SIGTERM'))
  await waitForPort('127.0.0.1', local)
  const answer = await fetch(`http://127.0.0.1:${local}/index.html`)
  t.equal(await answer.text(), 'served by main\n', "through the tunnel to main's localhost:8000")
  forward.child.kill('SIGTERM')
  await forward.closed
  const reverse = await runClient('ssh', [
    '-N',
    '-o',
    'ExitOnForwardFailure=yes',
    '-R',
    `127.0.0.1:${remote}:127.0.0.1:22`,
    ...clientOptions(firstKey),
    `root@${userPod.address}`
  ])
  t.equal(reverse.code, 255)
  t.match(reverse.stderr, /remote port forwarding failed/)
})

t.test('LD_PRELOAD in main’s environment reaches the session, never a privileged program', async (t) => {
  const ran = await session(userPod, 'echo "preload=$LD_PRELOAD"; cat /proc/self/status >/dev/null')
  t.equal(ran.code, 0, ran.stderr)
  t.match(ran.stdout, `preload=/proc/`, "main's LD_PRELOAD is the session's")
  const log = (await podman(['exec', userPod.container('main'), 'cat', '/var/probe/log'])).split('\n').filter((l) => l !== '')
  t.ok(
    log.some((l) => /^cat uid=1000 /.test(l)),
    `the probe ran in the session's programs: ${log.join('; ')}`
  )
  t.same(
    log.filter((l) => !/ uid=1000 capeff=0{16}$/.test(l)),
    [],
    'every process that loaded it ran as main’s user with no capability'
  )
  // The probe does record a privileged program that loads it: one run in the sidecar with it.
  const main = await mainProcess(userPod)
  await podman(['exec', userPod.container('sshd'), 'env', `LD_PRELOAD=/proc/${main.inPod}/root${PROBE}`, '/bin/true'])
  const after = await podman(['exec', userPod.container('main'), 'cat', '/var/probe/log'])
  t.match(after, /^true uid=0 capeff=(?!0{16})[0-9a-f]{16}$/m, 'a privileged program that gets it is seen')
})

t.test('the handover starts the session in / and enters only the process it checked', async (t) => {
  const main = await mainProcess(userPod)
  const handover = (start: string, uid: string, pid = String(main.inPod)) =>
    podman([
      'exec',
      '--workdir=/var/lib/gpuhooks-sshd',
      userPod.container('sshd'),
      HANDOVER,
      pid,
      start,
      uid,
      '1000',
      '--',
      '/bin/sh',
      '-c',
      'pwd; cat /srv/index.html; id -u'
    ]).then(
      (stdout) => ({ code: 0, stdout, stderr: '' }),
      (error: CommandError) => ({ code: error.code, stdout: error.stdout, stderr: error.stderr })
    )
  t.same(
    await handover(main.start, '1000'),
    { code: 0, stdout: '/\nserved by main\n1000\n', stderr: '' },
    'from the sidecar’s /var/lib/gpuhooks-sshd'
  )
  const restarted = await handover(String(Number(main.start) + 1), '1000')
  t.equal(restarted.code, 1)
  t.match(restarted.stderr, /gpuhooks-enter: process \d+ is not the one chosen \(main restarted\); try again/)
  const otherUser = await handover(main.start, '0')
  t.match(otherUser.stderr, /the user of process \d+ changed since it was chosen/)
  const gone = await handover(main.start, '1000', '4194304')
  t.match(gone.stderr, /process 4194304 is gone since it was chosen/)
})

t.test('a rotated key works at the next login; the old one is refused', async (t) => {
  t.equal((await session(userPod, 'true', firstKey)).code, 0, 'the first key, before')
  userPod.keys.write({ authorized_keys: rotatedKey.line })
  const rotated = await session(userPod, `${STATUS}`, rotatedKey)
  t.equal(rotated.code, 0, rotated.stderr)
  t.same(privilegeOf(rotated.stdout), unprivileged(1000))
  const old = await session(userPod, 'true', firstKey)
  t.equal(old.code, 255)
  t.match(old.stderr, /Permission denied \(publickey\)/)
})

t.test('main restarted: the next session enters the new process', async (t) => {
  const before = await mainProcess(userPod)
  await podman(['restart', userPod.container('main')])
  const after = await mainProcess(userPod)
  t.not(`${after.inPod}/${after.start}`, `${before.inPod}/${before.start}`, 'a new first process')
  // main's LD_PRELOAD names its own PID: the session's says which process it was read from.
  const ran = await session(userPod, `readlink /proc/self/ns/mnt; echo "$LD_PRELOAD"; ${STATUS}`, rotatedKey)
  t.equal(ran.code, 0, ran.stderr)
  t.match(ran.stdout, `${after.mnt}\n/proc/${after.inPod}/root${PROBE}\n`, "the new process's mount namespace and environment")
  t.same(privilegeOf(ran.stdout), unprivileged(1000))
})

t.test('main absent: the session says so and ends', async (t) => {
  await podman(['stop', userPod.container('main')])
  const ran = await session(userPod, 'true', rotatedKey)
  t.equal(ran.code, 1)
  t.match(ran.stderr, /gpuhooks-enter: the workspace container is not running .*try again in a moment/)
})

/** The host PID of the process with PID `inPod` in the PID namespace `pidNs`. */
function hostPidOf(pidNs: string, inPod: number): number {
  const found = processesIn(pidNs).find((p) => p.inNs === inPod)
  if (found === undefined) throw new Error(`no process ${inPod} in ${pidNs}`)
  return found.host
}

t.test('a root main that chrooted itself into a directory it controls gains nothing', async (t) => {
  const main = await mainProcess(chrootPod)
  t.equal(readlinkSync(`/proc/${main.host}/root`).endsWith('/fake'), true, 'main’s first process runs in /fake')
  // The session lists its root, says its PID and waits on stdin, so its privilege can be read
  // from the host (no /proc in /fake).
  const ssh = spawn('ssh', [...clientOptions(firstKey), `root@${chrootPod.address}`, 'ls /; echo "pid=$$"; exec cat'], {
    stdio: ['pipe', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  ssh.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  const pid = await new Promise<number>((resolve, reject) => {
    ssh.stdout.on('data', (c: Buffer) => {
      stdout += c.toString()
      const match = /pid=(\d+)\n/.exec(stdout)
      if (match !== null) resolve(Number(match[1]))
    })
    ssh.once('close', (code) => reject(new Error(`the session ended (${code}) before saying its PID: ${stdout} ${stderr}`)))
  })
  const closed = new Promise<number | null>((resolve) => ssh.once('close', resolve))
  const host = hostPidOf(main.pidNs, pid)
  t.same(
    privilegeOf(readFileSync(`/proc/${host}/status`, 'utf8')),
    unprivileged(0),
    'root, with every capability set empty and no_new_privs'
  )
  const [sessionRoot, mainRoot] = [statSync(`/proc/${host}/root`), statSync(`/proc/${main.host}/root`)]
  t.same([sessionRoot.dev, sessionRoot.ino], [mainRoot.dev, mainRoot.ino], 'in main’s root, /fake')
  t.match(stdout, /^bin\nproc\nsleeper\nusr\n/, 'what it lists is /fake')
  ssh.stdin.end()
  t.equal(await closed, 0, stderr)
  const planted = await podman(['exec', chrootPod.container('main'), 'sh', '-c', 'cat /fake/pwned 2>/dev/null || echo "never ran"'])
  t.equal(planted, 'never ran\n', 'no planted program ran')
})
