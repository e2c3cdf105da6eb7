// wf dashboard: a small single-page app over wf's HTTP API. Plain DOM, no
// framework, no build step. Every value from the API goes into the page as
// text (never as HTML), and every request carries the session cookie; the
// ones that change something also carry the session's CSRF token.
"use strict";

const STATUSES = ["PENDING", "ACTIVE", "COMPLETED", "FAILED", "DEAD_LETTER", "CANCELLED"];
const state = { session: null, timer: null, route: "" };

// ---- DOM helpers ----------------------------------------------------------

// h builds an element: h("td", {class: "num"}, "12", otherNode).
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function svg(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

function table(headers, rows, attrs) {
  return h("table", attrs || {},
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { class: x.num ? "num" : null }, x.label || x)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: headers.length, class: "muted" }, "none"))));
}

function statusBadge(s) { return h("span", { class: "status " + s }, s); }
function fmtAge(seconds) {
  if (seconds === undefined || seconds === null) return "";
  const s = Math.round(seconds);
  if (s < 120) return s + "s";
  if (s < 7200) return Math.round(s / 60) + "m";
  if (s < 172800) return Math.round(s / 3600) + "h";
  return Math.round(s / 86400) + "d";
}
function fmtJSON(v) { return v === undefined ? "" : JSON.stringify(v, null, 2); }

// ---- why a task waits ---------------------------------------------------------

// WAITING says, for each waiting_reason of a PENDING task, why it is not
// running.
const WAITING = {
  not_due: "not due yet (run after)",
  paused: "paused (its task type or tenant)",
  concurrency_global: "held by concurrency.global",
  concurrency_per_tenant: "held by concurrency.per_tenant",
  rate_limit: "held by rate_limit",
  not_served: "no running instance serves its task type",
};
function waitingLabel(reason) { return WAITING[reason] || reason; }
// waitingNote is the small note beside a PENDING task's status.
function waitingNote(t) {
  return t.waiting_reason ? h("span", { class: "muted waiting", "data-waiting": t.waiting_reason }, " " + waitingLabel(t.waiting_reason)) : null;
}
// heldSection is the overview's count of held PENDING tasks by reason.
function heldSection(s) {
  if (!s.held || !s.held.length) return null;
  const byReason = {};
  for (const x of s.held) byReason[x.reason] = (byReason[x.reason] || 0) + x.count;
  return h("div", {}, h("h2", {}, "Waiting PENDING tasks, by reason"),
    h("div", { class: "cards" }, Object.keys(WAITING).filter((r) => byReason[r]).map((r) => card(waitingLabel(r), byReason[r], "held-" + r))),
    table(["reason", "task type", "tenant", { label: "tasks", num: true }], s.held.map((x) => h("tr", {},
      h("td", {}, waitingLabel(x.reason)), h("td", {}, h("a", { href: "#/tasks?status=PENDING&task_type=" + encodeURIComponent(x.task_type) + "&schema_name=" + encodeURIComponent(x.schema_name) }, x.task_type)),
      h("td", {}, x.schema_name), h("td", { class: "num", "data-testid": "held-" + x.reason + "-" + x.task_type + "-" + x.schema_name }, x.count.toLocaleString()))),
    { "data-testid": "held" }));
}
function setStatus(text, isError) {
  const el = document.getElementById("status");
  el.textContent = text;
  el.className = isError ? "error" : "";
}

// ---- API ----------------------------------------------------------------------

class APIError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || ("HTTP " + status));
    this.status = status;
    this.problem = problem;
  }
}

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method !== "GET" && state.session && state.session.csrf_token) headers["X-CSRF-Token"] = state.session.csrf_token;
  const res = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (e) { data = null; }
  if (!res.ok) {
    if (res.status === 401 && path !== "/ui/session") showSignIn("Your session has ended; sign in again.");
    throw new APIError(res.status, data);
  }
  return data;
}

// ---- sign-in ----------------------------------------------------------------

function showSignIn(message) {
  state.session = null;
  stopTimer();
  document.getElementById("signin").hidden = false;
  document.getElementById("page").replaceChildren();
  document.getElementById("nav").hidden = true;
  document.getElementById("signout").hidden = true;
  document.getElementById("who").textContent = "";
  document.getElementById("signin-error").textContent = message || "";
}

function signedIn(session) {
  state.session = session;
  document.getElementById("signin").hidden = true;
  document.getElementById("nav").hidden = false;
  document.getElementById("signout").hidden = false;
  const limited = session.catalogs && session.catalogs.length ? " · catalogs " + session.catalogs.join(", ") : "";
  document.getElementById("who").textContent = session.name + " (" + session.role + ")" + limited;
  route();
}

function isAdmin() { return state.session && state.session.role === "admin"; }

async function signIn(ev) {
  ev.preventDefault();
  const input = document.getElementById("token");
  try {
    const s = await api("POST", "/ui/session", { token: input.value });
    input.value = "";
    signedIn(s);
  } catch (e) {
    document.getElementById("signin-error").textContent = e.status === 401 ? "That token is not valid." : e.message;
  }
}

async function signOut() {
  try { await api("DELETE", "/ui/session"); } catch (e) { /* the session is gone either way */ }
  showSignIn("Signed out.");
}

// ---- routing --------------------------------------------------------------------

function stopTimer() { if (state.timer) { clearInterval(state.timer); state.timer = null; } }
// every refreshes a page's root every ms milliseconds while that root is the
// one shown: a page whose first answer arrives after the user moved on (a
// slow server) neither installs its timer nor paints over the new page.
function every(root, ms, fn) {
  if (!root.isConnected) return;
  stopTimer();
  state.timer = setInterval(() => { if (root.isConnected) fn(); }, ms);
}

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, qs] = raw.split("?");
  return { parts: path.split("/").filter(Boolean), params: new URLSearchParams(qs || "") };
}

async function route() {
  if (!state.session) return;
  stopTimer();
  const { parts, params } = parseHash();
  const page = parts[0] || "overview";
  const section = { task: "tasks", catalog: "catalogs", run: "workflows" }[page] || page;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("current", a.dataset.page === section);
  // Each route paints into a container of its own: a late answer for the
  // page the user left lands in a detached node, not over this one.
  const root = h("div", {}, h("p", { class: "muted" }, "Loading…"));
  document.getElementById("page").replaceChildren(root);
  try {
    switch (page) {
      case "tasks": await tasksPage(root, params); break;
      case "task": await taskPage(root, parts[1]); break;
      case "dead-letters": await deadLettersPage(root, params); break;
      case "webhooks": await webhooksPage(root); break;
      case "catalogs": await catalogsPage(root); break;
      case "catalog": await catalogPage(root, parts[1], params); break;
      case "workflows": await runsPage(root, params); break;
      case "run": await runPage(root, parts[1]); break;
      default: await overviewPage(root);
    }
  } catch (e) {
    if (e.status !== 401) root.replaceChildren(h("p", { class: "error" }, "Error: " + e.message));
  }
}

