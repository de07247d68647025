/**
 * The environment of a process that a unit or HTTP test starts (the service under tsx, the CLI, a
 * script): the test's own, with tap's coverage recording off in the child.
 *
 * tap records coverage in every process a test starts. A child under tsx's CLI compiles the same
 * hooks/ files to other text than the test's loader does, so its counts would be merged onto the
 * wrong offsets of those files, and, depending on the order the coverage files are merged in,
 * whole folders lost their branch counts (`npm test` then failed its branch floor now and then).
 * What these tests check of a child is its behaviour; its code is covered in-process.
 */
export function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0', ...extra }
}
