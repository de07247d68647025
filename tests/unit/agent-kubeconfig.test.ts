import t from 'tap'
import { kubeconfigFromSecret, ownerProblem, reduceKubeconfig } from '../../hooks/agent/workload/kubeconfig.ts'
import { classifyError } from '../../hooks/agent/workload/reachability.ts'

const CA = Buffer.from('ca-pem').toString('base64')
const CERT = Buffer.from('cert-pem').toString('base64')
const KEY = Buffer.from('key-pem').toString('base64')

/** A kubeconfig with one cluster and one user; `cluster` and `user` lines are added verbatim. */
function kubeconfig(cluster: string[] = [], user: string[] = ['    token: abc']): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: wl',
    '  cluster:',
    '    server: https://10.0.0.1:6443',
    `    certificate-authority-data: ${CA}`,
    ...cluster,
    'users:',
    '- name: agent',
    '  user:',
    ...user,
    'contexts:',
    '- name: wl',
    '  context: {cluster: wl, user: agent}',
    'current-context: wl',
    ''
  ].join('\n')
}

t.test('a token kubeconfig reduces to server, CA and token', async (t) => {
  t.same(reduceKubeconfig(kubeconfig()), { ok: true, config: { server: 'https://10.0.0.1:6443', caData: CA, token: 'abc' } })
})

t.test('client certificate data and tls-server-name are kept', async (t) => {
  t.same(
    reduceKubeconfig(kubeconfig(['    tls-server-name: api.wl'], [`    client-certificate-data: ${CERT}`, `    client-key-data: ${KEY}`])),
    {
      ok: true,
      config: { server: 'https://10.0.0.1:6443', caData: CA, tlsServerName: 'api.wl', certData: CERT, keyData: KEY }
    }
  )
})

const refused: Array<{ name: string; cluster?: string[]; user?: string[]; field: RegExp }> = [
  {
    name: 'exec is refused',
    user: ['    exec: {command: /bin/sh, apiVersion: client.authentication.k8s.io/v1}'],
    field: /users\[0\]\.user\.exec is refused: it would run a command/
  },
  { name: 'auth-provider is refused', user: ['    auth-provider: {name: gcp}'], field: /user\.auth-provider is refused/ },
  {
    name: 'tokenFile is refused',
    user: ['    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token'],
    field: /user\.tokenFile is refused: a file path/
  },
  {
    name: 'client-certificate (a path) is refused',
    user: ['    client-certificate: /etc/agent.crt', `    client-key-data: ${KEY}`],
    field: /user\.client-certificate is refused/
  },
  {
    name: 'client-key (a path) is refused',
    user: [`    client-certificate-data: ${CERT}`, '    client-key: /etc/agent.key'],
    field: /user\.client-key is refused/
  },
  {
    name: 'certificate-authority (a path) is refused',
    cluster: ['    certificate-authority: /etc/ca.crt'],
    field: /cluster\.certificate-authority is refused/
  },
  { name: 'proxy-url is refused', cluster: ['    proxy-url: http://evil:3128'], field: /cluster\.proxy-url is refused/ },
  {
    name: 'any other field (insecure-skip-tls-verify) is refused',
    cluster: ['    insecure-skip-tls-verify: true'],
    field: /cluster\.insecure-skip-tls-verify is refused: only server, certificate-authority-data, tls-server-name/
  },
  {
    name: 'username and password are refused',
    user: ['    username: a', '    password: b'],
    field: /user\.username is refused.*user\.password is refused/
  }
]
for (const c of refused) {
  t.test(c.name, async (t) => {
    const reduced = reduceKubeconfig(kubeconfig(c.cluster, c.user))
    t.equal(reduced.ok, false)
    if (!reduced.ok) {
      t.equal(reduced.problem.reason, 'CredentialInvalid')
      t.match(reduced.problem.message, c.field)
    }
  })
}

t.test('a refused field in an entry the current context does not use is refused too', async (t) => {
  const text = kubeconfig() + ['---'].join('\n')
  const extra = kubeconfig().replace('users:\n', 'users:\n- name: other\n  user:\n    exec: {command: x}\n')
  t.equal(reduceKubeconfig(extra).ok, false)
  t.equal(reduceKubeconfig(text.replace(/---$/, '')).ok, true)
})