// ---- overview -----------------------------------------------------------------

async function overviewPage(root) {
  const draw = async () => {
    const s = await api("GET", "/stats");
    root.replaceChildren(renderOverview(s));
    setStatus("updated " + fmtClock(new Date()));
  };
  await draw();
  every(root, 5000, () => draw().catch((e) => setStatus("refresh failed: " + e.message, true)));
}

function renderOverview(s) {
  const totals = {};
  for (const st of STATUSES) totals[st] = 0;
  const byKey = new Map();
  for (const c of s.counts) {
    totals[c.status] += c.count;
    const key = c.task_type + "\u0000" + c.schema_name;
    if (!byKey.has(key)) byKey.set(key, { task_type: c.task_type, schema_name: c.schema_name });
    byKey.get(key)[c.status] = c.count;
  }
  const windowLabel = "finished since " + fmtClock(new Date(s.since));
  const cards = h("div", { class: "cards" }, STATUSES.map((st) => h("div", { class: "card" },
    h("div", { class: "label" }, st.replace("_", " ") + (["COMPLETED", "FAILED", "CANCELLED"].includes(st) ? " (window)" : "")),
    h("div", { class: "value", "data-testid": "total-" + st }, totals[st].toLocaleString()))));
  const keys = [...byKey.values()].sort((a, b) => (a.task_type + a.schema_name).localeCompare(b.task_type + b.schema_name));
  const paused = new Set((s.paused || []).map((p) => p.kind + "\u0000" + p.name));
  const pausedMark = (kind, name) => paused.has(kind + "\u0000" + name) ? h("span", { class: "badge", title: "paused: not claimed until resumed" }, " paused") : null;
  const countRows = keys.map((k) => h("tr", {},
    h("td", {}, h("a", { href: "#/tasks?task_type=" + encodeURIComponent(k.task_type) + "&schema_name=" + encodeURIComponent(k.schema_name) }, k.task_type),
      pausedMark("task_type", k.task_type)),
    h("td", {}, k.schema_name, pausedMark("tenant", k.schema_name)),
    STATUSES.map((st) => h("td", { class: "num", "data-testid": "count-" + k.task_type + "-" + k.schema_name + "-" + st }, k[st] ? k[st].toLocaleString() : ""))));

  const finished = s.throughput.reduce((n, b) => n + b.completed + b.failed, 0);
  const failed = s.throughput.reduce((n, b) => n + b.failed, 0);
  const rate = finished ? (100 * failed / finished).toFixed(1) + "%" : "–";

  const out = h("div", {},
    h("h1", {}, "Overview"),
    cards,
    h("p", { class: "muted" }, "PENDING, ACTIVE and DEAD_LETTER count every such task; COMPLETED, FAILED and CANCELLED those " + windowLabel + ". ",
      h("span", { "data-testid": "pending-as-of", title: "PENDING counts and oldest due ages come from a snapshot the leader takes every few seconds" },
        "PENDING counts as of " + fmtAge(Math.max(0, (new Date(s.now) - new Date(s.pending_as_of)) / 1000)) + " ago.")),
    h("h2", {}, "Throughput, last " + Math.round((new Date(s.now) - new Date(s.since)) / 60000) + " minutes"),
    h("div", { class: "legend" }, h("span", {}, h("span", { class: "sw ok" }), "completed"), h("span", {}, h("span", { class: "sw bad" }), "failed or dead-lettered"),
      h("span", { "data-testid": "failure-rate" }, "failure rate " + rate)),
    chart(s),
    s.paused && s.paused.length ? h("div", {}, h("h2", {}, "Paused"),
      h("p", { class: "muted" }, "No instance claims the PENDING tasks of these task types and tenants; running tasks run on, new ones wait."),
      table(["kind", "name", "reason", "by", "since", ""], s.paused.map((p) => h("tr", {},
        h("td", {}, p.kind === "tenant" ? "tenant" : "task type"), h("td", {}, p.name), h("td", {}, p.reason || ""),
        h("td", {}, p.paused_by || ""), h("td", {}, fmtTime(p.paused_at)),
        h("td", {}, isAdmin() ? h("button", { type: "button", class: "secondary resume", onclick: () => resume(p) }, "Resume") : ""))),
      { "data-testid": "paused" })) : null,
    heldSection(s),
    h("h2", {}, "Tasks by type and tenant"),
    table(["task type", "tenant", ...STATUSES.map((x) => ({ label: x, num: true }))], countRows, { "data-testid": "counts" }),
    h("div", { class: "grid" },
      h("div", {}, h("h2", {}, "Oldest due PENDING task per type"),
        table(["task type", "tenant", { label: "due", num: true }, { label: "waiting", num: true }],
          s.oldest_pending.map((p) => h("tr", {}, h("td", {}, p.task_type), h("td", {}, p.schema_name), h("td", { class: "num" }, p.due.toLocaleString()),
            h("td", { class: "num" }, fmtAge(p.age_seconds)))), { "data-testid": "oldest-pending" })),
      s.instances ? h("div", {}, h("h2", {}, "Instances"),
        table(["service", "instance", "role", "connected since"], s.instances.map((i) => h("tr", { "data-role": i.role },
          h("td", {}, i.service), h("td", {}, i.owner),
          h("td", {}, i.role === "api" ? "API only (wf serve)" : i.leader ? h("strong", {}, "leader") : "follower"),
          h("td", {}, fmtTime(i.started_at)))), { "data-testid": "instances" })) : null),
    h("h2", {}, "Schedules"),
    table(["schedule", "cron", "task type", "next tick (its zone)", "last tick (its zone)"], s.schedules.map((x) => h("tr", { "data-schedule": x.name },
      h("td", {}, x.name), h("td", {}, x.cron + " " + x.timezone), h("td", {}, x.task_type),
      h("td", { class: "next-tick" }, fmtTime(x.next_tick, x.timezone)), h("td", { class: "last-tick" }, fmtTime(x.last_tick, x.timezone)))),
      { "data-testid": "schedules" }),
    s.outbox ? h("div", {}, h("h2", {}, "Event outbox"),
      h("div", { class: "cards" },
        card("pending", s.outbox.pending, "outbox-pending"),
        card("held (not due)", s.outbox.held, "outbox-held"), card("processing", s.outbox.processing),
        card("dead letter", s.outbox.dead_letter, "outbox-dead"),
        card("oldest due", s.outbox.oldest_pending_at ? fmtAge(s.outbox.oldest_pending_age_seconds) : "–"))) : null,
    s.estimates ? h("p", { class: "muted" }, "All history (planner estimate): " +
      Object.entries(s.estimates).map(([k, v]) => k + " ≈ " + Math.round(v).toLocaleString()).join(", ")) : null);
  return out;
}

