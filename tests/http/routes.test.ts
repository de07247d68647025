/**
 * Every route of the service through inject, on the app the factory `main` uses builds (or, with
 * GPUHOOKS_SERVICE_URL, over the network to a running service: support/inject.ts): each hook
 * path answers 200 with an answer that fits its response schema (no undocumented field: v2
 * decodes strictly), admission echoes the uid in a well-formed AdmissionReview, and wrongly
 * shaped requests answer 400 naming the field.
 */
import t, { type Test } from 'tap'
import { buildApp } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import type { TSchema } from '@sinclair/typebox'
import { AdmissionResponseSchema } from '../../hooks/admission/review.ts'
import { CompositeResponseSchema, CustomizeResponseSchema, DecoratorResponseSchema } from '../../hooks/metacontroller/schemas.ts'
import { NOW, baseSpec, instance, request } from '../unit/fixtures/instance.ts'
import { answerErrors, ErrorAnswerSchema } from '../support/answers.ts'
import { malformedComposite, servicePoster, type Malformed } from './support/inject.ts'

const app = await buildApp({ routes, clock: () => NOW })
t.teardown(() => app.close())

const post = servicePoster(app)

const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a', uid: 'ns-uid' }, status: { phase: 'Active' } }
const cidrSetting = {
  apiVersion: 'gpustack.ai/v1alpha1',
  kind: 'Setting',
  metadata: { name: 'instance-isolation-pod-cidrs' },
  value: '10.244.0.0/16'
}

/** The answer fits the response schema Metacontroller decodes it with; the list names each misfit. */
function fits(t: Test, schema: TSchema, body: unknown, what: string) {
  t.same(answerErrors(schema, body), [], `the answer is a well-formed ${what}, with no undocumented field`)
}

t.test('the answer check fails an undocumented field, a child without a kind and a misspelt selector field', async (t) => {
  t.same(answerErrors(CompositeResponseSchema, { children: [], status: {}, resync: 1 }), ['/resync: Unexpected property'])
  t.same(answerErrors(CompositeResponseSchema, { children: [{ apiVersion: 'v1', metadata: { name: 'a' } }], status: {} }), [
    '/children/0/kind: Expected required property',
    '/children/0/kind: Expected string'
  ])
  t.same(
    answerErrors(CustomizeResponseSchema, {
      relatedResources: [{ apiVersion: 'v1', resource: 'secrets', labelSelector: { matchLabel: {} } }]
    }),
    ['/relatedResources/0/labelSelector/matchLabel: Unexpected property']
  )
  t.same(answerErrors(DecoratorResponseSchema, { attachments: [], status: null, labels: { a: 1 } }), ['/labels/a: Expected union value'])
  t.same(
    answerErrors(AdmissionResponseSchema, {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u', allowed: true, patch: 'x' }
    }),
    ['/response/patch: Unexpected property']
  )
  t.same(answerErrors(ErrorAnswerSchema, { error: 'Bad Request', message: 'x', fields: [], statusCode: 400 }), [
    '/statusCode: Unexpected property',
    '/fields: Expected array length to be greater or equal to 1'
  ])
})

t.test('instance customize answers 200 with relatedResources only', async (t) => {
  const res = await post('/hooks/instance/customize', { controller: {}, parent: instance() })
  t.equal(res.status, 200)
  fits(t, CustomizeResponseSchema, res.body, 'customize answer')
  t.ok(Array.isArray(res.body.relatedResources))
})

t.test('instance sync answers 200 with children and a full status', async (t) => {
  const res = await post('/hooks/instance/sync', request({ parent: instance(baseSpec({ ports: [{ port: 8888 }] })) }))
  t.equal(res.status, 200)
  fits(t, CompositeResponseSchema, res.body, 'composite answer')
  t.same(
    (res.body.children as Array<{ kind: string }>).map((c) => c.kind),
    ['Pod', 'Service']
  )
  t.equal((res.body.status as { phase: string }).phase, 'Pending')
})

t.test('instance finalize answers 200 and finalized once nothing is observed', async (t) => {
  const res = await post('/hooks/instance/finalize', request({ parent: instance(baseSpec(), { deleting: true }), finalizing: true }))
  t.equal(res.status, 200)
  fits(t, CompositeResponseSchema, res.body, 'composite answer')
  t.same(res.body.children, [])
  t.equal(res.body.finalized, true)
})

t.test('isolation customize answers 200 with relatedResources only', async (t) => {
  const res = await post('/hooks/isolation/customize', { controller: {}, parent: namespace })
  t.equal(res.status, 200)
  fits(t, CustomizeResponseSchema, res.body, 'customize answer')
})

