// Which source files a test file's coverage counts for (tap `coverage-map`): all it loads, except
// for the process test. That one starts the service under tsx, whose compiled text differs from
// the test loader's, so its counts would land on the wrong lines when merged with the rest; it
// checks the process (signals, listeners, TLS), and the same code is covered in-process.
export default function coverageMap(testFile) {
  return testFile.replace(/\\/g, '/').endsWith('tests/http/process.test.ts') ? null : []
}
