/**
 * Routes only tests serve: a hook with a bug in it, for the 500 tier.
 */
import { Type } from '@sinclair/typebox'
import { hookRoute } from '../../../hooks/server/app.ts'

/** `POST /hooks/fail`: throws, as a hook with a bug would. */
export const failingRoute = hookRoute({
  path: '/hooks/fail',
  hook: 'fail',
  surface: 'hooks',
  schema: Type.Object({}),
  handle: () => {
    throw new Error('bug')
  },
  guard: null
})
