/// The task console's page (served by ``ConsoleRoutes``; compiled into the binary, no build step,
/// nothing from a CDN; its style sheet is ``css``, in ConsoleStyle.swift). The page is a static
/// skeleton: every value is filled in by `console.js` (``ConsoleScript``) as DOM text, never as markup.
/// From the top: the credentials form (when the API asks for them), the open task (facts, upstream's
/// summary, DAG, steps with their actions, failures, context), the task overview, the live workers
/// and the throughput chart, and the dead-letter queue (entries with their actions, statistics,
/// investigation queue, staleness).
enum ConsolePage {
    static let html = #"""
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Tasker task console</title>
        <link rel="stylesheet" href="/console/console.css">
        <script src="/console/console.js" defer></script>
        </head>
        <body>
        <header>
          <h1><a href="#">Tasker task console</a></h1>
          <span id="status" class="muted">loading…</span>
        </header>
        <section id="auth" hidden>
          <h2>Credentials</h2>
          <p>This orchestration requires authentication (<code>[orchestration.web.auth]</code>). The console sends
          what you enter with each request; it is kept in this tab only (sessionStorage).</p>
          <form id="auth-form">
            <select id="auth-kind"><option value="api_key">API key</option><option value="bearer">Bearer token</option></select>
            <input id="auth-value" type="password" autocomplete="off" placeholder="key or token" size="40">
            <button type="submit">Use</button>
          </form>
          <p id="auth-error" class="error"></p>
        </section>
        <main>
          <section id="task" hidden>
            <p class="back"><a href="#" id="task-close">&larr; all tasks</a></p>
            <h2 id="task-title"></h2>
            <dl id="task-facts" class="facts"></dl>
            <h3>Summary</h3>
            <p id="summary-error" class="error"></p>
            <dl id="summary-facts" class="facts"></dl>
            <table id="summary-steps" hidden>
              <thead><tr><th>template step</th><th>handler</th><th>type</th><th>depends on</th><th>retryable, attempts</th><th>error</th></tr></thead>
              <tbody></tbody>
            </table>
            <div id="dag-frame"><svg id="dag" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="the task's steps and their dependencies"></svg></div>
            <table id="steps">
              <thead><tr><th>step</th><th>state</th><th>attempts</th><th>created</th><th>claimed</th><th>completed</th><th>result or error</th><th>actions</th></tr></thead>
              <tbody></tbody>
            </table>
            <p id="step-action-answer" class="answer" role="status"></p>
            <form id="step-action" class="action-form" hidden>
              <h3 id="step-action-title"></h3>
              <p id="step-action-help" class="muted"></p>
              <label>operator <input id="step-action-operator" autocomplete="off" size="24" placeholder="who you are (recorded)"></label>
              <label>reason <input id="step-action-reason" autocomplete="off" size="48" placeholder="why (recorded)"></label>
              <div id="step-action-completion" hidden>
                <label>result (JSON) <textarea id="step-action-result" rows="6" cols="60" spellcheck="false" placeholder='{"value": 42}'></textarea></label>
                <label>metadata (a JSON object, optional) <textarea id="step-action-metadata" rows="3" cols="60" spellcheck="false"></textarea></label>
              </div>
              <p id="step-action-error" class="error"></p>
              <button type="submit" id="step-action-send">Send</button>
              <button type="button" id="step-action-cancel">Cancel</button>
            </form>
            <section id="failures" hidden>
              <h3>Failures</h3>
              <div id="failure-list"></div>
            </section>
            <h3>Context</h3>
            <pre id="task-context"></pre>
          </section>
          <section id="overview">
            <h2>Tasks by state</h2>
            <div id="counts"></div>
            <form id="filters">
              <label>namespace <select id="filter-namespace"><option value="">all</option></select></label>
              <label>state <select id="filter-state"><option value="">all</option></select></label>
              <button type="button" id="page-previous">&larr; newer</button>
              <span id="page-label"></span>
              <button type="button" id="page-next">older &rarr;</button>
            </form>
            <table id="tasks">
              <thead><tr><th>created</th><th>namespace</th><th>task</th><th>state</th><th>steps</th><th>uuid</th></tr></thead>
              <tbody></tbody>
            </table>
          </section>
          <section id="activity">
            <h2>Workers</h2>
            <p id="workers-note" class="muted"></p>
            <p id="workers-error" class="error"></p>
            <table id="workers">
              <thead><tr><th>worker</th><th>host</th><th>namespaces</th><th>steps in flight</th><th>started</th><th>lease</th></tr></thead>
              <tbody></tbody>
            </table>
            <h2>Throughput and latency</h2>
            <p id="throughput-note" class="muted"></p>
            <p id="throughput-error" class="error"></p>
            <div id="chart-frame"><svg id="throughput" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="steps completed and failed per minute, and their latency"></svg></div>
          </section>
          <section id="dlq">
            <h2>Dead-letter queue</h2>
            <p id="dlq-error" class="error"></p>
            <p id="dlq-empty" hidden>The DLQ is empty.</p>
            <table id="dlq-entries" hidden>
              <thead><tr><th>since</th><th>task</th><th>reason</th><th>original state</th><th>resolution</th><th>notes</th><th>actions</th></tr></thead>
              <tbody></tbody>
            </table>
            <p id="dlq-action-answer" class="answer" role="status"></p>
            <form id="dlq-action" class="action-form" hidden>
              <h3 id="dlq-action-title"></h3>
              <label>resolution <select id="dlq-action-status">
                <option value="">unchanged (investigation notes only)</option>
                <option value="manually_resolved">manually_resolved</option>
                <option value="permanently_failed">permanently_failed</option>
                <option value="cancelled">cancelled</option>
              </select></label>
              <label>notes <textarea id="dlq-action-notes" rows="3" cols="60"></textarea></label>
              <label>resolved by <input id="dlq-action-by" autocomplete="off" size="24" placeholder="who you are (recorded)"></label>
              <p id="dlq-action-error" class="error"></p>
              <button type="submit" id="dlq-action-send">Send</button>
              <button type="button" id="dlq-action-cancel">Cancel</button>
            </form>
            <h3>By reason</h3>
            <p id="dlq-stats-error" class="error"></p>
            <table id="dlq-stats">
              <thead><tr><th>reason</th><th>entries</th><th>pending</th><th>manually resolved</th><th>permanently failed</th><th>cancelled</th><th>oldest</th><th>newest</th><th>resolution (min, average)</th></tr></thead>
              <tbody></tbody>
            </table>
            <h3>Investigation queue</h3>
            <p id="dlq-queue-error" class="error"></p>
            <table id="dlq-queue">
              <thead><tr><th>priority</th><th>task</th><th>template</th><th>reason</th><th>in the DLQ</th><th>state</th><th>actions</th></tr></thead>
              <tbody></tbody>
            </table>
            <h3>Staleness of waiting tasks</h3>
            <p id="dlq-staleness-error" class="error"></p>
            <table id="dlq-staleness">
              <thead><tr><th>health</th><th>task</th><th>template</th><th>state</th><th>time in state</th><th>age</th><th>priority</th></tr></thead>
              <tbody></tbody>
            </table>
          </section>
        </main>
        </body>
        </html>
        """#
}
