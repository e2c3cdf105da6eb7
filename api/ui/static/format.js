// wf dashboard: how values are shown (times with their zone, short ids
// that tell rows apart, error texts that keep their cause) and a safe way
// to fill an element. Loaded before app.js, which uses these.
"use strict";

// fill replaces el's children with kids, skipping null and undefined (which
// replaceChildren would show as the text "null").
function fill(el, ...kids) {
  el.replaceChildren(...kids.flat().filter((k) => k !== null && k !== undefined));
  return el;
}

// fmtTime shows an RFC 3339 time with its zone: in timeZone (an IANA name,
// such as a schedule's own) when given, else in the viewer's zone, labelled
// either way ("12/8/2026, 2:00:00 AM GMT+1"). A zone the browser does not
// know falls back to the viewer's.
function fmtTime(t, timeZone) {
  if (!t) return "";
  const d = new Date(t);
  if (timeZone) {
    try { return d.toLocaleString(undefined, { timeZone, timeZoneName: "short" }); } catch (e) { /* an unknown zone */ }
  }
  return d.toLocaleString(undefined, { timeZoneName: "short" });
}

// fmtClock shows the time of day of a Date in the viewer's zone, labelled.
function fmtClock(d) { return d.toLocaleTimeString(undefined, { timeZoneName: "short" }); }

// viewerZone is the short name of the viewer's time zone ("GMT+1", "EST").
function viewerZone() {
  const part = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(new Date())
    .find((p) => p.type === "timeZoneName");
  return part ? part.value : "local time";
}

// SHORT_ID_MIN is the fewest characters of an id shown: a UUIDv7's first 8
// hex digits are its creation time in units of about a minute, so ids are
// lengthened until every one on the page differs.
const SHORT_ID_MIN = 8;

// shortIDs returns a function that shows each of ids by the shortest
// prefix of its canonical form (at least SHORT_ID_MIN characters) that no
// other of ids shares, followed by "…". The prefix (with or without the
// "…") is what `wf tasks show` and `wf workflows show` take for an id.
function shortIDs(ids) {
  const distinct = [...new Set(ids.filter(Boolean))];
  let n = SHORT_ID_MIN;
  const longest = Math.max(0, ...distinct.map((id) => id.length));
  while (n < longest && new Set(distinct.map((id) => id.slice(0, n))).size < distinct.length) n++;
  return (id) => (id && id.length > n ? id.slice(0, n) + "…" : id || "");
}

// idCell is a table cell showing id by short(id), its whole id in the
// title; href makes it a link.
function idCell(short, id, href) {
  const text = short(id);
  return h("td", { title: id, class: "id" }, href ? h("a", { href }, text) : text);
}

// ERROR_SHOWN is how long an error text may be before its middle is left
// out: its start says what failed, its end the cause.
const ERROR_SHOWN = 400;

// errorText shortens a long error by its middle, keeping the start and the
// end (the cause of a wrapped error: "error doing X: …: connection refused").
function errorText(s) {
  if (!s || s.length <= ERROR_SHOWN) return s || "";
  return s.slice(0, 120) + " … " + s.slice(s.length - (ERROR_SHOWN - 123));
}

// errorCell is a table cell showing an error text, whole in its title.
function errorCell(s, attrs) {
  return h("td", Object.assign({ class: "error", title: s || null }, attrs || {}), errorText(s));
}
