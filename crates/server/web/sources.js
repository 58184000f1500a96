// The source browser: the example's file tree and manifest, one file with its role, its place in the chain and its
// items, and "follow one decision" (a finished run's events, each linked to the files that produced it).
import { $, api, el } from './dom.js';
import { t } from './i18n.js';
import { S, TERMINAL } from './state.js';
import { phaseClass, summarize } from './timeline.js';

// ---------- source browser ----------
export async function loadManifest() {
  try {
    const r = await api('/example/manifest');
    S.manifest = r.ok ? r.body : { error: r.body };
  } catch (e) { S.manifest = { error: { code: 'runner_unreachable', message: String(e) } }; }
  renderManifest(); renderTree();
}

export function renderManifest() {
  const line = $('manifest-line');
  if (!S.manifest) return;
  if (S.manifest.error) { line.textContent = `${t('manifest_failed')}: ${S.manifest.error.code}`; return; }
  const m = S.manifest;
  line.replaceChildren(`${m.file_count} ${t('files')} · ${m.bytes} ${t('bytes')} · ${t('tree_hash')} ${m.tree_blake3.slice(0, 16)}… · `,
    el('a', { href: m.zip.download_path, download: `${m.root_folder}.zip`, 'data-testid': 'zip-link', text: `${t('download_zip')} (${m.zip.bytes} ${t('bytes')}, blake3 ${m.zip.blake3.slice(0, 12)}…)` }));
}

function renderTree() {
  const root = $('file-tree');
  root.replaceChildren();
  if (!S.manifest || !S.manifest.files) return;
  const tree = {};
  for (const f of S.manifest.files) {
    const parts = f.path.split('/'); let node = tree;
    for (const p of parts.slice(0, -1)) node = (node[p + '/'] = node[p + '/'] || {});
    node[parts[parts.length - 1]] = f;
  }
  const build = (node, depth) => {
    const ul = el('ul', {});
    for (const key of Object.keys(node).sort((a, b) => (b.endsWith('/') - a.endsWith('/')) || a.localeCompare(b))) {
      const v = node[key];
      if (key.endsWith('/')) {
        const d = el('details', depth < 1 ? { open: true } : {}, el('summary', { text: key }), build(v, depth + 1));
        ul.append(el('li', {}, d));
      } else {
        const stage = chainStage(v.stage);
        const a = el('a', { href: '#', 'data-path': v.path, 'data-role': v.role || '', 'data-stage': v.stage || '',
          title: [v.role, stage && `${t('chain_place')}: ${stage.title}`].filter(Boolean).join('\n'), text: key });
        a.addEventListener('click', (e) => { e.preventDefault(); openFile(v.path); });
        ul.append(el('li', {}, a));
      }
    }
    return ul;
  };
  root.append(...build(tree, 0).childNodes);
}

export async function openFile(path) {
  const r = await api(`/example/file?path=${encodeURIComponent(path)}`);
  const head = $('file-head'); const pre = $('file-content');
  if (!r.ok) { head.textContent = `${r.status} ${r.body && r.body.code}`; pre.textContent = r.body ? r.body.message : ''; return; }
  const f = r.body;
  head.replaceChildren(`${f.path} · ${f.bytes} ${t('bytes')} · blake3 ${f.blake3} · `, el('a', { href: f.download_path, text: t('download') }));
  const role = $('file-role');
  role.hidden = !f.role;
  role.className = `file-role ${f.role_source === 'generic' ? 'generic' : ''}`;
  role.replaceChildren(el('span', { class: 'muted small', text: `${t(f.role_source === 'generic' ? 'role_generic' : 'role_file')}: ` }), f.role || '');
  renderFileChain(f.stage);
  renderItems(f.items || []);
  // One span per line, so an item can scroll its line into view (line numbers are CSS, not text).
  if (f.binary) pre.textContent = t('binary_file');
  else pre.replaceChildren(...f.content.split('\n').map((line, i) => el('span', { class: 'ln', 'data-line': i + 1, text: `${line}\n` })));
  pre.scrollTop = 0;
}

// ---------- the chain: one table (GET /example/chain, from crates/server/chain.toml) ----------
export async function loadChain() {
  const r = await api('/example/chain').catch(() => ({ ok: false }));
  S.chain = r.ok ? r.body : null;
  renderTree();
}

function chainStage(id) {
  return (S.chain && id && S.chain.stages.find((s) => s.id === id)) || null;
}

