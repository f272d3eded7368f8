extension ConsoleScript {
    /// The live workers (`/console/api/workers`, ``TaskQueries/consoleWorkers()``): each worker alive by
    /// its liveness lease, its host, the namespaces it works for, its steps in flight (links to their
    /// tasks) and its lease; the lapsed leases counted (their steps go to crash recovery).
    static let workers = #"""
          // ---- workers ----------------------------------------------------------------------------------
          function leaseText(worker, now) {
            const left = Math.round((instant(worker.expires_at) - instant(now)) / 1000);
            return `renewed ${time(worker.renewed_at)}; expires in ${Number.isFinite(left) ? left : "?"} s`;
          }

          async function renderWorkers() {
            const live = await api("/console/api/workers");
            const workers = Array.isArray(live.workers) ? live.workers : [];
            const rows = workers.map((w) => {
              const steps = Array.isArray(w.steps) ? w.steps : [];
              const inFlight = Number(w.steps_in_flight) || 0;
              const items = steps.map((s) => el("li", { "data-step": String(s.name) },
                el("a", { href: hashFor({ task: String(s.task_uuid) }) }, `${s.namespace}/${s.name}`), " since ", when(s.since)));
              if (inFlight > steps.length) items.push(el("li", { class: "muted" }, `… and ${inFlight - steps.length} more`));
              const namespaces = Array.isArray(w.namespaces) ? w.namespaces.map(String) : [];
              return el("tr", { "data-worker": String(w.worker_uuid) },
                el("td", { class: "uuid" }, `worker-${w.worker_uuid}`, w.recovers ? "" : el("div", { class: "muted" }, "crash recovery off")),
                el("td", {}, w.hostname || "—"),
                el("td", { class: "namespaces" }, namespaces.length ? namespaces.join(", ") : el("span", { class: "muted" }, "none seen yet")),
                el("td", { class: "in-flight" }, el("span", { class: "in-flight-count" }, String(inFlight)), items.length ? el("ul", {}, ...items) : ""),
                el("td", {}, when(w.started_at)), el("td", {}, leaseText(w, live.now)));
            });
            if (rows.length === 0) rows.push(el("tr", {}, el("td", { colspan: 6, class: "muted" }, "No worker holds a live lease.")));
            $("workers").tBodies[0].replaceChildren(...rows);
            const expired = Number(live.expired_leases) || 0;
            $("workers-note").textContent = `${workers.length} alive by their liveness lease`
              + (live.truncated ? ` (only the ${workers.length} oldest shown)` : "")
              + (expired ? `; ${expired} lease(s) lapsed: crash recovery retries their steps` : "")
              + `; as of ${time(live.now)}`;
          }
        """#
}
