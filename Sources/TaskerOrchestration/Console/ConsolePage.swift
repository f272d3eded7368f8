/// The task console's page and style sheet (served by ``ConsoleRoutes``; compiled into the binary, no
/// build step, nothing from a CDN). The page is a static skeleton: every value is filled in by
/// `console.js` (``ConsoleScript``) as DOM text, never as markup.
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
          <section id="task" hidden>
            <h2 id="task-title"></h2>
            <dl id="task-facts"></dl>
            <div id="dag-frame"><svg id="dag" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="the task's steps and their dependencies"></svg></div>
            <table id="steps">
              <thead><tr><th>step</th><th>state</th><th>attempts</th><th>created</th><th>claimed</th><th>completed</th><th>result or error</th></tr></thead>
              <tbody></tbody>
            </table>
            <h3>Context</h3>
            <pre id="task-context"></pre>
          </section>
          <section id="dlq">
            <h2>Dead-letter queue</h2>
            <p id="dlq-empty" hidden>The DLQ is empty.</p>
            <table id="dlq-entries" hidden>
              <thead><tr><th>since</th><th>task</th><th>reason</th><th>original state</th><th>resolution</th></tr></thead>
              <tbody></tbody>
            </table>
          </section>
        </main>
        </body>
        </html>
        """#

    static let css = #"""
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
        header { display: flex; align-items: baseline; gap: 1em; padding: .6em 1.2em; background: #1d2330; color: #fff; }
        header h1 { font-size: 1.2em; margin: 0; } header a { color: #fff; text-decoration: none; }
        main, #auth { padding: 0 1.2em 1.2em; }
        h2 { font-size: 1.05em; margin: 1.2em 0 .5em; }
        table { border-collapse: collapse; width: 100%; background: #fff; }
        th, td { text-align: left; padding: .3em .5em; border-bottom: 1px solid #e3e6eb; vertical-align: top; }
        th { background: #eef0f4; font-weight: 600; }
        td.uuid, code { font-family: ui-monospace, monospace; font-size: .9em; }
        tr.clickable { cursor: pointer; } tr.clickable:hover { background: #f0f5ff; }
        pre { margin: 0; white-space: pre-wrap; word-break: break-word; max-height: 16em; overflow: auto;
              font: 12px/1.35 ui-monospace, monospace; }
        .muted { color: #8a93a3; } .error { color: #b3261e; }
        #counts { display: flex; flex-wrap: wrap; gap: .5em; margin-bottom: .6em; }
        .count { border: 1px solid #cfd5df; border-radius: 1em; padding: .15em .8em; background: #fff; cursor: pointer; font: inherit; }
        .count.selected { border-color: #1d2330; font-weight: 600; }
        #filters { display: flex; gap: 1em; align-items: center; margin: .4em 0; }
        .state { border-radius: .3em; padding: 0 .4em; font-size: .9em; }
        .state-complete, .state-resolved_manually { background: #d9f2e3; }
        .state-error { background: #fbdcd9; } .state-cancelled { background: #e6e6e6; }
        .state-in_progress, .state-steps_in_process, .state-enqueued, .state-evaluating_results,
        .state-enqueued_for_orchestration, .state-enqueued_as_error_for_orchestration { background: #fff1c7; }
        .state-waiting_for_retry, .state-waiting_for_dependencies, .state-blocked_by_failures { background: #ffe0c2; }
        #task-facts { display: grid; grid-template-columns: max-content 1fr; gap: .1em 1em; }
        #task-facts dt { color: #5b6475; } #task-facts dd { margin: 0; }
        #dag-frame { overflow: auto; background: #fff; border: 1px solid #e3e6eb; margin: .6em 0; }
        #dag .edge { fill: none; stroke: #8a93a3; stroke-width: 1.5; }
        #dag .node rect { stroke: #5b6475; stroke-width: 1; rx: 6; fill: #fff; }
        #dag .node.state-complete rect, #dag .node.state-resolved_manually rect { fill: #d9f2e3; }
        #dag .node.state-error rect { fill: #fbdcd9; } #dag .node.state-cancelled rect { fill: #e6e6e6; }
        #dag .node.state-in_progress rect, #dag .node.state-enqueued rect,
        #dag .node.state-enqueued_for_orchestration rect, #dag .node.state-enqueued_as_error_for_orchestration rect { fill: #fff1c7; }
        #dag .node.state-waiting_for_retry rect { fill: #ffe0c2; }
        #dag text { font: 12px system-ui, sans-serif; fill: #1d2330; } #dag text.sub { fill: #5b6475; font-size: 11px; }
        """#
}
