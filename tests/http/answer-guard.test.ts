/**
 * The answer guard on the wire: a hook answer holding an object its controller may not create is
 * never sent. The route answers a masked 500 carrying the request id, and the log line under that
 * id names every violation (style.md, the third error tier). And the attack of a tenant's
 * last-applied record, sent through the real route, is answered 200 without the object it names.
 */
import t from 'tap'
import { Writable } from 'node:stream'
import { Type } from '@sinclair/typebox'
import { buildApp, hookRoute } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import { INSTANCE_CHILD_RULE } from '../../hooks/instance/answer-rule.ts'
import { LAST_APPLIED_ANNOTATION } from '../../hooks/metacontroller/observed.ts'
import { PRIVILEGED, builtPod, sshRelated } from '../support/instance-requests.ts'
import { NAME, NOW, NS, POD_STATUS, baseSpec, instance, observedPod, request, setting } from '../unit/fixtures/instance.ts'

const binding = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRoleBinding',
  metadata: { name: 'tenant-admin' },
  roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
  subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: NS }]
}

t.test('an answer holding an object the controller may not create is a masked 500, logged with the request id', async (t) => {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== '')
      )
      done()
    }
  })
  const app = await buildApp({
    routes: [
      hookRoute({
        path: '/hooks/test/unsafe',
        hook: 'test_unsafe',
        surface: 'hooks',
        schema: Type.Object({}, { additionalProperties: true }),
        handle: () => ({ children: [binding], status: {} }),
        guard: INSTANCE_CHILD_RULE
      })
    ],
    logger: { level: 'info', stream }
  })
  t.teardown(() => app.close())
  const res = await app.inject({
    method: 'POST',
    url: '/hooks/test/unsafe',
    payload: { parent: { metadata: { name: NAME, namespace: NS } } }
  })
  t.equal(res.statusCode, 500)
  const body = res.json<{ error: string; message: string; requestId: string }>()
  t.strictSame(Object.keys(body).sort(), ['error', 'message', 'requestId'])
  t.match(body.message, body.requestId)
  t.notMatch(res.body, /ClusterRoleBinding|tenant-admin/, 'the answer says nothing of what was refused')
  const logged = lines.map((l) => JSON.parse(l) as { reqId?: string; msg?: string; err?: { message?: string; code?: string } })
  const entry = logged.find((l) => l.reqId === body.requestId && l.msg === 'hook failed')
  t.equal(entry?.err?.code, 'GPUHOOKS_UNSAFE_ANSWER')
  t.match(
    entry?.err?.message,
    /test_unsafe: the answer holds what its controller may not create, so it was not sent: children\[0\] ClusterRoleBinding\.rbac\.authorization\.k8s\.io\/v1 tenant-admin: gpuhooks-instance declares only Pod\.v1, Service\.v1/
  )
})

t.test('the attack through the real route: a Pod recording a ClusterRoleBinding is answered as itself, 200', async (t) => {
  const app = await buildApp({ routes, clock: () => NOW })
  t.teardown(() => app.close())
  const spec = baseSpec({ sshPublicKey: { name: 'keys' } })
  const pod = observedPod(builtPod(spec, { sshImage: 'img' }), POD_STATUS.running, { node: 'gpu-1' })
  const annotations = pod.metadata.annotations as Record<string, string>
  annotations[LAST_APPLIED_ANNOTATION] = JSON.stringify({ ...binding, metadata: { ...binding.metadata, labels: pod.metadata.labels } })
  const payload = request({
    parent: instance(spec),
    children: [pod],
    related: sshRelated({ namespaceLabels: PRIVILEGED, extra: [setting('instance-ssh-server-image', 'img')] })
  })
  const res = await app.inject({ method: 'POST', url: '/hooks/instance/sync', payload })
  t.equal(res.statusCode, 200)
  const answer = res.json<{ children: Array<{ kind: string; metadata: { name: string; namespace: string } }> }>()
  t.strictSame(
    answer.children.map((c) => `${c.kind} ${c.metadata.namespace}/${c.metadata.name}`),
    [`Pod ${NS}/${NAME}`, `Service ${NS}/${NAME}`],
    'the Pod is kept, as itself; nothing else is answered'
  )
  t.notMatch(res.body, /ClusterRoleBinding|cluster-admin/)
})
