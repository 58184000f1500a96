// DOM, SVG and fetch helpers shared by every panel of the page: elements are built as nodes, never from HTML strings
// (text from a run or a file stays text), and api() turns a network failure into an answer (status 0).
export const $ = (id) => document.getElementById(id);

export function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v; else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

export async function api(path, opts) {
  const init = Object.assign({ headers: {} }, opts || {});
  if (init.json !== undefined) {
    init.method = init.method || 'POST';
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(init.json);
    delete init.json;
  }
  let r;
  // A network failure is an answer too (status 0), so every caller can report it instead of throwing.
  try { r = await fetch(path, init); } catch (e) {
    return { ok: false, status: 0, body: { code: 'runner_unreachable', message: String(e) } };
  }
  let body = null;
  try { body = await r.json(); } catch (_) { body = null; }
  return { ok: r.ok, status: r.status, body };
}

export function pct(x) { return x === null || x === undefined ? null : `${(100 * x).toFixed(1)}%`; }

export function fmtNum(v) { return typeof v === 'number' ? String(Math.round(v * 1000) / 1000) : String(v); }

export function humanBytes(n) {
  if (typeof n !== 'number' || !n) return null;
  const units = ['B', 'KB', 'MB', 'GB']; let i = 0; let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function humanCount(n) {
  if (typeof n !== 'number') return null;
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(0)} M`;
  return String(n);
}
