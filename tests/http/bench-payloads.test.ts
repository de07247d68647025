/**
 * The benchmark's payloads still get the answers it expects, so a change to the hooks that would
 * make `npm run bench` time a rejection fails here first. (No timing: only the answers.)
 */
import t from 'tap'
import { buildApp } from '../../hooks/server/app.ts'
import { routes } from '../../hooks/server/routes.ts'
import { payloads } from '../bench/payloads.ts'

const app = await buildApp({ routes })
t.teardown(() => app.close())

for (const payload of payloads()) {
  t.test(`bench payload "${payload.name}" is answered as the bench expects`, async (t) => {
    const res = await app.inject({
      method: 'POST',
      url: payload.path,
      headers: { 'content-type': 'application/json' },
      payload: payload.body
    })
    t.equal(res.statusCode, 200)
    t.equal(payload.check(res.json()), undefined)
  })
}
