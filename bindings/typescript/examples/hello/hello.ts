// The README's first handler: two steps of the `ts_example/greeting` template (templates/greeting.yaml),
// one class-style handler and one function-style handler, served by an embedded worker until SIGTERM.
import { StepHandler, Worker, defineHandler, type StepContext } from '@tasker-swift/worker';

/** Step `greet`: reads the task context, returns a greeting. */
class GreetHandler extends StepHandler {
  static handlerName = 'example.greet';

  async call(context: StepContext) {
    const name = context.getInput<string>('name');
    if (typeof name !== 'string' || name.length === 0) {
      return this.failure('context.name must be a non-empty string', 'validation_error', false);
    }
    const punctuation = context.getConfig<string>('punctuation') ?? '!';
    return this.success({ greeting: `Hello, ${name}${punctuation}` });
  }
}

/** Step `shout`: reads `greet`'s result. */
const ShoutHandler = defineHandler('example.shout', { depends: { greet: 'greet' } }, async ({ greet }) => {
  const { greeting } = greet as { greeting: string };
  return { shouted: greeting.toUpperCase() };
});

const worker = new Worker({ handlers: [GreetHandler, ShoutHandler] });
worker
  .run({ onStart: (started) => console.log(`READY ${String(started.worker_id)}`) })
  .then(() => console.log('STOPPED'))
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  });
