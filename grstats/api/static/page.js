/* grstats live page: refresh the server-rendered page every period, in place.

   What to read comes from the page itself: <body data-tables> lists the
   tables, each figure names its table, column and format (data-t, data-c,
   data-f), so this script has no list of columns of its own. Tables come
   from /v1/tables/<name>; what no table holds (rates, sparklines, findings,
   health) from the group's /v1/live/<group>, already formatted and drawn.
   The formats below are core/pageview.py's field_text and
   protocol/humanize.py's duration, written again for the browser (the
   browser test compares them on the same values).

   Safety: every value is set with textContent or setAttribute, never as
   HTML; member ids are compared as strings, never put into a selector. */
(function () {
  "use strict";

  var body = document.body;
  var GROUP = body.dataset.group;
  var LIVE = body.dataset.live;
  if (GROUP === undefined || !LIVE) { return; } // the collector's index: nothing live
  var PERIOD_MS = Math.max(250, 1000 * Number(body.dataset.period || "1"));
  var TABLES = (body.dataset.tables || "").split(" ").filter(Boolean);
  var ERROR_TABLES = (body.dataset.errors || "").split(" ").filter(Boolean);
  var MAX_TEXT = 120;
  var NULL_TEXT = "\u2014";
  var GR_CHANNEL = "group_replication_applier";
  var STATE_TONE = { ONLINE: "ok", RECOVERING: "warn", UNREACHABLE: "bad", ERROR: "bad", OFFLINE: "bad" };
  var CONTROL = /[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]/g;

  function hex(code, width) {
    var text = code.toString(16);
    while (text.length < width) { text = "0" + text; }
    return text;
  }
  function visible(text) {
    return text.replace(CONTROL, function (c) {
      var code = c.charCodeAt(0);
      return code <= 0xff ? "\\x" + hex(code, 2) : "\\u" + hex(code, 4);
    });
  }
  function grouped(n) { return n.toLocaleString("en-US"); }
  function roundEven(x) { // Python's round(): halves to the even neighbour
    var r = Math.round(x);
    if (Math.abs(x % 1) === 0.5) { r = 2 * Math.round(x / 2); }
    return r;
  }
  /* x with d decimals as Python's format() writes it: correctly rounded, and an exact
     tie (0.125, 3.25: the double is exactly half way) to the even digit, where
     toFixed would round it up. toFixed(100) is the double's exact decimal value. */
  function fixed(x, d) {
    var exact = x.toFixed(100);
    var point = exact.indexOf(".");
    if (point >= 0 && /^50*$/.test(exact.slice(point + 1 + d))) {
      var kept = exact.slice(0, d ? point + 1 + d : point);
      if (Number(kept[kept.length - 1]) % 2 === 0) { return kept; }
    }
    return x.toFixed(d);
  }
  function cut(value) {
    var text = visible(String(value));
    if (text.length <= MAX_TEXT) { return text; }
    return text.slice(0, MAX_TEXT) + "\u2026 (" + grouped(text.length - MAX_TEXT) + " more characters)";
  }
  function duration(s) {
    if (s < 0) { return "-" + duration(-s); }
    if (s === Infinity) { return "never"; }
    if (s < 1) { return fixed(s, 2) + " s"; }
    if (s < 10) { return fixed(s, 1) + " s"; }
    var whole = roundEven(s);
    if (whole < 60) { return whole + " s"; }
    var units = [[86400, "d", 3600, "h"], [3600, "h", 60, "min"], [60, "min", 1, "s"]];
    for (var i = 0; i < units.length; i++) {
      var u = units[i];
      if (whole >= u[0]) {
        var big = Math.floor(whole / u[0]);
        var part = Math.floor((whole % u[0]) / u[2]);
        return part ? big + " " + u[1] + " " + part + " " + u[3] : big + " " + u[1];
      }
    }
    return whole + " s";
  }
  function isNumber(v) { return typeof v === "number" && !isNaN(v); }

  /* [text, tone] of one figure: core/pageview.py field_text. */
  function figure(fmt, value, row) {
    if (fmt === "dominant") {
      if (typeof value !== "string" || !value) { return [NULL_TEXT, ""]; }
      var share = row ? row[value.toUpperCase() + "_SHARE"] : null;
      var name = cut(value.split("_").join(" "));
      return [isNumber(share) ? name + " " + fixed(100 * share, 0) + " %" : name, ""];
    }
    var numeric = fmt === "count" || fmt === "duration" || fmt === "rate" || fmt === "ready";
    if (value === null || value === undefined || (numeric && !isNumber(value))) { return [NULL_TEXT, ""]; }
    if (fmt === "count") { return [grouped(roundEven(value)), ""]; }
    if (fmt === "duration") { return [duration(value), ""]; }
    if (fmt === "rate") { return [value < 100 ? fixed(value, 1) : grouped(roundEven(value)), ""]; }
    if (fmt === "state") { return [cut(value), STATE_TONE[value] || "warn"]; }
    if (fmt === "ready") { return value ? ["ready", "ok"] : ["not ready", "bad"]; }
    if (fmt === "flag") {
      if (value === "" || value === 0) { return ["no", ""]; }
      return [value === 1 ? "yes" : cut(value), "warn"];
    }
    return [cut(value), ""];
  }

  /* Python's json writes NaN and Infinity, which JSON.parse refuses: outside strings,
     read them as null (the page shows each such figure's text column instead). */
  function parseLoose(text) {
    try { return JSON.parse(text); } catch (e) { /* fall through */ }
    var out = "", inString = false;
    for (var i = 0; i < text.length; i++) {
      var c = text[i];
      if (inString) {
        out += c;
        if (c === "\\") { out += text[++i]; } else if (c === "\"") { inString = false; }
      } else if (c === "\"") {
        inString = true; out += c;
      } else if (text.startsWith("NaN", i)) {
        out += "null"; i += 2;
      } else if (text.startsWith("-Infinity", i)) {
        out += "null"; i += 8;
      } else if (text.startsWith("Infinity", i)) {
        out += "null"; i += 7;
      } else {
        out += c;
      }
    }
    return JSON.parse(out);
  }

  // the browser test checks these against the server's texts and Python's json
  window.grstats = { figure: figure, parse: parseLoose };

  function get(url, signal) {
    return fetch(url, { signal: signal, cache: "no-store", credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) { throw new Error(url + ": HTTP " + r.status); }
        return r.text();
      })
      .then(parseLoose);
  }

  /* table name -> member id -> its row (the group's applier channel where there are several) */
  function index(tables) {
    var out = {};
    Object.keys(tables).forEach(function (name) {
      var byMember = {};
      tables[name].forEach(function (row) {
        var id = String(row.MEMBER_ID);
        var chan = row.CHANNEL_NAME === undefined ? GR_CHANNEL : row.CHANNEL_NAME;
        if (!(id in byMember) || chan === GR_CHANNEL) { byMember[id] = row; }
      });
      out[name] = byMember;
    });
    return out;
  }

  /* core/labels.py member_labels: host:port, the UUID's first 8 digits where two share one */
  function labels(members) {
    var plain = {}, seen = {};
    members.forEach(function (r) {
      if (typeof r.MEMBER_ID === "string" && r.MEMBER_HOST) {
        plain[r.MEMBER_ID] = r.MEMBER_PORT === null || r.MEMBER_PORT === undefined
          ? String(r.MEMBER_HOST) : r.MEMBER_HOST + ":" + r.MEMBER_PORT;
      }
    });
    Object.keys(plain).forEach(function (m) { seen[plain[m]] = (seen[plain[m]] || 0) + 1; });
    var out = {};
    Object.keys(plain).forEach(function (m) {
      out[m] = seen[plain[m]] === 1 ? plain[m] : plain[m] + "/" + m.slice(0, 8);
    });
    return out;
  }

  function channelErrors(tables, id) {
    var out = [];
    ERROR_TABLES.forEach(function (name) {
      (tables[name] || []).forEach(function (row) {
        var n = row.LAST_ERROR_NUMBER;
        if (String(row.MEMBER_ID) !== id || n === null || n === undefined || n === 0) { return; }
        out.push(cut(row.CHANNEL_NAME || "") + ": error " + cut(n) + ": " + cut(row.LAST_ERROR_MESSAGE || ""));
      });
    });
    return out;
  }

  function rowOf(tbody, id) {
    var rows = tbody.rows;
    for (var i = 0; i < rows.length; i++) {
      if (rows[i].getAttribute("data-member") === id) { return rows[i]; }
    }
    return null;
  }

  function setList(list, items) {
    while (list.firstChild) { list.removeChild(list.firstChild); }
    items.forEach(function (text) {
      var li = document.createElement("li");
      li.textContent = text;
      list.appendChild(li);
    });
  }

  function update(tr, id, label, local, byTable, raw, live) {
    tr.querySelector(".label").textContent = cut(label);
    tr.querySelector(".label").setAttribute("title", id);
    tr.querySelector(".local").hidden = !local;
    var mine = (live.members || {})[id] || { figures: {}, sparks: {} };
    tr.querySelectorAll("[data-f]").forEach(function (el) {
      var t = el.getAttribute("data-t"), c = el.getAttribute("data-c"), f = el.getAttribute("data-f");
      var shown;
      if (t === "recent") {
        shown = [c in mine.figures ? mine.figures[c] : NULL_TEXT, ""];
      } else {
        var row = (byTable[t] || {})[id];
        shown = figure(f, row ? row[c] : null, row);
      }
      el.textContent = shown[0];
      el.className = "v " + shown[1];
    });
    tr.querySelectorAll(".spark").forEach(function (el) {
      var drawn = mine.sparks[el.getAttribute("data-spark")] || { paths: [], top: "" };
      el.querySelectorAll("path").forEach(function (path, i) {
        path.setAttribute("d", String(drawn.paths[i] || ""));
      });
      el.querySelector(".top").textContent = String(drawn.top || "");
    });
    var errs = tr.querySelector(".errors");
    if (errs) {
      var found = channelErrors(raw, id);
      setList(errs, found);
      tr.querySelector(".noerr").hidden = found.length > 0;
    }
  }

  function render(raw, live) {
    var byTable = index(raw);
    var names = labels(raw.replication_group_members || []);
    var members = (raw.grstats_member_status || []).filter(function (r) { return r.GROUP_NAME === GROUP; });
    var tbody = document.querySelector("#members tbody");
    var template = document.getElementById("member-row");
    var keep = {};
    members.forEach(function (facts) {
      var id = String(facts.MEMBER_ID);
      keep[id] = true;
      var tr = rowOf(tbody, id);
      if (!tr) {
        tr = template.content.firstElementChild.cloneNode(true);
        tr.setAttribute("data-member", id);
        tbody.appendChild(tr);
      }
      update(tr, id, names[id] || id, facts.IS_LOCAL === 1, byTable, raw, live);
    });
    Array.prototype.slice.call(tbody.rows).forEach(function (tr) {
      if (!keep[tr.getAttribute("data-member")]) { tbody.removeChild(tr); }
    });
    Array.prototype.slice.call(tbody.rows)
      .sort(function (a, b) {
        var x = a.querySelector(".label").textContent, y = b.querySelector(".label").textContent;
        return x < y ? -1 : x > y ? 1 : 0;
      })
      .forEach(function (tr) { tbody.appendChild(tr); });
    setList(document.getElementById("findings"), (live.findings || []).map(function (f) {
      return visible(String(f));
    }));
    document.getElementById("no-findings").hidden = (live.findings || []).length > 0;
    var health = document.getElementById("health");
    var ok = live.health && live.health.ok;
    health.className = "health " + (ok ? "ok" : "bad");
    health.textContent = ok ? "this daemon: ok"
      : "this daemon: degraded: " + ((live.health && live.health.details) || []).map(cut).join("; ");
    var at = new Date(live.taken_at_us / 1000).toISOString();
    document.getElementById("asof").textContent = at.slice(0, 10) + " " + at.slice(11, 19) + " UTC";
  }

  var status = document.getElementById("live");
  var lastGood = null;
  function say(text, stale) {
    status.textContent = text;
    status.className = stale ? "stale" : "";
  }

  function poll() {
    var controller = new AbortController();
    var timer = setTimeout(function () { controller.abort(); }, Math.max(5000, 3 * PERIOD_MS));
    var wanted = TABLES.concat(ERROR_TABLES.filter(function (t) { return TABLES.indexOf(t) < 0; }));
    // one request at a time: a browser holds one of the API's connections, not eight
    var urls = wanted.map(function (name) { return "/v1/tables/" + name; }).concat([LIVE]);
    var answers = [];
    urls.reduce(function (done, url) {
      return done.then(function () {
        return get(url, controller.signal).then(function (got) { answers.push(got); });
      });
    }, Promise.resolve())
      .then(function () {
        var raw = {};
        wanted.forEach(function (name, i) { raw[name] = answers[i]; });
        render(raw, answers[answers.length - 1]);
        lastGood = new Date();
        say("\u00b7 live, every " + PERIOD_MS / 1000 + " s", false);
        body.setAttribute("data-updates", String(Number(body.getAttribute("data-updates") || "0") + 1));
      })
      .catch(function (err) {
        var since = lastGood ? " since " + lastGood.toLocaleTimeString() : "";
        say("\u00b7 not updated" + since + " (" + cut(err && err.message ? err.message : err) + ")", true);
      })
      .finally(function () {
        clearTimeout(timer);
        setTimeout(poll, PERIOD_MS);
      });
  }
  say("\u00b7 live, every " + PERIOD_MS / 1000 + " s", false);
  setTimeout(poll, PERIOD_MS);
})();