t.test('isolation sync answers attachments, annotations, a null status and only the holds-instances label', async (t) => {
  const res = await post('/hooks/isolation/sync', {
    controller: {},
    object: namespace,
    attachments: { 'NetworkPolicy.networking.k8s.io/v1': {} },
    related: {
      'Instance.worker.gpustack.ai/v1alpha1': { 'team-a/ws': instance() },
      'Setting.gpustack.ai/v1alpha1': { 'instance-isolation-pod-cidrs': cidrSetting }
    }
  })
  t.equal(res.status, 200)
  fits(t, DecoratorResponseSchema, res.body, 'decorator answer')
  t.equal(res.body.status, null)
  t.same(res.body.labels, { 'gpustack.ai/holds-instances': 'true' })
  t.same(
    (res.body.attachments as Array<{ metadata: { name: string } }>).map((a) => a.metadata.name),
    ['gpustack-instance-isolation']
  )
})

const review = (object: unknown, uid = 'uid-1') => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  request: { uid, kind: { group: 'worker.gpustack.ai', version: 'v1alpha1', kind: 'Instance' }, operation: 'CREATE', object }
})

t.test('admission allows a good Instance and echoes the uid', async (t) => {
  const res = await post('/admission/instance', review(instance(), 'echo-me'))
  t.equal(res.status, 200)
  fits(t, AdmissionResponseSchema, res.body, 'AdmissionReview answer')
  t.same(res.body, { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid: 'echo-me', allowed: true } })
})

t.test('admission denies with 422 and every problem joined', async (t) => {
  const bad = instance(
    baseSpec({
      ports: [
        { port: 80, protocol: 'TCP' },
        { port: 80, protocol: 'UDP' }
      ],
      workspace: { size: '1Gi', claimName: 'c' }
    })
  )
  const res = await post('/admission/instance', review(bad))
  t.equal(res.status, 200)
  fits(t, AdmissionResponseSchema, res.body, 'AdmissionReview answer')
  const response = res.body.response as { uid: string; allowed: boolean; status: { code: number; message: string } }
  t.equal(response.uid, 'uid-1')
  t.equal(response.allowed, false)
  t.equal(response.status.code, 422)
  t.match(response.status.message, /spec\.ports/)
  t.match(response.status.message, /spec\.workspace/)
  t.match(response.status.message, /; /, 'problems are joined')
})

const malformed: Malformed[] = [
  ...malformedComposite('/hooks/instance', instance()),
  { name: 'a decorator sync without an object', url: '/hooks/isolation/sync', payload: { attachments: {} }, field: 'object' },
  { name: 'a customize without a parent', url: '/hooks/instance/customize', payload: { controller: {} }, field: 'parent' },
  {
    name: 'an AdmissionReview without a request',
    url: '/admission/instance',
    payload: { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' },
    field: 'request'
  },
  {
    name: 'an AdmissionReview of another version',
    url: '/admission/instance',
    payload: { ...review(instance()), apiVersion: 'admission.k8s.io/v1beta1' },
    field: 'apiVersion'
  },
  {
    name: 'an AdmissionReview without a uid',
    url: '/admission/instance',
    payload: {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: { kind: { group: '', version: 'v1', kind: 'X' }, operation: 'CREATE' }
    },
    field: 'request.uid'
  }
]
for (const row of malformed) {
  t.test(`${row.name} answers 400 naming ${row.field}`, async (t) => {
    const res = await post(row.url, row.payload)
    t.equal(res.status, 400)
    fits(t, ErrorAnswerSchema, res.body, 'error answer')
    t.equal(res.body.error, 'Bad Request')
    t.ok((res.body.fields as string[]).includes(row.field), `fields ${JSON.stringify(res.body.fields)} name ${row.field}`)
  })
}

t.test('a spec error is not an HTTP error: 200 with SpecValid False', async (t) => {
  const res = await post('/hooks/instance/sync', request({ parent: instance(baseSpec({ type: 'missing' })) }))
  t.equal(res.status, 200)
  fits(t, CompositeResponseSchema, res.body, 'composite answer')
  const conditions = (res.body.status as { conditions: Array<{ type: string; status: string; reason: string }> }).conditions
  const specValid = conditions.find((c) => c.type === 'SpecValid')
  t.equal(specValid?.status, 'False')
  t.equal(specValid?.reason, 'InstanceTypeNotFound')
})

t.test('an isolation sync relating 6000 Instances within the body limit is served', async (t) => {
  const many: Record<string, unknown> = {}
  for (let i = 0; i < 6000; i++) many[`team-a/ws-${i}`] = instance(baseSpec(), { name: `ws-${i}` })
  const payload = {
    controller: {},
    object: namespace,
    attachments: { 'NetworkPolicy.networking.k8s.io/v1': {} },
    related: {
      'Instance.worker.gpustack.ai/v1alpha1': many,
      'Setting.gpustack.ai/v1alpha1': { 'instance-isolation-pod-cidrs': cidrSetting }
    }
  }
  t.ok(JSON.stringify(payload).length > 1024 * 1024, 'over 1 MiB, fastify’s own default limit')
  const res = await post('/hooks/isolation/sync', payload)
  t.equal(res.status, 200)
  fits(t, DecoratorResponseSchema, res.body, 'decorator answer')
})