const unusable: Array<{ name: string; text: string; message: RegExp }> = [
  { name: 'not YAML', text: 'clusters: [unclosed', message: /not valid YAML/ },
  { name: 'a YAML scalar', text: 'hello', message: /not a YAML mapping/ },
  {
    name: 'no current context',
    text: kubeconfig()
      .replace('current-context: wl\n', '')
      .replace('contexts:\n- name: wl\n  context: {cluster: wl, user: agent}\n', 'contexts: []\n'),
    message: /current-context is not set/
  },
  {
    name: 'a current context that names nothing',
    text: kubeconfig().replace('current-context: wl', 'current-context: nope'),
    message: /names no context/
  },
  { name: 'a user without credential', text: kubeconfig([], ['    token: ""']), message: /no credential/ },
  {
    name: 'a certificate without its key',
    text: kubeconfig([], [`    client-certificate-data: ${CERT}`]),
    message: /must be given together/
  },
  { name: 'a plain http server', text: kubeconfig().replace('https://10.0.0.1:6443', 'http://10.0.0.1:6443'), message: /https:\/\/ URL/ },
  { name: 'CA data that is not base64', text: kubeconfig().replace(CA, '"%%%"'), message: /not base64/ },
  {
    name: 'a YAML alias bomb',
    text: 'a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n',
    message: /not valid YAML/
  },
  { name: 'a token that is not a string', text: kubeconfig([], ['    token: [1, 2]']), message: /user\.token is not a string/ },
  { name: 'clusters that are not a list', text: 'clusters: {a: 1}\n', message: /clusters is not a list/ }
]
for (const c of unusable) {
  t.test(`CredentialInvalid: ${c.name}`, async (t) => {
    const reduced = reduceKubeconfig(c.text)
    t.equal(reduced.ok, false)
    if (!reduced.ok) t.match(reduced.problem.message, c.message)
  })
}

t.test('the Secret must exist, carry the opt-in label and hold the key', async (t) => {
  const ref = { namespace: 'ns', name: 'wl', key: 'value' }
  const data = { value: Buffer.from(kubeconfig()).toString('base64') }
  const labelled = { metadata: { name: 'wl', labels: { 'cells.kubeswift.io/workload-kubeconfig': 'true' } }, data }
  t.equal(kubeconfigFromSecret(labelled, ref).ok, true)
  const missing = kubeconfigFromSecret(undefined, ref)
  t.match(!missing.ok && missing.problem.message, /^Secret ns\/wl does not exist$/)
  const unlabelled = kubeconfigFromSecret({ metadata: { name: 'wl', labels: {} }, data }, ref)
  t.match(!unlabelled.ok && unlabelled.problem.message, /lacks the label cells.kubeswift.io\/workload-kubeconfig/)
  const noKey = kubeconfigFromSecret({ ...labelled, data: {} }, ref)
  t.match(!noKey.ok && noKey.problem.message, /has no key value/)
  const protoKey = kubeconfigFromSecret(labelled, { ...ref, key: '__proto__' })
  t.match(!protoKey.ok && protoKey.problem.message, /has no key __proto__/)
})

t.test('owner check', async (t) => {
  const owned = (ref: Record<string, unknown>, more: Record<string, unknown> = {}): Record<string, unknown> => ({
    metadata: { name: 'pool-a', ownerReferences: [ref], ...more },
    spec: { poolUID: 'u1' }
  })
  const ref = { apiVersion: 'cells.kubeswift.io/v1alpha1', kind: 'GPUCellPool', name: 'pool-a', uid: 'u1', controller: true }
  const pool = { metadata: { name: 'pool-a', uid: 'u1' } }
  t.equal(ownerProblem(owned(ref), pool), undefined)
  t.match(ownerProblem(owned({ ...ref, controller: false }), pool), /no controller owner/)
  t.match(ownerProblem(owned({ ...ref, kind: 'Deployment' }), pool), /not a GPUCellPool/)
  t.match(ownerProblem(owned({ ...ref, uid: 'u2' }), pool), /is not spec.poolUID/)
  t.match(ownerProblem(owned(ref), { metadata: { uid: 'u9' } }), /has uid u9/)
  t.match(ownerProblem(owned(ref), undefined), /does not exist/)
  t.equal(
    ownerProblem(owned(ref, { deletionTimestamp: '2026-01-01T00:00:00Z' }), undefined),
    undefined,
    'a deleting CellNodeSet may outlive its pool'
  )
  t.equal(ownerProblem('junk', pool), 'not a CellNodeSet')
})

t.test('reachability: 401 CredentialInvalid, 403 Forbidden, anything else Unreachable', async (t) => {
  const api = (code: number): Error & { code: number; body: string } =>
    Object.assign(new Error(`HTTP-Code: ${code}`), { code, body: JSON.stringify({ message: `status ${code}` }) })
  t.equal(classifyError(api(401)).reason, 'CredentialInvalid')
  t.equal(classifyError(api(403)).reason, 'Forbidden')
  t.match(classifyError(api(403)).message, /status 403/)
  t.equal(classifyError(api(500)).reason, 'Unreachable')
  t.equal(classifyError(new Error('connect ECONNREFUSED 127.0.0.1:1')).reason, 'Unreachable')
  t.equal(classifyError('weird').reason, 'Unreachable')
})
