/**
 * The benchmark's payloads still get the answers it expects, so a change to the hooks that would
 * make `npm run bench` time a rejection fails here first. (No timing: only the answers.)
 */
import t from 'tap'
import { buildApp } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import { largestPoolPayload, payloads, type Payload } from '../bench/payloads.ts'

const app = await buildApp({ routes })
t.teardown(() => app.close())

/** Posts a payload as the benchmark does. */
const post = (payload: Payload) =>
  app.inject({ method: 'POST', url: payload.path, headers: { 'content-type': 'application/json' }, payload: payload.body })

for (const payload of payloads()) {
  t.test(`bench payload "${payload.name}" is answered as the bench expects`, async (t) => {
    const res = await post(payload)
    t.equal(res.statusCode, 200)
    t.equal(payload.check(res.json()), undefined)
  })
}

t.test('the largest legal pool request is answered within its own size, with the two Secrets and two guests it lacks', async (t) => {
  const payload = largestPoolPayload()
  const res = await post(payload)
  t.equal(res.statusCode, 200)
  t.equal(payload.check(res.json()), undefined)
  const request = Buffer.byteLength(payload.body)
  t.ok(request > 12 * 1024 * 1024, `the request fills most of the 16 MiB body limit (${request} bytes)`)
  t.ok(res.rawPayload.length < request, `the answer (${res.rawPayload.length} bytes) is smaller than the request`)
})
