// The markdown subset the course guides use (headings, paragraphs, lists, tables, code fences, inline code,
// emphasis, links), built as DOM nodes — never innerHTML — and the split of a guide into title, intro and sections.
import { $, el } from './dom.js';

export function inline(text) {
  const frag = document.createDocumentFragment();
  const re = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\([^)\s]+\))/g;
  let last = 0; let m;
  while ((m = re.exec(text)) !== null) {
    if (m.index > last) frag.append(text.slice(last, m.index));
    const tok = m[0];
    if (m[1]) frag.append(el('code', { text: tok.slice(1, -1) }));
    else if (m[2]) frag.append(el('strong', {}, inline(tok.slice(2, -2))));
    else if (m[3]) frag.append(el('em', {}, inline(tok.slice(1, -1))));
    else {
      const [, label, href] = tok.match(/^\[([^\]]+)\]\(([^)\s]+)\)$/);
      frag.append(link(label, href));
    }
    last = m.index + tok.length;
  }
  if (last < text.length) frag.append(text.slice(last));
  return frag;
}

function link(label, href) {
  if (href === 'README.md' || href === 'README.zh-CN.md') {
    // The guide's link to its other language switches the whole page, like the toggle.
    const a = el('a', { href: '#', class: 'guide-lang-link', 'data-testid': 'guide-lang-link' }, inline(label));
    a.addEventListener('click', (e) => { e.preventDefault(); const b = $('lang-toggle'); if (b) b.click(); });
    return a;
  }
  if (/^https?:\/\//.test(href)) return el('a', { href, target: '_blank', rel: 'noopener noreferrer' }, inline(label));
  return el('span', { class: 'guide-ref', title: href }, inline(label));
}

const isFence = (l) => /^\s*```/.test(l);
const isHeading = (l) => /^#{1,6}\s/.test(l);
const isBullet = (l) => /^\s*[-*]\s+/.test(l);
const isOrdered = (l) => /^\s*\d+\.\s+/.test(l);
const isTableRow = (l) => /^\s*\|.*\|\s*$/.test(l);
const isTableSep = (l) => /^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$/.test(l);

export function markdown(md, headingShift) {
  const frag = document.createDocumentFragment();
  const lines = md.replace(/\r\n/g, '\n').split('\n');
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (!line.trim()) { i += 1; continue; }
    if (isFence(line)) {
      const lang = line.trim().slice(3).trim();
      const body = []; i += 1;
      while (i < lines.length && !isFence(lines[i])) { body.push(lines[i]); i += 1; }
      i += 1;
      frag.append(el('pre', { class: 'code guide-code' }, el('code', { 'data-lang': lang || null, text: body.join('\n') })));
      continue;
    }
    if (isHeading(line)) {
      const level = Math.min(6, line.match(/^#+/)[0].length + headingShift);
      frag.append(el(`h${level}`, {}, inline(line.replace(/^#+\s+/, ''))));
      i += 1; continue;
    }
    if (isTableRow(line) && i + 1 < lines.length && isTableSep(lines[i + 1])) {
      const cells = (l) => l.trim().replace(/^\|/, '').replace(/\|$/, '').split('|').map((c) => c.trim());
      const table = el('table', { class: 'guide-table' });
      table.append(el('thead', {}, el('tr', {}, ...cells(line).map((c) => el('th', {}, inline(c))))));
      const tbody = el('tbody'); i += 2;
      while (i < lines.length && isTableRow(lines[i])) { tbody.append(el('tr', {}, ...cells(lines[i]).map((c) => el('td', {}, inline(c))))); i += 1; }
      table.append(tbody); frag.append(table);
      continue;
    }
    if (isBullet(line) || isOrdered(line)) {
      const ordered = isOrdered(line);
      const indent = line.match(/^\s*/)[0].length;
      const list = el(ordered ? 'ol' : 'ul');
      if (ordered) { const start = parseInt(line.trim(), 10); if (start !== 1) list.setAttribute('start', String(start)); }
      while (i < lines.length) {
        const cur = lines[i];
        const curIndent = cur.match(/^\s*/)[0].length;
        const sameKind = ordered ? isOrdered(cur) : isBullet(cur);
        if (!cur.trim() || curIndent !== indent || !sameKind) break;
        const item = [cur.replace(/^\s*(?:[-*]|\d+\.)\s+/, '')]; i += 1;
        // Continuation lines are indented deeper than the marker (nested lists included).
        while (i < lines.length && lines[i].trim() && lines[i].match(/^\s*/)[0].length > indent) {
          item.push(lines[i].slice(Math.min(lines[i].match(/^\s*/)[0].length, indent + 2))); i += 1;
        }
        const li = el('li');
        const nestedAt = item.findIndex((l, k) => k > 0 && (isBullet(l) || isOrdered(l)));
        const text = (nestedAt === -1 ? item : item.slice(0, nestedAt)).join(' ');
        li.append(inline(text));
        if (nestedAt !== -1) li.append(markdown(item.slice(nestedAt).join('\n'), headingShift));
        list.append(li);
      }
      frag.append(list);
      continue;
    }
    const para = [];
    while (i < lines.length && lines[i].trim() && !isFence(lines[i]) && !isHeading(lines[i]) && !isBullet(lines[i]) && !isOrdered(lines[i]) && !(isTableRow(lines[i]) && isTableSep(lines[i + 1] || ''))) {
      para.push(lines[i].trim()); i += 1;
    }
    frag.append(el('p', {}, inline(para.join(' '))));
  }
  return frag;
}

/// Title, intro and `## ` sections, with headings inside code fences ignored (like xtask).
export function splitGuide(md) {
  const out = { title: '', intro: [], sections: [] };
  let fence = false;
  for (const line of md.split('\n')) {
    if (isFence(line)) fence = !fence;
    if (!fence && line.startsWith('## ')) { out.sections.push({ heading: line.slice(3).trim(), body: [] }); continue; }
    if (!fence && !out.title && !out.sections.length && line.startsWith('# ')) { out.title = line.slice(2).trim(); continue; }
    (out.sections.length ? out.sections[out.sections.length - 1].body : out.intro).push(line);
  }
  return out;
}
