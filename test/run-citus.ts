/**
 * `npm run test:citus`: the whole HTTP test suite of `npm test` on a Citus cluster (docs/citus.md).
 *
 * 1. A coordinator and two workers on 127.0.0.1 with throwaway data directories (scripts/citus.sh:
 *    Citus 13.2.2 is built from ../shared/vendor and installed into PostgreSQL 15 when missing).
 *    CITUS_URL instead names the database of a running coordinator (its workers registered): nothing
 *    is started or stopped then.
 * 2. `workplace migrate` and `workplace db distribute` on the coordinator, as an operator runs them.
 * 3. test/run-tests.ts on that database with TEST_CITUS=1: the same files as `npm test`, the API's
 *    connections with `citus.multi_task_query_log_level = error` (a request's statement that Citus
 *    sends to more than one shard fails the test that sent it), then the routable-statements check,
 *    whose Citus side explains every captured statement on the coordinator (test/helpers/routed-on-citus.ts).
 *    The cluster's own checks are test/citus-cluster.test.ts; the demo start is test/readme.test.ts.
 *    Then `--suite citus` (test/citus/*.citus.ts): a tenant moved, isolated and rebalanced under load.
 * 4. The cluster is stopped and its directories removed (also on failure or Ctrl-C).
 *
 * Arguments are test files, as for run-tests.ts (default: all).
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'

const root = path.resolve(import.meta.dirname, '..')
const script = path.join(root, 'scripts/citus.sh')
const started = Date.now()

function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
  capture = false,
): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'] })
    let stdout = ''
    child.stdout?.on('data', (chunk) => (stdout += chunk))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code: code ?? 1, stdout }))
  })
}

async function workplace(url: string, ...args: string[]): Promise<void> {
  const { code } = await run(process.execPath, [path.join(root, 'bin/workplace.js'), ...args], {
    ...process.env,
    DATABASE_URL: url,
    WORKPLACE_FROM_SOURCE: '1',
    LOG_LEVEL: 'warn',
  })
  if (code !== 0) throw new Error(`workplace ${args.join(' ')} exited ${code}`)
}

async function main(): Promise<number> {
  let url = process.env.CITUS_URL
  // a started but not yet added worker (scripts/citus.sh): the tenant-moves test adds it and rebalances
  let spareWorker = process.env.CITUS_SPARE_WORKER
  let stop = async () => {}
  if (!url) {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'workplace-citus-'))
    stop = async () => {
      await run('bash', [script, 'stop', dir])
    }
    const onSignal = () => void stop().finally(() => process.exit(130))
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    const { code, stdout } = await run('bash', [script, 'start', dir], process.env, true)
    url = /CITUS_URL=(\S+)/.exec(stdout)?.[1]
    spareWorker = /CITUS_SPARE_WORKER=(\S+)/.exec(stdout)?.[1]
    if (code !== 0 || !url) {
      await stop()
      throw new Error(`scripts/citus.sh start failed (${code})`)
    }
  }
  try {
    console.log(`# citus: workplace migrate, workplace db distribute on ${new URL(url).host}`)
    await workplace(url, 'migrate')
    await workplace(url, 'db', 'distribute')
    const env = {
      ...process.env,
      TEST_PREPARED_DATABASE_URL: url,
      TEST_CITUS: '1',
      // the API's connections of servers the tests start (the test pool: test/helpers/citus.ts)
      CITUS_MULTI_SHARD_LOG_LEVEL: 'error',
      CITUS_SPARE_WORKER: spareWorker ?? '',
    }
    const runTests = path.join(root, 'test/run-tests.ts')
    const files = process.argv.slice(2)
    const clusterFiles = files.filter((f) => f.endsWith('.citus.ts'))
    const suiteFiles = files.filter((f) => !f.endsWith('.citus.ts'))
    let code = 0
    if (suiteFiles.length > 0 || files.length === 0)
      code = (await run(process.execPath, ['--import', 'tsx', runTests, ...suiteFiles], env)).code
    // then the cluster's own: tenants moved under load (after the suite: the moves must not race its tests)
    if (code === 0 && (clusterFiles.length > 0 || files.length === 0)) {
      console.log('# citus: tenants moved, isolated and rebalanced under load (test/citus/*.citus.ts)')
      code = (await run(process.execPath, ['--import', 'tsx', runTests, '--suite', 'citus', ...clusterFiles], env)).code
    }
    return code
  } finally {
    await stop()
    console.log(`# test:citus finished in ${Math.round((Date.now() - started) / 1000)} s`)
  }
}

main().then(
  (code) => process.exit(code),
  (error) => {
    console.error(error)
    process.exit(1)
  },
)