// resume lifts a pause (admin) and redraws the page.
async function resume(p) {
  try {
    await api("DELETE", "/admin/pauses/" + encodeURIComponent(p.kind) + "/" + encodeURIComponent(p.name));
    setStatus("resumed " + p.name);
    route();
  } catch (e) { setStatus("resume failed: " + e.message, true); }
}

function card(label, value, testid) {
  return h("div", { class: "card" }, h("div", { class: "label" }, label),
    h("div", { class: "value", "data-testid": testid }, typeof value === "number" ? value.toLocaleString() : value));
}

// chart draws completed and failed tasks per minute as stacked bars.
function chart(s) {
  const W = 720, H = 140, pad = 24;
  const since = new Date(s.since).getTime(), now = new Date(s.now).getTime();
  const minutes = Math.max(1, Math.round((now - since) / 60000));
  const buckets = new Array(minutes + 1).fill(null).map(() => ({ ok: 0, bad: 0 }));
  for (const b of s.throughput) {
    const i = Math.min(minutes, Math.max(0, Math.floor((new Date(b.minute).getTime() - since) / 60000)));
    buckets[i].ok += b.completed;
    buckets[i].bad += b.failed;
  }
  const peak = Math.max(1, ...buckets.map((b) => b.ok + b.bad));
  const bw = (W - pad) / buckets.length;
  const g = svg("svg", { class: "chart", width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": "throughput per minute" });
  buckets.forEach((b, i) => {
    const x = pad + i * bw;
    const hOk = (H - 20) * b.ok / peak, hBad = (H - 20) * b.bad / peak;
    if (b.ok) g.append(svg("rect", { class: "ok", x: x, y: H - 14 - hOk - hBad, width: Math.max(1, bw - 1), height: hOk }));
    if (b.bad) g.append(svg("rect", { class: "bad", x: x, y: H - 14 - hBad, width: Math.max(1, bw - 1), height: hBad }));
  });
  g.append(svg("text", { x: 2, y: 12 }, String(peak)));
  g.append(svg("text", { x: pad, y: H - 2 }, fmtClock(new Date(since))));
  g.append(svg("text", { x: W - 60, y: H - 2 }, "now"));
  return g;
}

// ---- tasks --------------------------------------------------------------------

async function tasksPage(root, params) {
  const form = h("form", { class: "filters", id: "task-filters" },
    h("label", {}, "status", h("select", { name: "status", id: "f-status" }, h("option", { value: "" }, "any"),
      STATUSES.map((s) => h("option", { value: s, selected: params.get("status") === s }, s)))),
    h("label", {}, "task type", h("input", { name: "task_type", id: "f-type", value: params.get("task_type") || "", size: 16 })),
    h("label", {}, "tenant", h("input", { name: "schema_name", id: "f-tenant", value: params.get("schema_name") || "", size: 12 })),
    h("label", {}, "created from (" + viewerZone() + ")", h("input", { name: "created_from", type: "datetime-local", value: params.get("created_from") || "" })),
    h("label", {}, "created before (" + viewerZone() + ")", h("input", { name: "created_to", type: "datetime-local", value: params.get("created_to") || "" })),
    h("button", { type: "submit", id: "f-apply" }, "Filter"),
    h("label", {}, "live", h("input", { type: "checkbox", id: "f-live", checked: true })));
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const [k, v] of new FormData(form)) if (v) q.set(k, v);
    location.hash = "#/tasks?" + q.toString();
  });
  const list = h("div", { id: "task-list" });
  root.replaceChildren(h("h1", {}, "Tasks"), form, list);

  const query = new URLSearchParams();
  for (const k of ["status", "task_type", "schema_name"]) if (params.get(k)) query.set(k, params.get(k));
  for (const k of ["created_from", "created_to"]) if (params.get(k)) query.set(k, new Date(params.get(k)).toISOString());
  query.set("limit", "50");
  const pages = pagedList(list, "/tasks", query, (res, short = shortIDs(res.items.map((x) => x.task_id))) =>
    table(["task", "type", "tenant", "status", { label: "attempts", num: true }, "created", "finished", "error"],
      res.items.map((t) => h("tr", { "data-task": t.task_id },
        idCell(short, t.task_id, "#/task/" + t.task_id),
        h("td", {}, t.task_type), h("td", {}, t.schema_name), h("td", {}, statusBadge(t.status), waitingNote(t)),
        h("td", { class: "num" }, t.attempts), h("td", {}, fmtTime(t.created_at)), h("td", {}, fmtTime(t.finished_at)),
        errorCell(t.error))), { "data-testid": "tasks" }),
    ["prev-page", "← Newer"], ["next-page", "Older →"]);
  await pages.load();
  every(root, 3000, () => {
    const live = document.getElementById("f-live");
    if (live && live.checked && pages.first()) pages.load().catch((e) => setStatus("refresh failed: " + e.message, true));
  });
}

// pagedList shows in list the list route path (its parameters in query)
// a page at a time, keyset paging on the API's next_cursor: rows(res)
// draws a page's table, under which go the buttons to the previous and the
// next page, each an [id, label]. load() draws the page shown; first()
// says whether that is the first page (the one live refreshes redraw).
function pagedList(list, path, query, rows, [prevID, prevLabel], [nextID, nextLabel]) {
  const cursors = [""]; // the cursor of each page shown so far
  let page = 0;
  const load = async () => {
    const q = new URLSearchParams(query);
    if (cursors[page]) q.set("cursor", cursors[page]);
    const res = await api("GET", path + "?" + q.toString());
    cursors[page + 1] = res.next_cursor || "";
    list.replaceChildren(rows(res),
      h("p", {},
        h("button", { type: "button", class: "secondary", id: prevID, disabled: page === 0, onclick: () => { page--; load(); } }, prevLabel), " ",
        h("button", { type: "button", class: "secondary", id: nextID, disabled: !res.next_cursor, onclick: () => { page++; load(); } }, nextLabel),
        " ", h("span", { class: "muted" }, "page " + (page + 1))));
    setStatus("updated " + fmtClock(new Date()));
  };
  return { load, first: () => page === 0 };
}

