// A no-op TypeScript step handler serving the bench queue, for the `ffi` phase of scripts/bench:
// the TypeScript SDK (bindings/typescript, built by its build.sh), the Swift worker embedded in this
// Node process, the handler on its FFI dispatch channel, `--concurrency` handlers at once.
//
// Takes the run's settings from the environment (TASKER_CONFIG_PATH, DATABASE_URL, TASKER_TEMPLATE_PATH,
// TASKER_WORKER_LIBRARY) like Benchmarks/ffi_worker.py; serves until SIGTERM, then drains and exits.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const { Worker, defineHandler } = require(path.join(here, '../bindings/typescript/dist/index.js'));

const CALLABLE = 'bench.python_noop';   // the bench template's foreign callable (benchlib/ffi.py)
const at = process.argv.indexOf('--concurrency');
const concurrency = at > 0 ? Number(process.argv[at + 1]) : 16;

const noop = defineHandler(CALLABLE, {}, async () => ({ ok: true }));
const worker = new Worker({ handlers: [noop], concurrency });
worker.run().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
