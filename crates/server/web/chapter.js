// The runner chapter on the page: each section of docs/chapter/chapter.json (GET /course/chapter) placed as a note
// beside the live element it explains (its `anchor`), the chapter card with the index and the acceptance list, the
// course frame (capability chain, concept calibration, each stage's place) and the source browser's orientation.
// Text only from the chapter file, in the page's one language (lang.js); nothing here runs or scores anything.
import { $, api, el } from './dom.js';
import { currentLang, onLangChange } from './lang.js';
import { openFile } from './sources.js';
import { S } from './state.js';

const UI = {
  en: {
    index_h: 'Sections', beside: 'beside', open_source: 'open in the source browser', tests: 'checked by',
    failed: 'The chapter could not be loaded: {0}', chain_h: 'Capability chain', concepts_h: 'Concept calibration',
    principles_h: 'The whole model first', groups_h: 'Directories by role', sees: 'The model sees', never: 'The model never sees',
    files: 'files', stage: 'Stage',
  },
  zh: {
    index_h: '各节', beside: '位于', open_source: '在源码浏览器中打开', tests: '检查它的测试',
    failed: '无法加载本章：{0}', chain_h: '能力链', concepts_h: '概念校准',
    principles_h: '先看整体', groups_h: '按职责分组的目录', sees: '模型能看到', never: '模型永远看不到',
    files: '个文件', stage: '阶段',
  },
};

let lang = currentLang();
let chapterPromise = null;

/// The chapter file, fetched once and shared with lab.js.
export function chapterData() {
  if (!chapterPromise) chapterPromise = api('/course/chapter');
  return chapterPromise;
}

export function ui(key, ...args) {
  return (UI[lang][key] || key).replace(/\{(\d)\}/g, (_, i) => String(args[Number(i)]));
}

// A source or test link opens its file in the source browser, which scrolls into view.
function sourceLink(path, label) {
  const a = el('a', { href: `#source=${path}`, class: 'chapter-src mono', 'data-path': path, text: label || path });
  a.addEventListener('click', (e) => { e.preventDefault(); openFile(path); $('source-card').scrollIntoView({ behavior: 'smooth' }); });
  return a;
}

function table(t) {
  return el('table', { class: 'chapter-table' },
    el('thead', {}, el('tr', {}, ...t.head.map((h) => el('th', { text: h })))),
    el('tbody', {}, ...t.rows.map((r) => el('tr', {}, ...r.map((c) => el('td', { text: c }))))));
}

function noteBody(section) {
  const text = section[lang];
  const body = el('div', { class: 'chapter-body' }, ...text.body.map((p) => el('p', { text: p })));
  if (text.table) body.append(table(text.table));
  if (section.code) body.append(el('pre', { class: 'guide-code', 'data-testid': 'chapter-code', text: section.code }));
  const links = [...(section.sources || []).map((p) => sourceLink(p))];
  const tests = (section.tests || []).map((t) => { const [file, name] = t.split('::'); return sourceLink(file, name); });
  if (links.length) body.append(el('p', { class: 'small' }, `${ui('open_source')}: `, ...links.flatMap((l) => [l, ' '])));
  if (tests.length) body.append(el('p', { class: 'small', 'data-testid': 'chapter-tests' }, `${ui('tests')}: `, ...tests.flatMap((l) => [l, ' '])));
  return body;
}

function note(section, open) {
  const d = el('details', { class: 'chapter-note', id: `chapter-${section.id}`, 'data-testid': 'chapter-note', 'data-section': section.id },
    el('summary', {}, el('span', { class: 'sec-num', text: `§${section.id}` }), ' ', section[lang].title), noteBody(section));
  d.open = open;
  return d;
}

// Notes are grouped per anchor in one box: inside a card, or right after the anchor's row.
function placeNotes(sections, openIds) {
  for (const box of document.querySelectorAll('.chapter-notes')) box.remove();
  const byAnchor = new Map();
  for (const s of sections) byAnchor.set(s.anchor, [...(byAnchor.get(s.anchor) || []), s]);
  for (const [anchor, list] of byAnchor) {
    const target = $(anchor);
    if (!target) continue;
    const box = el('div', { class: 'chapter-notes', 'data-anchor': anchor }, ...list.map((s) => note(s, openIds.has(s.id))));
    if (target.tagName === 'SECTION') target.append(box);
    else (target.closest('.row, .run-head, .source') || target).after(box);
  }
}

