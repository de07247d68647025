/**
 * The agent's transport to a workload cluster against a real HTTPS server that plays a hostile
 * one (docs/workload.md, "Bounds"): no redirect is followed, an answer past its bound is refused
 * while it streams (the server gets to send little more than the bound), a pass's reads share one
 * budget, a pass's signal abandons a call in flight, and an error answer brings back only a
 * Kubernetes Status message, clipped.
 */
import t, { type Test } from 'tap'
import { workloadConnection } from '../../hooks/agent/workload/client.ts'
import { ByteBudget, type ReadLimits } from '../../hooks/agent/workload/http.ts'
import { classifyError } from '../../hooks/agent/workload/reachability.ts'
import { issueCa } from '../../hooks/certs/issue.ts'
import { fakeApiServer, type FakeApiServer } from '../support/fake-apiserver.ts'

const MiB = 1024 * 1024
const SETTINGS = { callTimeoutMs: 30_000, maxAnswerBytes: 1 * MiB }
const json = (value: unknown): string => JSON.stringify(value)

function limits(bytes = 64 * MiB, signal = new AbortController().signal): ReadLimits {
  return { signal, budget: new ByteBudget(bytes) }
}

async function started(t: Test, handler: Parameters<typeof fakeApiServer>[0]): Promise<FakeApiServer> {
  const server = await fakeApiServer(handler)
  t.teardown(() => server.close())
  return server
}

/** The error a call rejects with. */
async function failure(call: Promise<unknown>): Promise<Error & { code?: unknown; body?: unknown }> {
  return call.then(
    () => {
      throw new Error('the call did not fail')
    },
    (error: unknown) => error as Error
  )
}

t.test('reads as the API server is asked: the selectors, the credential, a 404 as absent, the write bodies', async (t) => {
  const server = await started(t, (req, res) => {
    res.setHeader('content-type', 'application/json')
    if (req.url?.startsWith('/api/v1/nodes?')) res.end(json({ kind: 'NodeList', items: [{ metadata: { name: 'a' } }] }))
    else if (req.url === '/api/v1/nodes/missing') {
      res.statusCode = 404
      res.end(json({ kind: 'Status', message: 'nodes "missing" not found', code: 404 }))
    } else res.end(json({ kind: 'Node', metadata: { name: 'a' } }))
  })
  const connection = workloadConnection(server.kubeconfig('t0k'), SETTINGS)
  t.teardown(() => connection.close())
  const api = connection.api(limits())
  t.same(await api.listNodes('cells.kubeswift.io/pool-uid=u1'), [{ metadata: { name: 'a' } }])
  t.equal(await api.getNode('missing'), undefined)
  await api.patchNode('a', { metadata: { labels: { x: 'y' } } })
  await api.deleteNode('a', { uid: 'u', resourceVersion: '7' })
  t.same(
    server.seen.map((r) => [r.method, r.url, r.headers['content-type'] ?? '', r.body]),
    [
      ['GET', '/api/v1/nodes?labelSelector=cells.kubeswift.io%2Fpool-uid%3Du1', '', ''],
      ['GET', '/api/v1/nodes/missing', '', ''],
      ['PATCH', '/api/v1/nodes/a', 'application/merge-patch+json', json({ metadata: { labels: { x: 'y' } } })],
      [
        'DELETE',
        '/api/v1/nodes/a',
        'application/json',
        json({ apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { uid: 'u', resourceVersion: '7' } })
      ]
    ]
  )
  t.ok(
    server.seen.every((r) => r.headers.authorization === 'Bearer t0k' && r.headers['accept-encoding'] === undefined),
    'the token on every call, and no compressed answer asked for'
  )
})

