// The admin page: reads /admin/stats and /admin/sampling/jobs with the token typed in, sent as
// a Bearer header. The token lives in this closure only (never the URL, never storage), and
// everything from the server is written as text (textContent), never as markup.
"use strict";
(function () {
  const form = document.getElementById("token-form");
  const input = document.getElementById("token");
  const message = document.getElementById("message");
  const statsOut = document.getElementById("stats");
  const jobsOut = document.getElementById("jobs");
  let token = "";
  let timer = null;

  function el(name, text, cls) {
    const e = document.createElement(name);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function say(text, kind) {
    message.textContent = text;
    message.className = kind;
    message.setAttribute("role", kind === "error" ? "alert" : "status");
  }

  async function get(path) {
    const r = await fetch(path, {
      headers: { Authorization: "Bearer " + token, Accept: "application/json" },
      cache: "no-store",
      credentials: "omit",
    });
    const text = await r.text();
    if (!r.ok) {
      const e = new Error(text.trim() || r.statusText);
      e.status = r.status;
      throw e;
    }
    return JSON.parse(text);
  }

  function show(value) {
    if (value === null || value === undefined) return "none";
    if (typeof value === "object") return JSON.stringify(value);
    return String(value);
  }

  // One table of rows "key: value", nested objects flattened to dotted keys.
  function rows(obj, prefix, out) {
    for (const [k, v] of Object.entries(obj)) {
      const key = prefix ? prefix + "." + k : k;
      if (v && typeof v === "object" && !Array.isArray(v)) rows(v, key, out);
      else out.push([key, show(v)]);
    }
    return out;
  }

  function table(caption, pairs, cls) {
    const t = el("table", null, cls);
    t.appendChild(el("caption", caption));
    const body = el("tbody");
    for (const [k, v] of pairs) {
      const tr = el("tr");
      const th = el("th", k);
      th.scope = "row";
      tr.appendChild(th);
      tr.appendChild(el("td", v));
      body.appendChild(tr);
    }
    t.appendChild(body);
    return t;
  }

  function renderStats(stats) {
    statsOut.replaceChildren();
    const top = [];
    const groups = [];
    for (const [k, v] of Object.entries(stats)) {
      if (v && typeof v === "object" && !Array.isArray(v)) groups.push([k, v]);
      else top.push([k, show(v)]);
    }
    const asked = (stats.hits || 0) + (stats.misses || 0) + (stats.stale || 0);
    if (asked > 0) top.push(["hit ratio", (100 * (stats.hits || 0) / asked).toFixed(1) + " %"]);
    statsOut.appendChild(table("The cache", top, "stats"));
    for (const [name, value] of groups) {
      statsOut.appendChild(el("h3", name.replace(/_/g, " ")));
      const pairs = rows(value, "", []);
      statsOut.appendChild(table(name, pairs.length ? pairs : [["(none)", ""]], "stats"));
    }
  }

  function renderJobs(list) {
    jobsOut.replaceChildren();
    if (list.length === 0) {
      jobsOut.appendChild(el("p", "No sampling job yet.", "none"));
      return false;
    }
    const t = el("table", null, "jobs");
    t.appendChild(el("caption", list.length + (list.length === 1 ? " job" : " jobs")));
    const head = el("tr");
    for (const h of ["Job", "State", "Stage", "Input read", "CDX answers", "Sampled", "TimeMaps", "ETA", "Created", "Error"]) {
      const th = el("th", h);
      th.scope = "col";
      head.appendChild(th);
    }
    const thead = el("thead");
    thead.appendChild(head);
    t.appendChild(thead);
    const body = el("tbody");
    let busy = false;
    for (const j of list) {
      const c = j.counters || {};
      const input = j.input || {};
      busy = busy || j.state === "queued" || j.state === "running";
      const tr = el("tr", null, "job");
      tr.dataset.state = String(j.state);
      const id = el("th", j.id);
      id.scope = "row";
      tr.appendChild(id);
      tr.appendChild(el("td", j.state));
      tr.appendChild(el("td", j.stage || "none"));
      const read = el("td");
      const size = Number(input.size_bytes) || 0;
      const done = Number(input.read_bytes) || 0;
      const pct = size > 0 ? Math.min(100, (100 * done) / size) : (j.state === "done" ? 100 : 0);
      const bar = el("progress");
      bar.max = 100;
      bar.value = pct;
      bar.setAttribute("aria-label", "Input read by job " + j.id);
      read.appendChild(bar);
      read.appendChild(document.createTextNode(" " + pct.toFixed(0) + " %"));
      tr.appendChild(read);
      tr.appendChild(el("td", show(c.cdx_answers)));
      tr.appendChild(el("td", show(c.sampled)));
      tr.appendChild(el("td", show(c.timemaps)));
      tr.appendChild(el("td", j.eta_seconds == null ? "none" : Math.round(j.eta_seconds) + " s"));
      tr.appendChild(el("td", j.created_at));
      tr.appendChild(el("td", j.error || ""));
      body.appendChild(tr);
    }
    t.appendChild(body);
    jobsOut.appendChild(t);
    return busy;
  }

  function why(e) {
    if (e.status === 401) return "Wrong or missing token (401): the server did not accept it.";
    if (e.status === 403) return "The admin API is disabled (403): no [admin] token is configured.";
    return (e.status ? e.status + ": " : "") + e.message;
  }

  async function load() {
    if (timer) clearTimeout(timer);
    say("Loading…", "ok");
    try {
      renderStats(await get("/admin/stats"));
    } catch (e) {
      statsOut.replaceChildren(el("p", "Not available."));
      jobsOut.replaceChildren(el("p", "Not available."));
      say(why(e), "error");
      return;
    }
    let busy = false;
    try {
      busy = renderJobs((await get("/admin/sampling/jobs")).jobs || []);
      say("Loaded at " + new Date().toLocaleTimeString() + ".", "ok");
    } catch (e) {
      jobsOut.replaceChildren(el("p", "Sampling jobs: " + why(e), "error"));
      say("Statistics loaded; the sampling jobs are not available.", "ok");
    }
    // While a job runs, follow its progress.
    if (busy) timer = setTimeout(load, 5000);
  }

  form.addEventListener("submit", function (ev) {
    ev.preventDefault();
    token = input.value.trim();
    load();
  });
})();
