// Test host: the embedded worker plus the ts.* handlers (fixtures/handlers.mjs) in this process.
// Prints `READY <bootstrap result JSON>` once the worker serves, `DOMAIN_EVENT <name>` per in-process
// domain event, `STOPPED` after SIGTERM drained and stopped it (then exits 0).
// Environment: TASKER_HOST_CONFIG (bootstrap configuration JSON, default {}), TASKER_HOST_CONCURRENCY.
import tasker from '../../dist/index.js';
import { register, announce } from '../fixtures/handlers.mjs';

const worker = new tasker.Worker({
  config: JSON.parse(process.env.TASKER_HOST_CONFIG || '{}'),
  concurrency: Number(process.env.TASKER_HOST_CONCURRENCY || '4'),
});
register(worker.registry);
worker.domainEvents.subscribe('ts_sdk.*', (event) => announce(`DOMAIN_EVENT ${event.event_name}`));
await worker.run({ onStart: (result) => announce(`READY ${JSON.stringify(result)}`) });
announce('STOPPED');
