extension ConsoleScript {
    /// The overview: task counts by state (`/console/api/summary`, chips that filter) and one page of
    /// the task list (`GET /v1/tasks`), newest first.
    static let overview = #"""
          // ---- overview ---------------------------------------------------------------------------------
          function renderSummary(summary) {
            const counts = summary.counts || {};
            const states = [...TASK_STATES.filter((s) => counts[s]), ...Object.keys(counts).filter((s) => !TASK_STATES.includes(s))];
            const total = Object.values(counts).reduce((a, b) => a + (Number(b) || 0), 0);
            const chips = [["", `all ${total}`], ...states.map((s) => [s, `${s} ${counts[s]}`])].map(([state, label]) => {
              const chip = el("button", { type: "button", class: "count" + (state === view.state ? " selected" : ""), "data-state": state }, label);
              chip.addEventListener("click", () => go({ state, page: 1, task: null }));
              return chip;
            });
            chips.push(el("span", { class: "muted" }, `DLQ pending ${Number(summary.dlq_pending) || 0}`));
            $("counts").replaceChildren(...chips);
            const namespaces = Array.isArray(summary.namespaces) ? summary.namespaces.map(String) : [];
            if (view.namespace && !namespaces.includes(view.namespace)) namespaces.push(view.namespace);
            const select = $("filter-namespace");
            select.replaceChildren(el("option", { value: "" }, "all"), ...namespaces.map((n) => el("option", { value: n }, n)));
            select.value = view.namespace;
          }

          async function renderTasks() {
            const query = new URLSearchParams({ page: String(view.page), per_page: String(PER_PAGE) });
            if (view.namespace) query.set("namespace", view.namespace);
            if (view.state) query.set("status", view.state);
            const answer = await api("/v1/tasks?" + query.toString());
            const rows = (answer.tasks || []).map((t) => {
              const row = el("tr", { class: "clickable" + (String(t.task_uuid) === view.task ? " selected" : ""), "data-task": String(t.task_uuid) },
                el("td", {}, when(t.created_at)), el("td", {}, t.namespace), el("td", {}, `${t.name} ${t.version}`),
                el("td", {}, stateBadge(t.status)), el("td", {}, `${t.completed_steps}/${t.total_steps}`),
                el("td", { class: "uuid" }, taskLink(t.task_uuid)));
              row.addEventListener("click", () => go({ task: String(t.task_uuid) }));
              return row;
            });
            if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No tasks match.")));
            $("tasks").tBodies[0].replaceChildren(...rows);
            const p = answer.pagination || {};
            $("page-label").textContent = `page ${p.page ?? view.page} of ${Math.max(1, p.total_pages ?? 1)} (${p.total_count ?? 0} tasks)`;
            $("page-previous").disabled = !p.has_previous;
            $("page-next").disabled = !p.has_next;
            $("filter-state").value = view.state;
          }
        """#
}
