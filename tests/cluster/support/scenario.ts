/**
 * The start of a scenario file: its world (env.ts), stopped when the file's tests end.
 */
import t from 'tap'
import { startEnv, type ClusterEnv, type EnvOptions } from './env.ts'

/** Starts the scenario's world and stops it in the file's teardown. */
export async function startScenario(options: EnvOptions = {}): Promise<ClusterEnv> {
  const env = await startEnv(options)
  t.teardown(() => env.stop())
  return env
}