// ---- one task -------------------------------------------------------------------

async function taskPage(root, id) {
  // The task redraws while it runs; its report keeps its own pager.
  const main = h("div", {});
  const report = taskReport(id);
  root.replaceChildren(main, report.el);
  const draw = async () => {
    const t = await api("GET", "/tasks/" + encodeURIComponent(id));
    main.replaceChildren(renderTask(t));
    await report.refresh(t);
    setStatus("updated " + fmtClock(new Date()));
    return t;
  };
  const t = await draw();
  if (t.status === "PENDING" || t.status === "ACTIVE") {
    every(root, 2000, () => draw().then((x) => { if (x.status !== "PENDING" && x.status !== "ACTIVE") stopTimer(); })
      .catch((e) => setStatus("refresh failed: " + e.message, true)));
  }
}

function renderTask(t) {
  const actions = h("p", { id: "task-actions" });
  const act = async (label, method, path) => {
    try {
      await api(method, path);
      setStatus(label + " done");
      route();
    } catch (e) { setStatus(label + " failed: " + e.message, true); }
  };
  if (isAdmin() && (t.status === "PENDING" || t.status === "ACTIVE")) {
    actions.append(h("button", { type: "button", id: "cancel", onclick: () => act("cancel", "POST", "/tasks/" + t.task_id + "/cancel") }, "Cancel"));
  }
  if (isAdmin() && ["DEAD_LETTER", "FAILED", "CANCELLED"].includes(t.status)) {
    actions.append(h("button", { type: "button", id: "requeue", onclick: () => act("requeue", "POST", "/admin/tasks/" + t.task_id + "/requeue") }, "Requeue"));
  }
  const rows = [
    ["task id", t.task_id], ["type", t.task_type], ["tenant", t.schema_name], ["status", statusBadge(t.status)],
    ["waiting", t.waiting_reason ? h("span", { "data-waiting": t.waiting_reason }, waitingLabel(t.waiting_reason)) : undefined],
    ["attempts", t.attempts + " (retries " + t.retry_count + " of " + t.max_retries + ")"], ["priority", t.priority],
    ["dedup key", t.dedup_key], ["created", fmtTime(t.created_at)], ["run after", fmtTime(t.run_after)],
    ["started", fmtTime(t.started_at)], ["finished", fmtTime(t.finished_at)], ["instance", t.owner_id],
  ].filter(([, v]) => v !== undefined && v !== null && v !== "");
  const eventIDs = shortIDs((t.events || []).map((e) => e.event_id));
  return h("div", { "data-testid": "task", "data-status": t.status },
    h("h1", {}, t.task_type + " ", statusBadge(t.status)),
    actions,
    h("table", { class: "kv" }, h("tbody", {}, rows.map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", {}, v))))),
    t.error ? h("div", {}, h("h2", {}, "Error"), h("pre", { class: "error", id: "task-error" }, t.error)) : null,
    t.attempt_history ? h("div", {}, h("h2", {}, "Attempts"),
      table([{ label: "#", num: true }, "started", "ended", "instance", "outcome", "error"], t.attempt_history.map((a) => h("tr", {},
        h("td", { class: "num" }, a.attempt), h("td", {}, fmtTime(a.started_at)), h("td", {}, fmtTime(a.finished_at)),
        h("td", {}, a.owner_id || ""), h("td", {}, a.outcome ? statusBadge(a.outcome) : ""),
        errorCell(a.error))), { "data-testid": "attempts" })) : null,
    h("div", { class: "grid" },
      h("div", {}, h("h2", {}, "Inputs"), h("pre", { id: "task-inputs" }, fmtJSON(t.inputs))),
      h("div", {}, h("h2", {}, "Progress"), h("pre", { id: "task-progress" }, t.progress ? fmtJSON(t.progress) : "none"))),
    h("h2", {}, "Outputs"), h("pre", { id: "task-outputs" }, t.outputs ? fmtJSON(t.outputs) : "none"),
    h("h2", {}, "Events emitted"),
    t.events && t.events.length ? table(["event", "type", "created", "status", "error"], t.events.map((e) => h("tr", { "data-event": e.event_id },
      idCell(eventIDs, e.event_id), h("td", {}, e.event_type), h("td", {}, fmtTime(e.created_at)),
      h("td", {}, e.status === "CONSUMED" ? h("span", { class: "muted", title: "consumed by its subscriptions (deleted from the outbox)" }, "consumed") : statusBadge(e.status)),
      errorCell(e.error))), { "data-testid": "task-events" })
      : h("p", { class: "muted", "data-testid": "task-events-none" }, "none"));
}

// ---- a task's per-record report -----------------------------------------------------

const RECORD_OUTCOMES = ["SUCCESS", "REJECTED", "FAILED"];
const RECORDS_PER_PAGE = 10;

// taskReport is the report section of task id's page: the envelopes the
// database reporter kept (GET /tasks/{id}/records), a page at a time and
// by outcome, and the detailed report's URL (outputs.report_url) when the
// task has one. refresh(t) redraws it for the task as last read; while
// the first page is shown it reloads it (records arrive as the task runs).
function taskReport(id) {
  const el = h("div", { "data-testid": "task-report" });
  const st = { outcome: "", cursors: [""], page: 0, task: null };
  const base = "/tasks/" + encodeURIComponent(id) + "/records";
  const query = () => {
    const q = new URLSearchParams({ limit: String(RECORDS_PER_PAGE) });
    if (st.outcome) q.set("status", st.outcome);
    if (st.cursors[st.page]) q.set("cursor", st.cursors[st.page]);
    return q;
  };
  const load = async () => {
    const res = await api("GET", base + "?" + query().toString());
    st.cursors[st.page + 1] = res.next_cursor || "";
    el.replaceChildren(renderReport(st, res, base + "?" + query().toString(), {
      outcome: (o) => { st.outcome = o; st.cursors = [""]; st.page = 0; load().catch(failed); },
      newer: () => { st.page--; load().catch(failed); },
      older: () => { st.page++; load().catch(failed); },
    }));
  };
  const failed = (e) => setStatus("report failed: " + e.message, true);
  return {
    el,
    refresh: async (t) => {
      st.task = t;
      if (st.page === 0) await load();
    },
  };
}

// renderReport draws one page of kept records: an outcome filter, a row per
// record (its number, outcome, id, message, properties; the whole envelope
// unfolds), the pager, and links to the page's JSON and the detailed report.
function renderReport(st, res, apiPath, on) {
  const t = st.task || {};
  const counts = t.progress && typeof t.progress.total === "number" ? t.progress : null;
  const reportURL = t.outputs && typeof t.outputs.report_url === "string" ? t.outputs.report_url : null;
  const short = (v) => { const s = JSON.stringify(v); return s && s.length > 120 ? s.slice(0, 119) + "…" : s; };
  const rows = res.items.map((r) => {
    const rec = (r.envelope && r.envelope.record) || {};
    return h("tr", { "data-record": r.n, "data-outcome": r.status },
      h("td", { class: "num" }, r.n), h("td", {}, statusBadge(r.status)), h("td", {}, rec.id || ""),
      h("td", { class: "error" }, r.envelope && r.envelope.message ? r.envelope.message : ""),
      h("td", {}, h("details", {}, h("summary", {}, short(rec.properties) || "{}", r.truncated ? " (shortened)" : ""),
        h("pre", {}, fmtJSON(r.envelope)))));
  });
  return h("div", {},
    h("h2", {}, "Per-record report"),
    h("p", { class: "muted" },
      counts ? counts.total.toLocaleString() + " records: " + counts.succeeded.toLocaleString() + " succeeded, " +
        counts.rejected.toLocaleString() + " rejected, " + counts.failed.toLocaleString() + " failed. " : "",
      "The database reporter keeps the first 100 records of each outcome."),
    // Downloads go through the API (GET /tasks/{id}/files/…), which any
    // token that reads the task may use: the stored location is shown only.
    reportURL ? h("p", {}, "Detailed report (every record): ",
      h("a", { href: "/tasks/" + encodeURIComponent(t.task_id) + "/files/report", download: "", "data-testid": "report-url" }, "download"),
      " ", h("span", { class: "muted" }, reportURL)) : null,
    t.task_type === "export_features" && t.status === "COMPLETED" && t.outputs && t.outputs.destination ?
      h("p", {}, "Exported file: ",
        h("a", { href: "/tasks/" + encodeURIComponent(t.task_id) + "/files/export", download: "", "data-testid": "export-url" }, "download"),
        " ", h("span", { class: "muted" }, t.outputs.destination)) : null,
    h("p", { class: "filters" }, "outcome ",
      h("select", { id: "r-outcome", onchange: (ev) => on.outcome(ev.target.value) }, h("option", { value: "" }, "any"),
        RECORD_OUTCOMES.map((o) => h("option", { value: o, selected: st.outcome === o }, o)))),
    table([{ label: "#", num: true }, "outcome", "record id", "message", "properties (click for the envelope)"], rows, { "data-testid": "records" }),
    h("p", {},
      h("button", { type: "button", class: "secondary", id: "records-prev", disabled: st.page === 0, onclick: on.newer }, "← Earlier"), " ",
      h("button", { type: "button", class: "secondary", id: "records-next", disabled: !res.next_cursor, onclick: on.older }, "Later →"),
      " ", h("span", { class: "muted" }, "page " + (st.page + 1)), " · ",
      h("a", { href: apiPath, id: "records-json", target: "_blank", rel: "noopener noreferrer" }, "this page as JSON")));
}

// ---- dead letters ----------------------------------------------------------------

async function deadLettersPage(root, params) {
  const kind = params.get("kind") === "events" ? "events" : "tasks";
  if (!isAdmin()) {
    root.replaceChildren(h("h1", {}, "Dead letters"), h("p", { class: "muted" }, "Dead letters need an admin token."));
    return;
  }
  const res = await api("GET", "/admin/dead-letters?kind=" + kind + "&limit=200");
  const typeField = kind === "tasks" ? "task_type" : "event_type";
  const bulk = h("form", { class: "filters", id: "bulk-requeue" },
    h("label", {}, typeField.replace("_", " "), h("input", { name: "type", id: "bulk-type", size: 16 })),
    h("label", {}, "tenant", h("input", { name: "tenant", id: "bulk-tenant", size: 12 })),
    h("button", { type: "submit", id: "bulk-submit" }, "Requeue all matching"));
  bulk.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = { kind };
    const type = document.getElementById("bulk-type").value.trim();
    const tenant = document.getElementById("bulk-tenant").value.trim();
    if (type) body[typeField] = [type];
    if (tenant) body.schema_name = [tenant];
    try {
      const r = await api("POST", "/admin/dead-letters/requeue", body);
      setStatus("requeued " + r.requeued + ", skipped " + r.skipped + (r.more ? "; more match, run again" : ""));
      route();
    } catch (e) { setStatus("bulk requeue failed: " + e.message, true); }
  });
  const requeue = async (path) => {
    try { await api("POST", path); setStatus("requeued"); route(); } catch (e) { setStatus("requeue failed: " + e.message, true); }
  };
  const short = shortIDs(res.items.map((x) => x.task_id || x.event_id));
  const rows = kind === "tasks"
    ? res.items.map((t) => h("tr", { "data-task": t.task_id },
      idCell(short, t.task_id, "#/task/" + t.task_id),
      h("td", {}, t.task_type), h("td", {}, t.schema_name), h("td", {}, t.attempts), h("td", {}, fmtTime(t.finished_at)),
      errorCell(t.error),
      h("td", {}, h("button", { type: "button", class: "secondary requeue", onclick: () => requeue("/admin/tasks/" + t.task_id + "/requeue") }, "Requeue"))))
    : res.items.map((e) => h("tr", { "data-event": e.event_id },
      idCell(short, e.event_id), h("td", {}, e.event_type), h("td", {}, e.schema_name), h("td", {}, e.attempts),
      h("td", {}, fmtTime(e.dead_lettered_at)), errorCell(e.error),
      h("td", {}, h("button", { type: "button", class: "secondary requeue", onclick: () => requeue("/admin/events/" + e.event_id + "/requeue") }, "Requeue"))));
  fill(root,
    h("h1", {}, "Dead letters"),
    h("p", {}, h("a", { href: "#/dead-letters?kind=tasks", class: kind === "tasks" ? "current" : "" }, "tasks"), " · ",
      h("a", { href: "#/dead-letters?kind=events" }, "events")),
    bulk,
    table([kind === "tasks" ? "task" : "event", "type", "tenant", "attempts", "dead since", "error", ""], rows, { "data-testid": "dead-letters" }),
    res.next_cursor ? h("p", { class: "muted" }, "Showing the 200 most recent.") : null);
}

