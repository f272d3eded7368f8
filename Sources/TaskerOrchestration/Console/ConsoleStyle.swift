extension ConsolePage {
    /// The console's style sheet (`/console/console.css`): state colours shared by badges, DAG nodes and
    /// chart; the action forms; the chart's bars and latency lines.
    static let css = #"""
        body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
        header { display: flex; align-items: baseline; gap: 1em; padding: .6em 1.2em; background: #1d2330; color: #fff; }
        header h1 { font-size: 1.2em; margin: 0; } header a { color: #fff; text-decoration: none; }
        main, #auth { padding: 0 1.2em 1.2em; }
        h2 { font-size: 1.05em; margin: 1.2em 0 .5em; } h3 { font-size: 1em; margin: 1em 0 .4em; } h4 { margin: .4em 0; }
        table { border-collapse: collapse; width: 100%; background: #fff; }
        th, td { text-align: left; padding: .3em .5em; border-bottom: 1px solid #e3e6eb; vertical-align: top; }
        th { background: #eef0f4; font-weight: 600; }
        td.uuid, code { font-family: ui-monospace, monospace; font-size: .9em; }
        tr.clickable { cursor: pointer; } tr.clickable:hover, tr.selected { background: #f0f5ff; }
        pre { margin: 0; white-space: pre-wrap; word-break: break-word; max-height: 16em; overflow: auto;
              font: 12px/1.35 ui-monospace, monospace; }
        .muted { color: #8a93a3; } .error { color: #b3261e; } .error:empty, .answer:empty { display: none; }
        #task { background: #fff; border: 1px solid #cfd5df; border-radius: .4em; padding: .2em 1em 1em; margin-top: 1em; }
        #task .back { margin: .6em 0 0; }
        #counts { display: flex; flex-wrap: wrap; gap: .5em; margin-bottom: .6em; }
        .count { border: 1px solid #cfd5df; border-radius: 1em; padding: .15em .8em; background: #fff; cursor: pointer; font: inherit; }
        .count.selected { border-color: #1d2330; font-weight: 600; }
        #filters { display: flex; gap: 1em; align-items: center; margin: .4em 0; }
        .state { border-radius: .3em; padding: 0 .4em; font-size: .9em; }
        .state-complete, .state-resolved_manually, .state-healthy { background: #d9f2e3; }
        .state-error, .state-stale { background: #fbdcd9; } .state-cancelled { background: #e6e6e6; }
        .state-in_progress, .state-steps_in_process, .state-enqueued, .state-evaluating_results,
        .state-enqueued_for_orchestration, .state-enqueued_as_error_for_orchestration, .state-warning { background: #fff1c7; }
        .state-waiting_for_retry, .state-waiting_for_dependencies, .state-blocked_by_failures { background: #ffe0c2; }
        .facts { display: grid; grid-template-columns: max-content 1fr; gap: .1em 1em; margin: .4em 0; }
        .facts dt { color: #5b6475; } .facts dd { margin: 0; }
        #dag-frame, #chart-frame { overflow: auto; background: #fff; border: 1px solid #e3e6eb; margin: .6em 0; }
        #dag .edge { fill: none; stroke: #8a93a3; stroke-width: 1.5; }
        #dag .node rect { stroke: #5b6475; stroke-width: 1; rx: 6; fill: #fff; }
        #dag .node.state-complete rect, #dag .node.state-resolved_manually rect { fill: #d9f2e3; }
        #dag .node.state-error rect { fill: #fbdcd9; } #dag .node.state-cancelled rect { fill: #e6e6e6; }
        #dag .node.state-in_progress rect, #dag .node.state-enqueued rect,
        #dag .node.state-enqueued_for_orchestration rect, #dag .node.state-enqueued_as_error_for_orchestration rect { fill: #fff1c7; }
        #dag .node.state-waiting_for_retry rect { fill: #ffe0c2; }
        #dag text { font: 12px system-ui, sans-serif; fill: #1d2330; } #dag text.sub { fill: #5b6475; font-size: 11px; }
        td.actions { white-space: nowrap; }
        button.action { font: inherit; font-size: .9em; margin: 0 .3em .2em 0; padding: .1em .6em; border: 1px solid #5b6475;
                        border-radius: .3em; background: #fff; cursor: pointer; }
        button.action:hover { background: #eef0f4; }
        .action-form { background: #f6f7f9; border: 1px solid #cfd5df; border-radius: .4em; padding: .4em 1em .8em; margin: .6em 0; }
        .action-form label { display: block; margin: .3em 0; }
        .action-form textarea, .action-form input { font: 12px/1.35 ui-monospace, monospace; display: block; margin-top: .15em; }
        .answer { padding: .3em .6em; border-radius: .3em; margin: .5em 0; }
        .answer.ok { background: #d9f2e3; } .answer.error { background: #fbdcd9; } .answer.sending { background: #eef0f4; }
        .failure { border-left: 4px solid #b3261e; background: #fff7f6; padding: .2em .8em .6em; margin: .5em 0; }
        .failure pre.failure-trace { max-height: 24em; background: #fff; border: 1px solid #f0d0cc; padding: .4em; }
        td.in-flight ul { margin: .2em 0 0; padding-left: 1.2em; }
        #throughput .grid { stroke: #e3e6eb; stroke-width: 1; }
        #throughput text.axis { font: 11px system-ui, sans-serif; fill: #5b6475; }
        #throughput rect.completed { fill: #5fb883; } #throughput rect.failed { fill: #d9534f; }
        #throughput polyline.latency { fill: none; stroke-width: 2; }
        #throughput .p50 { stroke: #3069c6; fill: #3069c6; } #throughput .p95 { stroke: #8e44ad; fill: #8e44ad; }
        #throughput polyline.p50, #throughput polyline.p95 { fill: none; }
        #throughput rect.legend.completed { fill: #5fb883; } #throughput rect.legend.failed { fill: #d9534f; }
        """#
}
