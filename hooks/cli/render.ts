#!/usr/bin/env node
/**
 * The package's `gpuhooks` command. `gpuhooks render ...` (see run.ts) is its one subcommand;
 * `render` may be left out.
 */
import { runRender } from './run.ts'

const argv = process.argv.slice(2)
const rest = argv[0] === 'render' ? argv.slice(1) : argv
process.exitCode = runRender(rest, {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text)
})