// ---- webhooks -------------------------------------------------------------------

async function webhooksPage(root) {
  const parts = [h("h1", {}, "Webhooks")];
  if (isAdmin()) {
    const subs = await api("GET", "/admin/webhooks");
    const short = shortIDs(subs.items.map((s) => s.subscriber_id));
    parts.push(h("h2", {}, "Subscribers"), table(["subscriber", "url", "event types", "since"], subs.items.map((s) => h("tr", { "data-subscriber": s.subscriber_id },
      idCell(short, s.subscriber_id), h("td", {}, s.url), h("td", {}, s.event_types.join(", ")), h("td", {}, fmtTime(s.created_at)))),
    { "data-testid": "subscribers" }));
  }
  const dl = await api("GET", "/tasks?task_type=webhook_delivery&limit=50");
  const short = shortIDs(dl.items.map((t) => t.task_id));
  parts.push(h("h2", {}, "Recent deliveries"), table(["delivery", "status", "attempts", "created", "error"], dl.items.map((t) => h("tr", { "data-task": t.task_id },
    idCell(short, t.task_id, "#/task/" + t.task_id), h("td", {}, statusBadge(t.status)),
    h("td", {}, t.attempts), h("td", {}, fmtTime(t.created_at)), errorCell(t.error))), { "data-testid": "deliveries" }));
  fill(root, ...parts);
}