// The chain as a strip with the file's stage lit; a support file is said to be outside it.
function renderFileChain(stageId) {
  const strip = $('file-chain');
  strip.hidden = !S.chain;
  if (!S.chain) return;
  const stage = chainStage(stageId);
  strip.dataset.stage = stageId || '';
  strip.replaceChildren(el('li', { class: 'chain-label muted small', text: `${t('chain_place')}:` }),
    ...S.chain.stages.filter((s) => s.chain).map((s) =>
      el('li', { class: `chain-stage${s.id === stageId ? ' on' : ''}`, 'data-stage': s.id, title: s.summary, text: s.title })));
  const note = stage ? (stage.chain ? stage.summary : `${t('chain_support')} — ${stage.summary}`) : t('chain_none');
  strip.append(el('li', { class: 'chain-note small', 'data-testid': 'file-stage-note', text: note }));
}

function renderItems(items) {
  const box = $('file-items');
  box.hidden = false;
  if (!items.length) { box.replaceChildren(el('span', { class: 'muted small', text: t('items_none') })); return; }
  box.replaceChildren(el('div', { class: 'muted small', text: t('items_h') }),
    el('ul', {}, ...items.map((it) => {
      const b = el('button', { type: 'button', class: 'item', 'data-line': it.line, 'data-name': it.name, title: it.signature },
        el('span', { class: 'kind', text: it.kind }), ' ', it.parent ? `${it.parent.replace(/^impl /, '')}::` : '', el('strong', { text: it.name }),
        el('span', { class: 'muted', text: ` L${it.line}` }));
      b.addEventListener('click', () => gotoLine(it.line));
      return el('li', {}, b);
    })));
}

function gotoLine(n) {
  const pre = $('file-content');
  for (const h of pre.querySelectorAll('.ln.hit')) h.classList.remove('hit');
  const line = pre.querySelector(`.ln[data-line="${n}"]`);
  if (!line) return;
  line.classList.add('hit');
  pre.scrollTop = Math.max(0, line.offsetTop - pre.clientHeight / 3);
}

// ---------- follow one decision: a finished run's events, each linked to its files ----------
export function renderFollowRuns(runs) {
  const picker = $('follow-run');
  const keep = picker.value;
  const done = runs.filter((r) => TERMINAL.includes(r.status));
  picker.replaceChildren(...done.map((r) => el('option', { value: r.id, text: `${r.id} · ${r.status}/${r.stop_reason || ''} · ${r.task || ''}` })));
  if (!done.length) {
    $('follow-events').replaceChildren(el('li', { class: 'muted', text: t('follow_none') }));
    return;
  }
  // The run on screen when it has finished, else the one already chosen, else the newest.
  const want = [S.runId, keep].find((id) => id && done.some((r) => r.id === id)) || done[0].id;
  picker.value = want;
  if (!S.follow || S.follow.id !== want) followRun(want);
}

export async function followRun(id) {
  const list = $('follow-events');
  const r = await api(`/agent/runs/${encodeURIComponent(id)}/follow`);
  if (!r.ok) { S.follow = null; list.replaceChildren(el('li', { class: 'errors', text: `${t('follow_failed')}: ${r.status} ${r.body && r.body.code}` })); return; }
  S.follow = r.body;
  list.dataset.run = id;
  list.replaceChildren(...r.body.events.map((e) => {
    const stage = chainStage(e.stage);
    const files = e.files.map((path) => {
      const a = el('a', { href: '#source-card', class: 'mono small', 'data-testid': 'follow-file', 'data-path': path, text: path.replace(/^crates\//, '') });
      a.addEventListener('click', (ev) => { ev.preventDefault(); openFile(path); $('source-card').scrollIntoView(); });
      return a;
    });
    const links = [];
    files.forEach((a, i) => { if (i) links.push(' · '); links.push(a); });
    return el('li', { class: `follow-event ${phaseClass(e.phase)}`, 'data-seq': e.seq, 'data-phase': e.phase, 'data-stage': e.stage || '' },
      el('span', { class: 'mono', text: `#${e.seq} ${e.phase}` }), ' ',
      el('span', { class: 'chain-stage on', title: stage ? stage.summary : '', text: stage ? stage.title : t('chain_none') }), ' ',
      el('span', { class: 'muted small', text: summarize(e.data) }),
      el('div', { class: 'follow-files' }, ...links));
  }));
}
