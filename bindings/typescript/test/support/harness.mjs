// Shared helpers of the integration tests: the orchestration's REST API (submit a task, wait for it,
// read its steps), child host processes (lines on stdout, SIGTERM), and psql for what the API does
// not show. Tests wait for conditions; the deadlines only stop a hang.
import { spawn, execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

export const TEST_DIR = dirname(dirname(fileURLToPath(import.meta.url)));
export const PACKAGE_DIR = dirname(TEST_DIR);
export const NAMESPACE = 'ts_sdk';

/** The orchestration's base URL (set by bindings/python/tests/test_typescript_sdk.py). */
export function orchestrationUrl() {
  const address = process.env.TASKER_TEST_ORCHESTRATION_URL;
  if (!address) throw new Error('TASKER_TEST_ORCHESTRATION_URL is not set: run through bindings/python/tests/test_typescript_sdk.py');
  return address.startsWith('http') ? address : `http://${address}`;
}

async function api(method, path, body) {
  const response = await fetch(`${orchestrationUrl()}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: HTTP ${response.status}: ${text}`);
  return text ? JSON.parse(text) : null;
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Creates a task of `ts_sdk/name` 1.0.0; returns its uuid. */
export async function submitTask(name, context, namespace = NAMESPACE) {
  const task = await api('POST', '/v1/tasks', {
    name, namespace, version: '1.0.0', context,
    initiator: 'typescript-sdk-tests', source_system: 'node --test', reason: 'TypeScript SDK test',
  });
  return task.task_uuid;
}

export function getTask(taskUuid) {
  return api('GET', `/v1/tasks/${taskUuid}`);
}

/** The task's steps by name (each a StepResponse with `results`, `current_state`, ...). */
export async function steps(taskUuid) {
  const list = await api('GET', `/v1/tasks/${taskUuid}/workflow_steps`);
  return Object.fromEntries(list.map((step) => [step.name, step]));
}

/** The stored StepExecutionResult of the step named `name`. */
export async function stepResult(taskUuid, name) {
  const step = (await steps(taskUuid))[name];
  if (!step) throw new Error(`task ${taskUuid} has no step ${name}`);
  return step.results;
}

/**
 * Waits until `probe()` returns a truthy value (polling the condition); fails after `timeoutMs` with
 * `describe()`'s text. `hosts` that exit meanwhile fail it at once.
 */
export async function waitFor(probe, { timeoutMs = 90_000, describe = () => '', hosts = [] } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    for (const host of hosts) {
      if (host.exited) throw new Error(`host ${host.name} exited (${host.exitCode}) while waiting\n${host.output()}`);
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms: ${await describe()}\n${hosts.map((h) => h.output()).join('\n')}`);
    await pause(100);
  }
}

/** Waits until the task is complete or error (or one of `states`); returns the state. */
export async function waitForTask(taskUuid, { states = ['complete', 'error'], hosts = [], timeoutMs } = {}) {
  let last = null;
  return waitFor(async () => {
    last = await getTask(taskUuid);
    return states.includes(last.status) ? last.status : null;
  }, {
    timeoutMs, hosts,
    describe: async () => `task ${taskUuid} still ${last?.status}; steps ${JSON.stringify(Object.fromEntries(Object.entries(await steps(taskUuid)).map(([n, s]) => [n, s.current_state])))}`,
  });
}

/** One JSON value from psql (DATABASE_URL of the test). */
export function sqlJson(sql) {
  const text = execFileSync('psql', ['-X', '-A', '-t', '-q', '-v', 'ON_ERROR_STOP=1', '-d', process.env.DATABASE_URL, '-c', sql], { encoding: 'utf8' }).trim();
  return text ? JSON.parse(text) : null;
}

/** A child Node process (a worker host): stdout lines collected, stderr kept for failure messages. */
export class Host {
  constructor(name, script, env = {}) {
    this.name = name;
    this.lines = [];
    this.stderr = '';
    this.exited = false;
    this.exitCode = null;
    this.waiters = [];
    this.child = spawn(process.execPath, [script], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let partial = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop();
      for (const line of parts) this.lines.push(line);
      this.notify();
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk) => {
      this.stderr += chunk;
      this.notify();
    });
    this.exit = once(this.child, 'exit').then(([code, signal]) => {
      this.exited = true;
      this.exitCode = code ?? signal;
      this.notify();
      return this.exitCode;
    });
  }

  notify() {
    for (const waiter of [...this.waiters]) waiter();
  }

  /** All output (for failure messages). */
  output() {
    return `--- ${this.name} stdout ---\n${this.lines.join('\n')}\n--- ${this.name} stderr (last 6000 chars) ---\n${this.stderr.slice(-6000)}`;
  }

  /** The first stdout line starting with `prefix` (fails when the host exits first). */
  waitForLine(prefix, timeoutMs = 90_000) {
    return this.waitUntil(() => this.lines.find((line) => line.startsWith(prefix)), `a line starting with ${JSON.stringify(prefix)}`, timeoutMs);
  }

  /** Resolves when stderr (the worker's log) contains `text`. */
  waitForLog(text, timeoutMs = 90_000) {
    return this.waitUntil(() => (this.stderr.includes(text) ? text : undefined), `log text ${JSON.stringify(text)}`, timeoutMs);
  }

  waitUntil(check, what, timeoutMs) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => finish(new Error(`no ${what} from ${this.name} within ${timeoutMs} ms\n${this.output()}`)), timeoutMs);
      const waiter = () => {
        const found = check();
        if (found !== undefined) finish(null, found);
        else if (this.exited) finish(new Error(`${this.name} exited (${this.exitCode}) before ${what}\n${this.output()}`));
      };
      const finish = (error, value) => {
        clearTimeout(timer);
        this.waiters = this.waiters.filter((w) => w !== waiter);
        if (error) reject(error);
        else resolve(value);
      };
      this.waiters.push(waiter);
      waiter();
    });
  }

  /** SIGTERM; resolves with the exit code (SIGKILL after `timeoutMs`, then fails). */
  async terminate(timeoutMs = 60_000) {
    if (!this.exited) this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    const code = await this.exit;
    clearTimeout(timer);
    return code;
  }

  /** Stops the host at the end of a test file (SIGTERM, and SIGKILL if it hangs). */
  async close() {
    if (!this.exited) await this.terminate(30_000);
  }
}

/** Starts `test/hosts/ts_host.mjs` and waits for its READY line. */
export async function startHost(name = 'host', env = {}) {
  const host = new Host(name, join(TEST_DIR, 'hosts', 'ts_host.mjs'), env);
  await host.waitForLine('READY', 120_000);
  return host;
}