t.test('a redirect is not followed: the server it names is never asked, and the pass is Unreachable naming it', async (t) => {
  const elsewhere = await started(t, (_req, res) => res.end(json({ kind: 'NodeList', items: [] })))
  const server = await started(t, (_req, res) => {
    res.writeHead(307, { location: `${elsewhere.url}/api/v1/nodes?${'q'.repeat(500)}` })
    res.end()
  })
  const connection = workloadConnection(server.kubeconfig(), SETTINGS)
  t.teardown(() => connection.close())
  const error = await failure(connection.api(limits()).listNodes('a=b'))
  t.equal(elsewhere.seen.length, 0, 'the redirect target got no request, so neither the token nor the client certificate')
  t.equal(error.code, 307)
  t.match(classifyError(error), {
    reason: 'Unreachable',
    message: /^list Nodes: HTTP 307, a redirect to https:\/\/127\.0\.0\.1:\d+\/api\/v1\/nodes\?q+…; the agent follows no redirect$/
  })
})

t.test('an answer larger than the bound is refused while it streams: little more than the bound is ever sent', async (t) => {
  const total = 64 * MiB
  const server = await started(t, (_req, res) => {
    res.setHeader('content-type', 'application/json')
    server.stream(res, '{"kind":"NodeList","items":[', total)
  })
  const connection = workloadConnection(server.kubeconfig(), SETTINGS)
  t.teardown(() => connection.close())
  const budget = new ByteBudget(64 * MiB)
  const error = await failure(connection.api({ signal: new AbortController().signal, budget }).listNodes('a=b'))
  t.match(error.message, 'list Nodes: the answer is larger than 1048576 bytes (AGENT_MAX_ANSWER_BYTES); it was not read')
  t.ok(64 * MiB - budget.remaining <= 1 * MiB, 'no more than the bound was kept')
  // The server goes on writing until the closed connection stops it; what the two sockets buffered
  // in between is all it got to send.
  await server.whenClosed(1)
  t.ok(server.served() < 24 * MiB, `the connection was closed early: ${server.served()} of ${total} bytes sent`)
})

t.test('a declared length over the bound is refused before any of it is read', async (t) => {
  const server = await started(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(150 * MiB) })
    res.write('{"items":[')
  })
  const connection = workloadConnection(server.kubeconfig(), SETTINGS)
  t.teardown(() => connection.close())
  const budget = new ByteBudget(64 * MiB)
  const error = await failure(connection.api({ signal: new AbortController().signal, budget }).getNode('a'))
  t.match(error.message, 'get Node a: the answer is larger than 1048576 bytes')
  t.equal(budget.remaining, 64 * MiB, 'nothing read')
})

t.test("a pass's reads share its budget: the read past it fails, the ones before it stand", async (t) => {
  const server = await started(t, (_req, res) => {
    res.setHeader('content-type', 'application/json')
    res.end(json({ kind: 'Node', metadata: { name: 'a', annotations: { pad: 'x'.repeat(600 * 1024) } } }))
  })
  const connection = workloadConnection(server.kubeconfig(), SETTINGS)
  t.teardown(() => connection.close())
  const api = connection.api(limits(1 * MiB))
  t.match(await api.getNode('a'), { metadata: { name: 'a' } })
  const error = await failure(api.getNode('b'))
  t.match(error.message, 'get Node b: the pass has read all it may from this cluster (AGENT_MAX_PASS_BYTES)')
})

t.test("the pass's signal abandons a call in flight and closes its connection", async (t) => {
  let asked = (): void => {}
  const arrived = new Promise<void>((resolve) => (asked = resolve))
  const server = await started(t, () => asked())
  const connection = workloadConnection(server.kubeconfig(), SETTINGS)
  t.teardown(() => connection.close())
  const pass = new AbortController()
  const call = failure(connection.api(limits(MiB, pass.signal)).listPods('spec.nodeName=a'))
  await arrived
  pass.abort(new Error('the pass of ns/pool took longer than 60 s'))
  t.equal((await call).message, 'the pass of ns/pool took longer than 60 s')
  await server.whenClosed(1)
  t.pass('the connection is closed, not left to finish')
  const late = await failure(connection.api(limits(MiB, pass.signal)).getNode('a'))
  t.equal(late.message, 'the pass of ns/pool took longer than 60 s', 'a call after the deadline is not sent')
  t.equal(server.seen.length, 1)
})