// ---- catalogs -------------------------------------------------------------------

async function catalogsPage(root) {
  const cats = await api("GET", "/catalogs?limit=200");
  const parts = [h("h1", {}, "Catalogs")];
  const rows = [];
  for (const c of cats.items) {
    const cols = await api("GET", "/catalogs/" + encodeURIComponent(c.catalog_id) + "/collections?limit=200");
    rows.push(h("tr", {}, h("td", {}, h("a", { href: "#/catalog/" + encodeURIComponent(c.catalog_id) }, c.catalog_id)), h("td", {}, c.title || ""), h("td", {},
      h("a", { href: "#/tasks?schema_name=" + encodeURIComponent(c.schema_name) }, c.schema_name)),
      h("td", {}, cols.items.map((x, i) => [i ? ", " : "", h("a", { href: "#/catalog/" + encodeURIComponent(c.catalog_id) +
        "?collection_id=" + encodeURIComponent(x.collection_id) }, x.collection_id)])), h("td", {}, fmtTime(c.created_at))));
  }
  parts.push(table(["catalog", "title", "tenant", "collections", "created"], rows, { "data-testid": "catalogs" }));
  root.replaceChildren(...parts);
}

// catalogPage shows one catalog: its collections, and its assets (of one
// collection when collection_id is given, of every status when all is
// set), a page at a time.
async function catalogPage(root, id, params) {
  const base = "/catalogs/" + encodeURIComponent(id);
  const [c, cols] = await Promise.all([api("GET", base), api("GET", base + "/collections?limit=200")]);
  const collection = params.get("collection_id") || "";
  const all = params.get("all") === "1";
  const link = (col, allStatuses) => "#/catalog/" + encodeURIComponent(id) + "?" +
    new URLSearchParams(Object.assign(col ? { collection_id: col } : {}, allStatuses ? { all: "1" } : {})).toString();
  const list = h("div", { id: "asset-list" });
  const mapEl = collection ? h("div", { id: "map", class: "map", "data-testid": "map" }) : null;
  root.replaceChildren(
    h("h1", {}, "Catalog " + c.catalog_id),
    h("table", { class: "kv" }, h("tbody", {},
      [["title", c.title], ["description", c.description], ["tenant", h("a", { href: "#/tasks?schema_name=" + encodeURIComponent(c.schema_name) }, c.schema_name)],
        ["created", fmtTime(c.created_at)]].filter(([, v]) => v).map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", {}, v))))),
    h("h2", {}, "Collections"),
    table(["collection", "title", "created", ""], cols.items.map((x) => h("tr", { "data-collection": x.collection_id, class: x.collection_id === collection ? "current" : null },
      h("td", {}, x.collection_id), h("td", {}, x.title || ""), h("td", {}, fmtTime(x.created_at)),
      h("td", {}, h("a", { href: link(x.collection_id, all) }, "assets")))), { "data-testid": "collections" }),
    ...(collection ? [h("h2", {}, "Map of " + collection),
      h("p", { class: "muted", id: "map-note" }, "The collection's current features (the first 1000), from its OGC API items: ",
        h("a", { href: base + "/collections/" + encodeURIComponent(collection) + "/items?f=html" }, "browse them")),
      mapEl] : []),
    h("h2", {}, collection ? "Assets of " + collection : "Assets"),
    h("p", {}, collection ? [h("a", { href: link("", all) }, "every collection"), " · "] : null,
      all ? h("a", { href: link(collection, false) }, "active and archived only") : h("a", { href: link(collection, true), id: "assets-all" }, "with deleted ones")),
    list);
  if (mapEl) {
    // Not awaited: the map draws once the page is in the document.
    collectionMap(mapEl, base + "/collections/" + encodeURIComponent(collection))
      .catch((e) => { mapEl.replaceChildren(h("p", { class: "error" }, "The map failed: " + e.message)); });
  }
  const query = new URLSearchParams({ limit: "50" });
  if (collection) query.set("collection_id", collection);
  if (all) for (const st of ["active", "archived", "deleted"]) query.append("status", st);
  await pagedList(list, base + "/assets", query, (res) =>
    table(["asset", "collection", "kind", "status", "uri", "metadata", "updated"], res.items.map((a) => h("tr", { "data-asset": a.asset_id },
      h("td", {}, a.asset_id), h("td", {}, a.collection_id || ""), h("td", {}, a.kind), h("td", {}, h("span", { class: "status " + a.status }, a.status)),
      h("td", {}, a.uri), h("td", {}, Object.keys(a.metadata || {}).length ? h("details", {}, h("summary", {}, Object.keys(a.metadata).join(", ")),
        h("pre", {}, fmtJSON(a.metadata))) : ""), h("td", {}, fmtTime(a.updated_at)))), { "data-testid": "assets" }),
    ["assets-prev", "← Previous"], ["assets-next", "Next →"]).load();
}

// collectionMap draws a collection's current features (its first 1000
// items, GeoJSON from the OGC API route) on el with OpenLayers (ol.js,
// vendored from npm: make vendor-ol), in Web Mercator, fitted to them. No
// base map: the page reaches no other server. el gets data-features (how
// many were drawn) and, once drawn, data-rendered.
async function collectionMap(el, collectionPath) {
  if (typeof ol === "undefined") { el.textContent = "The map library did not load."; return; }
  const fc = await api("GET", collectionPath + "/items?limit=1000");
  // OpenLayers measures its target: wait until the page is shown and laid out.
  // A page left before that never draws its map (given up after ~10 s).
  for (let frames = 0; !el.isConnected || !el.offsetWidth || !el.offsetHeight; frames++) {
    if (frames > 600) return;
    await new Promise((resolve) => requestAnimationFrame(resolve));
  }
  const features = new ol.format.GeoJSON().readFeatures(fc, { featureProjection: "EPSG:3857" });
  const source = new ol.source.Vector({ features });
  const map = new ol.Map({
    target: el,
    layers: [new ol.layer.Graticule({ showLabels: false }), new ol.layer.Vector({ source })],
    view: new ol.View({ center: [0, 0], zoom: 1 }),
  });
  if (features.length) map.getView().fit(source.getExtent(), { padding: [24, 24, 24, 24], maxZoom: 14 });
  el.dataset.features = String(features.length);
  map.once("rendercomplete", () => { el.dataset.rendered = "1"; });
}

// ---- workflow runs ----------------------------------------------------------------

const RUN_STATUSES = ["RUNNING", "COMPLETED", "FAILED", "CANCELLED"];
const RUN_FILTERS = [["status", "rf-status"], ["workflow", "rf-workflow"], ["schema_name", "rf-tenant"]];

// runsPage lists workflow runs, newest first, filtered by status, workflow
// and tenant, a page at a time (keyset paging on the API's next_cursor).
// The API keeps a catalog-limited token to its tenants' runs.
async function runsPage(root, params) {
  const filters = h("form", { class: "filters", id: "run-filters" },
    h("label", {}, "status", h("select", { name: "status", id: "rf-status" }, h("option", { value: "" }, "any"),
      RUN_STATUSES.map((s) => h("option", { value: s, selected: params.get("status") === s }, s)))),
    h("label", {}, "workflow", h("input", { name: "workflow", id: "rf-workflow", size: 18, value: params.get("workflow") || "" })),
    h("label", {}, "tenant", h("input", { name: "schema_name", id: "rf-tenant", size: 14, value: params.get("schema_name") || "" })),
    h("button", { type: "submit", id: "rf-apply" }, "Apply"));
  filters.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams();
    for (const [k, id] of RUN_FILTERS) {
      const v = document.getElementById(id).value.trim();
      if (v) q.set(k, v);
    }
    if (params.get("limit")) q.set("limit", params.get("limit"));
    location.hash = "#/workflows" + (q.toString() ? "?" + q.toString() : "");
  });
  const list = h("div", { id: "run-list" });
  root.replaceChildren(h("h1", {}, "Workflow runs"), filters, list);
  const query = new URLSearchParams();
  for (const [k] of RUN_FILTERS) if (params.get(k)) query.set(k, params.get(k));
  query.set("limit", params.get("limit") || "50");
  const pages = pagedList(list, "/workflows/runs", query, (res, short = shortIDs(res.runs.map((x) => x.run_id))) =>
    table(["run", "workflow", "tenant", "status", { label: "attempt", num: true }, "created", "finished", "error"],
      res.runs.map((r) => h("tr", { "data-run": r.run_id, "data-status": r.status },
        idCell(short, r.run_id, "#/run/" + r.run_id),
        h("td", {}, r.workflow), h("td", {}, r.schema_name), h("td", {}, statusBadge(r.status)),
        h("td", { class: "num" }, r.attempt), h("td", {}, fmtTime(r.created_at)), h("td", {}, fmtTime(r.finished_at)),
        errorCell(r.error))), { "data-testid": "runs" }),
    ["runs-prev", "← Newer"], ["runs-next", "Older →"]);
  await pages.load();
  every(root, 5000, () => { if (pages.first()) pages.load().catch((e) => setStatus("refresh failed: " + e.message, true)); });
}

