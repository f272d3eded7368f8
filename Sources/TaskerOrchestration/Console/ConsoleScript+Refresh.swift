extension ConsoleScript {
    /// The refresh loop and start-up. The overview and the open task are read in one pass (a 401 or
    /// 403 there asks for credentials); the panels (task summary, workers, chart, DLQ) each on their
    /// own after it, so that one refused or failing panel shows its error in place and never stops
    /// the rest. An action refreshes at once.
    static let refresh = #"""
          // ---- refresh loop -----------------------------------------------------------------------------
          /** The permission each panel's route needs (named in its error when refused). */
          const PANEL_PERMISSIONS = { summary: "tasks:read", workers: "system:analytics_read", throughput: "system:analytics_read",
            dlq: "dlq:read", "dlq-stats": "dlq:stats", "dlq-queue": "dlq:read", "dlq-staleness": "dlq:read" };
          const panelsBusy = new Set();
          let chartAt = 0;

          /** Runs one panel's render unless it still runs; its failure shows in `#<name>-error`. */
          async function panel(name, render) {
            if (panelsBusy.has(name)) return;
            panelsBusy.add(name);
            const note = $(`${name}-error`);
            try {
              await render();
              if (note) note.textContent = "";
            } catch (error) {
              if (note) note.textContent = failureText(error, PANEL_PERMISSIONS[name]);
            } finally {
              panelsBusy.delete(name);
            }
          }

          function setStatus(text, failed) {
            $("status").textContent = text;
            $("status").className = failed ? "error" : "muted";
          }

          async function refresh() {
            if (busy) return;
            const overview = tick % 3 === 0;
            const taskDue = Boolean(view.task) && (overview || !taskFinal);
            tick += 1;
            if (!overview && !taskDue) return;
            busy = true;
            try {
              if (overview) {
                renderSummary(await api("/console/api/summary"));
                await renderTasks();
              }
              if (taskDue) await renderTask(view.task);
              if (!view.task) $("task").hidden = true;
              showAuth(false);
              if (overview) {
                panel("workers", renderWorkers);
                refreshDLQ();
                if (Date.now() - chartAt >= CHART_MS) {
                  chartAt = Date.now();
                  panel("throughput", async () => renderThroughput(await api("/console/api/throughput")));
                }
              }
              document.body.dataset.loaded = "true";
              setStatus(`updated ${new Date().toLocaleTimeString(undefined, { timeZoneName: "short" })}; live, every ${POLL_MS / 1000} s`);
            } catch (error) {
              tick = 0;
              if (error instanceof NeedsCredentials) {
                showAuth(true, error.message);
                setStatus("credentials needed", true);
              } else {
                setStatus(String(error && error.message ? error.message : error), true);
              }
            } finally {
              busy = false;
            }
          }

          /** Reads everything again now (after an action), the chart included. */
          function refreshNow() {
            tick = 0;
            taskFinal = false;
            chartAt = 0;
            refresh();
          }

          function restart() {
            const previous = view.task;
            readHash();
            if (view.task !== previous) {
              closeStepAction();
              shownTask = null;
              $("failures").hidden = true;
              if (view.task) window.scrollTo(0, 0);
            }
            tick = 0;
            taskFinal = false;
            refresh();
          }

          async function start() {
            $("filter-state").append(...TASK_STATES.map((s) => el("option", { value: s }, s)));
            $("filter-namespace").addEventListener("change", (e) => go({ namespace: e.target.value, page: 1, task: null }));
            $("filter-state").addEventListener("change", (e) => go({ state: e.target.value, page: 1, task: null }));
            $("page-previous").addEventListener("click", () => go({ page: Math.max(1, view.page - 1) }));
            $("page-next").addEventListener("click", () => go({ page: view.page + 1 }));
            $("auth-form").addEventListener("submit", (event) => {
              event.preventDefault();
              sessionStorage.setItem(CREDENTIALS_KEY, JSON.stringify({ kind: $("auth-kind").value, value: $("auth-value").value }));
              $("auth-value").value = "";
              restart();
            });
            $("step-action").addEventListener("submit", submitStepAction);
            $("step-action-cancel").addEventListener("click", closeStepAction);
            $("dlq-action").addEventListener("submit", submitDLQAction);
            $("dlq-action-cancel").addEventListener("click", closeDLQAction);
            try {
              const settings = await (await fetch("/console/api/auth", { cache: "no-store" })).json();
              auth.enabled = Boolean(settings.enabled);
              if (typeof settings.api_key_header === "string" && settings.api_key_header) auth.header = settings.api_key_header;
            } catch { /* an older orchestration: try without */ }
            window.addEventListener("hashchange", restart);
            restart();
            setInterval(refresh, POLL_MS);
          }

          document.addEventListener("DOMContentLoaded", start);
        """#
}