t.test('a call that gets no answer fails at its own deadline', async (t) => {
  const server = await started(t, () => {})
  const connection = workloadConnection(server.kubeconfig(), { ...SETTINGS, callTimeoutMs: 100 })
  t.teardown(() => connection.close())
  t.equal((await failure(connection.api(limits()).getNodeLease('a'))).message, 'get Lease kube-node-lease/a: no answer within 100 ms')
})

t.test('an error answer brings back a Kubernetes Status message, clipped, and nothing of any other text', async (t) => {
  const answers = [
    {
      code: 403,
      type: 'application/json',
      body: json({ kind: 'Status', code: 403, message: 'nodes is forbidden: User "agent" cannot list' })
    },
    { code: 500, type: 'application/json', body: json({ kind: 'Status', code: 500, message: `boom\n${'y'.repeat(10_000)}` }) },
    { code: 404, type: 'text/html', body: '<html><title>Internal wiki</title>secret page</html>' },
    { code: 401, type: 'application/json', body: json({ message: 'not a Status' }) }
  ]
  let next = 0
  const server = await started(t, (_req, res) => {
    const answer = answers[next++] as (typeof answers)[number]
    res.writeHead(answer.code, { 'content-type': answer.type })
    res.end(answer.body)
  })
  const connection = workloadConnection(server.kubeconfig(), SETTINGS)
  t.teardown(() => connection.close())
  const api = connection.api(limits())
  const forbidden = await failure(api.listNodes('a=b'))
  t.match(classifyError(forbidden), { reason: 'Forbidden', message: /nodes is forbidden: User "agent" cannot list$/ })
  const failed = await failure(api.listNodes('a=b'))
  t.equal(failed.message, `list Nodes: HTTP 500: boom ${'y'.repeat(195)}…`, 'one line, clipped to 200 characters')
  const notFound = await failure(api.listNodes('a=b'))
  t.equal(notFound.message, 'list Nodes: HTTP 404', 'a page that is not a Status is not copied')
  t.notMatch(classifyError(notFound).message, 'wiki')
  const unauthorized = await failure(api.listNodes('a=b'))
  t.match(classifyError(unauthorized), { reason: 'CredentialInvalid', message: /list Nodes: HTTP 401$/ })
})

t.test('an encoded answer, an answer that is not JSON, and a list that is not a list are refused', async (t) => {
  const answers = [
    (res: import('node:http').ServerResponse) => {
      res.writeHead(200, { 'content-encoding': 'gzip', 'content-type': 'application/json' })
      res.end(Buffer.from([0x1f, 0x8b]))
    },
    (res: import('node:http').ServerResponse) => res.end('<html>'),
    (res: import('node:http').ServerResponse) => res.end(json({ items: { not: 'a list' } }))
  ]
  let next = 0
  const server = await started(t, (_req, res) => (answers[next++] as (typeof answers)[number])(res))
  const connection = workloadConnection(server.kubeconfig(), SETTINGS)
  t.teardown(() => connection.close())
  const api = connection.api(limits())
  t.match((await failure(api.listNodes('a=b'))).message, 'list Nodes: the answer is gzip-encoded; the agent reads only plain answers')
  t.match((await failure(api.listNodes('a=b'))).message, 'list Nodes: the answer is not JSON')
  t.match((await failure(api.listNodes('a=b'))).message, 'list Nodes: the answer is not a list')
})

t.test('a server whose certificate the kubeconfig CA did not sign is refused', async (t) => {
  const server = await started(t, (_req, res) => res.end('{}'))
  const stranger = issueCa(new Date(), 1, 'another-ca')
  const other = { ...server.kubeconfig(), caData: Buffer.from(stranger.caCert).toString('base64') }
  const connection = workloadConnection(other, SETTINGS)
  t.teardown(() => connection.close())
  const error = await failure(connection.api(limits()).getNode('a'))
  t.equal(classifyError(error).reason, 'Unreachable')
  t.equal(server.seen.length, 0)
})