// runPage shows one run: its steps in the workflow's order, each with its
// status, progress (a fan-out's items), its tasks linked to their pages,
// and Cancel / Retry for admins. It refreshes while the run is RUNNING.
async function runPage(root, id) {
  const draw = async () => {
    const r = await api("GET", "/workflows/runs/" + encodeURIComponent(id));
    root.replaceChildren(renderRun(r));
    setStatus("updated " + fmtClock(new Date()));
    return r;
  };
  const r = await draw();
  if (r.status === "RUNNING") {
    every(root, 2000, () => draw().then((x) => { if (x.status !== "RUNNING") stopTimer(); })
      .catch((e) => setStatus("refresh failed: " + e.message, true)));
  }
}

function renderRun(r) {
  const actions = h("p", { id: "run-actions" });
  const act = async (label, path) => {
    try {
      await api("POST", path);
      setStatus(label + " done");
      route();
    } catch (e) { setStatus(label + " failed: " + e.message, true); }
  };
  const base = "/workflows/runs/" + encodeURIComponent(r.run_id);
  if (isAdmin() && r.status === "RUNNING") {
    actions.append(h("button", { type: "button", id: "run-cancel", onclick: () => act("cancel", base + "/cancel") }, "Cancel run"));
  }
  if (isAdmin() && (r.status === "FAILED" || r.status === "CANCELLED")) {
    actions.append(h("button", { type: "button", id: "run-retry", onclick: () => act("retry", base + "/retry") }, "Retry from the failed steps"));
  }
  if (isAdmin() && r.status === "RUNNING") { // the dashboard's actions take an admin session
    for (const s of (r.steps || []).filter((x) => x.waiting && x.waiting.signal)) actions.append(signalForm(r, s));
  }
  const link = (k, v) => h("a", { href: "#/workflows?" + new URLSearchParams({ [k]: v }).toString() }, v);
  const rows = [
    ["run id", r.run_id], ["workflow", link("workflow", r.workflow)], ["tenant", link("schema_name", r.schema_name)],
    ["status", statusBadge(r.status)], ["attempt", r.attempt], ["created", fmtTime(r.created_at)],
    ["deadline", fmtTime(r.deadline)], ["finished", fmtTime(r.finished_at)],
    ["parent", r.parent_run_id ? h("a", { href: "#/run/" + r.parent_run_id, id: "run-parent" }, shortIDs([r.parent_run_id])(r.parent_run_id) + " · step " + r.parent_step) : null],
    ["started by", startedBy(r.started_by)],
  ].filter(([, v]) => v !== undefined && v !== null && v !== "");
  const steps = r.steps || [];
  const short = shortIDs(steps.flatMap((s) => (s.tasks || []).map((t) => t.task_id).concat((s.runs || []).map((c) => c.run_id))));
  return h("div", { "data-testid": "run", "data-status": r.status, "data-attempt": r.attempt },
    h("h1", {}, "Run of " + r.workflow + " ", statusBadge(r.status)),
    actions,
    h("table", { class: "kv" }, h("tbody", {}, rows.map(([k, v]) => h("tr", {}, h("td", {}, k), h("td", {}, v))))),
    r.error ? h("div", {}, h("h2", {}, "Error"), h("pre", { class: "error", id: "run-error" }, r.error)) : null,
    h("h2", {}, "Steps"),
    h("p", { class: "muted" }, "In the workflow's order: a step starts once every step it waits for has ended."),
    table([{ label: "#", num: true }, "step", "task type", "waits for", "status", "progress", "tasks", "error"],
      steps.map((s, i) => stepRow(s, i, short)), { "data-testid": "steps", class: "steps" }),
    h("h2", {}, "Inputs"), h("pre", { id: "run-inputs" }, fmtJSON(r.inputs)));
}