function renderCard(data) {
  const card = $('chapter-card');
  const intro = data.intro[lang];
  const index = el('ol', { class: 'chapter-index', 'data-testid': 'chapter-index' }, ...data.sections.map((s) => {
    const a = el('a', { href: `#chapter-${s.id}`, 'data-section': s.id, text: s[lang].title });
    a.addEventListener('click', (e) => {
      e.preventDefault();
      const n = $(`chapter-${s.id}`);
      if (n) { n.open = true; n.scrollIntoView({ behavior: 'smooth', block: 'center' }); }
    });
    return el('li', { value: s.id }, a, el('span', { class: 'muted small', text: ` · ${ui('beside')} #${s.anchor}` }));
  }));
  card.replaceChildren(el('h2', {}, el('span', { class: 'sec-num', text: '§' }), ' ', intro.title),
    ...intro.body.map((p) => el('p', { class: 'hint', text: p })),
    el('details', { class: 'chapter-toc' }, el('summary', { text: `${ui('index_h')} (1–${data.sections.length})` }), index));
}

function navLine(en, labels) {
  return el('p', { class: 'small nav-line', 'data-testid': 'nav-line' },
    ...['layer', 'depends_on', 'provides', 'constrained_by'].flatMap((k, i) => [i ? ' · ' : '', el('b', { text: `${labels[k]}: ` }), en[k]]));
}

function renderFrame(data) {
  const f = data.frame;
  const labels = f.labels[lang];
  const chain = el('ol', { class: 'capability-chain', 'data-testid': 'capability-chain' }, ...f.chain.map((c) =>
    el('li', { 'data-stage': c.stage }, el('b', { text: `${ui('stage')} ${c.stage}` }), ` — ${c[lang].capability}`, navLine(c[lang], labels))));
  const concepts = el('div', { class: 'concepts', 'data-testid': 'concepts' }, ...f.concepts.map((c) => {
    const t = c[lang];
    return el('div', { class: 'concept', 'data-concept': c.key }, el('h4', { text: t.name }),
      el('dl', {}, ...['is', 'is_not', 'neighbours', 'in_forge', 'misuse', 'fix'].flatMap((k) => [el('dt', { text: labels[k] }), el('dd', { text: t[k] })])));
  }));
  $('course-frame').replaceChildren(el('h2', { text: f[lang].title }), ...f[lang].body.map((p) => el('p', { class: 'hint', text: p })),
    el('h3', { text: ui('chain_h') }), chain, el('h3', { text: ui('concepts_h') }), concepts);
}

// The directories by role, with their files as tags once the source browser has its manifest.
function groupTags(group) {
  const files = (S.manifest && S.manifest.files) || [];
  const mine = files.filter((f) => group.prefixes.some((p) => f.path.startsWith(p)));
  const tags = el('div', { class: 'file-tags' }, ...mine.map((f) => sourceLink(f.path, f.path)));
  return el('div', { class: 'role-group', 'data-testid': 'role-group', 'data-count': mine.length },
    el('b', { text: group[lang].title }), ` · ${mine.length} ${ui('files')} · `, el('span', { class: 'muted', text: group[lang].text }), tags);
}

function renderOrientation(data) {
  const o = data.orientation;
  const b = o.boundary[lang];
  $('source-orientation').replaceChildren(
    el('h3', { text: ui('principles_h') }),
    el('div', { class: 'principles', 'data-testid': 'principles' }, ...o.principles.map((p) =>
      el('div', { class: 'principle' }, el('b', { text: p[lang].title }), el('p', { class: 'small', text: p[lang].text })))),
    el('h3', { text: b.title }),
    el('div', { class: 'boundary', 'data-testid': 'data-boundary' },
      el('div', {}, el('b', { text: ui('sees') }), el('ul', {}, ...b.sees.map((x) => el('li', { text: x })))),
      el('div', { class: 'never' }, el('b', { text: ui('never') }), el('ul', {}, ...b.never.map((x) => el('li', { text: x }))))),
    el('details', { class: 'role-groups', 'data-testid': 'role-groups', open: true }, el('summary', { text: ui('groups_h') }), ...o.groups.map(groupTags)));
}

let DATA = null;

function renderAll() {
  if (!DATA) return;
  const openIds = new Set([...document.querySelectorAll('.chapter-note[open]')].map((d) => Number(d.dataset.section)));
  renderCard(DATA);
  placeNotes(DATA.sections, openIds);
  renderFrame(DATA);
  renderOrientation(DATA);
}

async function start() {
  const r = await chapterData();
  if (!r.ok) {
    $('chapter-card').replaceChildren(el('p', { class: 'errors', text: ui('failed', `${r.status} ${r.body && r.body.code}`) }));
    return;
  }
  DATA = r.body;
  renderAll();
  // The role groups count the manifest's files, which the source browser loads on its own schedule.
  let tries = 0;
  const waitManifest = setInterval(() => {
    tries += 1;
    if (S.manifest || tries > 200) { clearInterval(waitManifest); if (S.manifest && !S.manifest.error) renderOrientation(DATA); }
  }, 300);
}

onLangChange((l) => { lang = l; renderAll(); });
start();