// signalForm sends an approval step its signal: a JSON payload (checked
// against the step's payload schema by the server, which also decides who
// may send it) and a button.
function signalForm(r, s) {
  const name = s.waiting.signal;
  const payload = h("textarea", { id: "signal-payload-" + name, rows: 2, cols: 40, "aria-label": "payload of signal " + name }, "{}");
  const send = async () => {
    let body;
    try { body = JSON.parse(payload.value || "{}"); } catch (e) { setStatus("the payload is not JSON: " + e.message, true); return; }
    try {
      await api("POST", "/workflows/runs/" + encodeURIComponent(r.run_id) + "/signals/" + encodeURIComponent(name), body);
      setStatus("signal " + name + " sent");
      route();
    } catch (e) { setStatus("signal " + name + " failed: " + e.message, true); }
  };
  return h("span", { class: "signal", "data-signal": name }, payload,
    h("button", { type: "button", id: "run-signal-" + name, onclick: send }, "Send signal " + name));
}

// waitText says what a waiting step waits for, and until when.
function waitText(w) {
  const until = w.until ? " until " + fmtTime(w.until) : "";
  if (w.event) return "waits for event " + w.event + until;
  if (w.signal) return "waits for signal " + w.signal + until;
  return "sleeps" + until;
}

// startedBy says what started a run: an event through a subscription, or a
// schedule's tick (nothing for the API or the CLI).
function startedBy(b) {
  if (!b) return null;
  if (b.kind === "event") return "event " + b.event_type + " " + shortIDs([b.event_id])(b.event_id) + " · subscription " + b.subscription;
  if (b.kind === "schedule") return "schedule " + b.schedule + " · tick " + fmtTime(b.tick);
  return null;
}

// stepRow is one step of a run: a fan-out shows its items' counts by
// status, every step links its tasks (the latest first, at most 20).
function stepRow(s, i, short) {
  const tasks = s.tasks || [];
  const counts = {};
  for (const t of tasks) counts[t.status] = (counts[t.status] || 0) + 1;
  const fanOut = s.items !== undefined && s.items !== null;
  const progress = s.waiting ? waitText(s.waiting) : fanOut
    ? s.done + " of " + s.items + " items done" + (s.started > s.done ? ", " + (s.started - s.done) + " started" : "")
    : (s.status === "WAITING" || s.status === "SKIPPED" ? "" : s.done + " of 1");
  const shown = tasks.slice(-20).reverse();
  const childLinks = (s.runs || []).slice(-20).reverse().map((c) => h("a", { href: "#/run/" + c.run_id, "data-run": c.run_id, class: "step-task", title: c.status + " · " + c.run_id },
    (c.item !== undefined && c.item !== null ? "item " + c.item : "run " + short(c.run_id)), " ", statusBadge(c.status)));
  const taskLinks = childLinks.concat(shown.map((t) => h("a", { href: "#/task/" + t.task_id, "data-task": t.task_id, class: "step-task", title: t.status + " · " + t.task_id },
    (t.item !== undefined && t.item !== null ? "item " + t.item : short(t.task_id)), " ", statusBadge(t.status))));
  return h("tr", { "data-step": s.step, "data-status": s.status },
    h("td", { class: "num" }, i + 1),
    h("td", {}, s.step),
    h("td", {}, s.task_type || (s.workflow ? "workflow " + s.workflow : s.kind || "")),
    h("td", {}, (s.depends_on || []).join(", ")),
    h("td", {}, statusBadge(s.status)),
    h("td", { class: "progress" }, progress,
      fanOut && tasks.length ? h("div", { class: "muted counts", "data-testid": "counts-" + s.step },
        Object.entries(counts).map(([k, v]) => v + " " + k).join(" · ")) : null),
    h("td", { class: "tasks" }, taskLinks.length ? h("div", { class: "task-links" }, taskLinks) : h("span", { class: "muted" }, "none"),
      tasks.length > shown.length ? h("div", { class: "muted" }, (tasks.length - shown.length) + " older not shown") : null),
    errorCell(s.error));
}

// ---- start -----------------------------------------------------------------------

document.addEventListener("DOMContentLoaded", async () => {
  document.getElementById("signin-form").addEventListener("submit", signIn);
  document.getElementById("signout").addEventListener("click", signOut);
  window.addEventListener("hashchange", route);
  try {
    const s = await api("GET", "/ui/session");
    if (s && s.signed_in) signedIn(s); else showSignIn("");
  } catch (e) {
    showSignIn("");
  }
});
