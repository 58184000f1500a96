// Forge runner page: polls the runner it was served from (same loopback origin) and shows only what
// the runner reports. It never invents a decision, a status or a metric: without data it says "not run".
// This module holds the model, task and run panels and starts the page; the other panels are modules of their own.
import { renderChart } from './chart.js';
import { $, api, el, humanBytes, humanCount, pct } from './dom.js';
import { t } from './i18n.js';
import { setLang } from './lang.js';
import { followRun, loadChain, loadManifest, openFile, renderFollowRuns, renderManifest } from './sources.js';
import { S, TERMINAL } from './state.js';
import { renderMeters, renderStages, renderTimeline } from './timeline.js';
import { renderWritten } from './written.js';

// The budget form is built from GET /agent/schema (field, range, default); nothing is hard-coded here.
let BUDGET_FIELDS = [];

function applyLang() {
  document.documentElement.lang = S.lang === 'zh' ? 'zh-CN' : 'en';
  for (const e of document.querySelectorAll('[data-i18n]')) e.textContent = t(e.dataset.i18n);
  $('lang-toggle').textContent = S.lang === 'zh' ? 'English' : '中文';
  renderAll();
  renderTimeline(true); // re-labels the rows (renderAll only appends new ones)
}

// ---------- runner status and model ----------
async function loadStatus() {
  try {
    const r = await api('/status');
    S.runnerUp = r.ok; S.status = r.ok ? r.body : null;
  } catch (_) { S.runnerUp = false; S.status = null; }
  const badge = $('runner-badge');
  if (S.runnerUp) {
    badge.textContent = `${t('runner_ok')} v${S.status.version} · queue ${S.status.queue.length}/${S.status.queue.capacity}`;
    badge.className = 'badge badge-ok';
    if (S.status.test_policies_enabled && !$('policy').querySelector('option[value=scripted]')) {
      $('policy').append(el('option', { value: 'scripted', 'data-i18n': 'policy_scripted', text: t('policy_scripted') }));
      $('policy-row').hidden = false;
    }
  } else {
    badge.textContent = t('runner_down'); badge.className = 'badge badge-bad';
  }
  updateStartButton();
}

// The models the runner lists (GET /agent/models); the picker offers exactly these.
async function loadModels() {
  const r = await api('/agent/models').catch(() => ({ ok: false }));
  S.models = r.ok ? r.body.models : [];
  const picker = $('model-picker');
  const keep = picker.value;
  picker.replaceChildren();
  if (!S.models.length) picker.append(el('option', { value: '', text: t('model_runner_default') }));
  for (const m of S.models) {
    const facts = [m.quantization, m.parameters ? humanCount(m.parameters) : null, humanBytes(m.bytes)].filter(Boolean).join(' · ');
    picker.append(el('option', { value: m.name, text: `${m.name}${m.default ? ` (${t('model_default')})` : ''} — ${facts}` }));
  }
  const def = S.models.find((m) => m.default);
  if (keep && S.models.some((m) => m.name === keep)) picker.value = keep;
  else if (def) picker.value = def.name;
  $('model-list-note').textContent = S.models.length ? `${S.models.length} ${t('models_count')}` : t('models_none');
}

async function inspectModel() {
  const model = $('model-picker').value;
  // A slower, older inspection (e.g. the default model's at page load) must not overwrite a newer choice.
  const ticket = (S.inspectTicket = (S.inspectTicket || 0) + 1);
  S.inspected = null;
  $('model-state').textContent = t('inspecting');
  $('model-state').className = 'state-line';
  try {
    const r = await api('/models/inspect', { json: model ? { model } : {} });
    if (ticket !== S.inspectTicket) return;
    if (r.ok && r.body && r.body.ok) { S.modelOk = true; S.modelFacts = r.body.model; S.modelError = null; S.inspected = model; }
    else { S.modelOk = false; S.modelFacts = null; S.modelError = r.body || { code: String(r.status), message: '' }; }
  } catch (e) {
    if (ticket !== S.inspectTicket) return;
    S.modelOk = false; S.modelFacts = null; S.modelError = { code: 'runner_unreachable', message: String(e) };
  }
  renderModel();
}


// The inspected facts as labelled, formatted fields (never raw JSON).
function modelFields(f) {
  const yn = (b) => (b ? t('yes') : t('no'));
  const m = f.manifest || null; const rt = f.runtime || null;
  return [
    ['f_name', f.model_name], ['f_file', f.file_name], ['f_size', f.bytes ? `${humanBytes(f.bytes)} (${f.bytes} bytes)` : null],
    ['f_sha256', f.sha256], ['f_sha256_source', f.sha256_source], ['f_architecture', f.architecture],
    ['f_parameters', f.parameter_count ? `${humanCount(f.parameter_count)} (${f.parameter_count})${f.size_label ? ` · ${f.size_label}` : ''}` : null],
    ['f_quantization', f.quantization], ['f_context', f.context_length], ['f_template', f.chat_template_present === undefined ? null : yn(f.chat_template_present)],
    ['f_gguf', f.gguf_version], ['f_tensors', f.tensor_count],
    ['f_fetched', m && m.fetched_at], ['f_source', m && m.source], ['f_packages', m && m.packages && m.packages.join(', ')],
    ['f_manifest_ok', m ? yn(m.sha256_matches) : null],
    ['f_runtime', rt && rt.bindings], ['f_system', rt && rt.system_info],
    ['f_used', f.used_for_runs === undefined ? null : yn(f.used_for_runs)],
  ].filter(([, v]) => v !== null && v !== undefined && v !== '');
}

async function unloadModel() {
  const r = await api('/models/unload', { method: 'POST' });
  $('model-state').textContent = r.ok ? t('unloaded') : `${r.body && r.body.code}: ${r.body && r.body.message}`;
}

function renderModel() {
  const state = $('model-state'); const facts = $('model-facts');
  facts.replaceChildren();
  if (S.modelOk) {
    state.textContent = t('model_ok'); state.className = 'state-line ok';
    for (const [k, v] of modelFields(S.modelFacts || {})) {
      facts.append(el('tr', { 'data-field': k }, el('th', { text: t(k) }), el('td', { class: 'mono', text: String(v) })));
    }
  } else if (S.modelError) {
    state.textContent = `${t('model_failed')}: ${S.modelError.code} — ${S.modelError.message}`;
    state.className = 'state-line bad';
  }
  updateStartButton();
}

function usingScripted() { return $('policy').value === 'scripted'; }

function updateStartButton() {
  const active = S.runId && S.runStatus && !TERMINAL.includes(S.runStatus);
  // A model run starts only on the model that was inspected (the picker may have moved since).
  const inspectedNow = S.modelOk && S.inspected === $('model-picker').value;
  $('start-btn').disabled = !S.runnerUp || !(inspectedNow || usingScripted()) || !$('task-picker').value;
  $('cancel-btn').disabled = !active;
}

// ---------- tasks ----------
// Read on every call: a folder added while the runner serves shows up the next time the picker opens.
async function loadTasks() {
  const r = await api('/agent/tasks');
  if (!r.ok) {
    // Keep the list already shown; say why it could not be refreshed.
    const b = r.body || {};
    $('task-broken').replaceChildren(el('div', { class: 'errors', 'data-testid': 'tasks-error', text: `${t('tasks_failed')}: ${r.status || ''} ${b.code || ''} ${b.message || ''}`.trim() }));
    return;
  }
  S.tasks = r.body.tasks; S.defaultTask = r.body.default_task;
  const picker = $('task-picker');
  const keep = picker.value;
  const valid = S.tasks.filter((x) => x.status === 'ok');
  // Rebuild the options only when the list changed (rebuilding an open <select> would close it).
  const signature = valid.map((x) => `${x.name}\u0000${x.title}`).join('\u0001');
  if (picker.dataset.signature !== signature) {
    picker.replaceChildren(...valid.map((x) => el('option', { value: x.name, text: `${x.name} — ${x.title}` })));
    picker.dataset.signature = signature;
    if (keep && valid.some((x) => x.name === keep)) picker.value = keep;
    else if (S.defaultTask) picker.value = S.defaultTask;
  }
  const broken = S.tasks.filter((x) => x.status !== 'ok');
  const box = $('task-broken');
  box.replaceChildren();
  if (!valid.length) box.append(el('div', { class: 'errors', text: t('tasks_none') }));
  if (broken.length) {
    box.append(el('details', {}, el('summary', { text: `${broken.length} ${t('tasks_broken')}` }),
      el('ul', {}, ...broken.map((x) => el('li', { 'data-task': x.name }, el('span', { class: 'mono', text: x.name }), ` — ${x.error}`)))));
  }
  renderTask();
}

function renderTask() {
  const box = $('task-details');
  const task = S.tasks.find((x) => x.name === $('task-picker').value);
  if (!task) { box.replaceChildren(); return; }
  const gt = task.ground_truth || {};
  const truth = gt.status === 'loaded'
    ? el('p', { class: 'truth-loaded', text: `✓ ${t('truth_loaded')}` })
    : el('p', { class: 'truth-unavailable', text: `! ${t('truth_unavailable')}: ${gt.reason || ''} ${gt.message || ''}` });
  box.replaceChildren(
    el('p', {}, el('strong', { text: task.title })),
    el('p', { 'data-testid': 'task-text' }, el('span', { class: 'muted', text: `${t('task_text')}: ` }), task.text),
    truth,
    el('p', { class: 'muted', text: `${t('task_knowledge')}:` }),
    ...task.knowledge.map((k) => el('details', { 'data-file': k.file }, el('summary', { class: 'mono', text: `${k.file}${k.bytes ? ` · ${k.bytes} ${t('bytes')}` : ''}` }),
      el('pre', { text: `${k.preview || ''}${k.truncated ? '\n…' : ''}` }))));
  updateStartButton();
}

// ---------- runs ----------
function formBody() {
  const f = $('run-form');
  const body = { task: f.task.value.trim(), mode: f.mode.value, temperature: Number(f.temperature.value), budgets: {} };
  for (const k of BUDGET_FIELDS) {
    const raw = f[k].value.trim();
    // An empty field is left out: the runner fills in its default (null would be refused).
    if (raw !== '') body.budgets[k] = Number(raw);
  }
  if (usingScripted()) body.policy = `scripted:${$('fixture').value.trim()}`;
  else if (S.inspected) body.model = S.inspected;
  return body;
}

async function startRun(ev) {
  ev.preventDefault();
  $('form-errors').replaceChildren();
  for (const i of document.querySelectorAll('.field-bad')) i.classList.remove('field-bad');
  const r = await api('/agent/runs', { json: formBody() });
  if (r.status === 202) {
    selectRun(r.body.id);
    loadHistory();
    return;
  }
  const b = r.body || {};
  const box = $('form-errors');
  box.append(el('div', { text: `${r.status} ${b.code || ''}: ${b.message || ''}` }));
  for (const fe of b.fields || []) {
    const name = fe.field.replace(/^budgets\./, '');
    const input = $('run-form')[name];
    if (input && input.classList) input.classList.add('field-bad');
  }
}

function selectRun(id) {
  if (S.pollTimer) clearTimeout(S.pollTimer);
  S.runId = id; S.events = []; S.result = null; S.runStatus = 'queued';
  history.replaceState(null, '', `#run=${id}`);
  $('trace-link').href = `/agent/runs/${id}/trace`;
  $('trace-link').classList.remove('disabled');
  renderAll();
  poll();
}

function showPollError(r) {
  const box = $('poll-error');
  if (!r) { box.hidden = true; box.replaceChildren(); return; }
  const b = r.body || {};
  box.hidden = false;
  box.replaceChildren(el('div', { text: `${t('poll_failed')} (${r.status} ${b.code || ''}: ${b.message || ''}); ${t('retrying')}` }));
}

async function poll() {
  const id = S.runId;
  if (!id) return;
  const after = S.events.length ? S.events[S.events.length - 1].seq : 0;
  const r = await api(`/agent/runs/${id}?after_seq=${after}`);
  if (id !== S.runId) return;
  if (r.ok) {
    S.pollFailures = 0;
    showPollError(null);
    for (const e of r.body.events) {
      // Keep only the next contiguous event; anything else is re-requested on the next poll.
      const last = S.events.length ? S.events[S.events.length - 1].seq : 0;
      if (e.seq === last + 1) S.events.push(e);
    }
    S.runStatus = r.body.status;
    S.result = r.body.terminal ? r.body.result : null;
    renderAll();
    if (r.body.terminal && S.events.length >= r.body.last_seq) { loadHistory(); loadStatus(); return; }
  } else if (r.status === 404) {
    S.runId = null; S.runStatus = null; showPollError(r); renderAll(); return;
  } else {
    // Back off (0.8 s, 1.6 s, … up to 10 s) and say so, instead of hammering a runner that is down.
    S.pollFailures += 1;
    showPollError(r);
  }
  const delay = S.pollFailures ? Math.min(10_000, 400 * 2 ** S.pollFailures) : 400;
  S.pollTimer = setTimeout(poll, delay);
}

async function cancelRun() {
  if (!S.runId) return;
  const r = await api(`/agent/runs/${S.runId}/cancel`, { method: 'POST' });
  if (!r.ok) $('form-errors').replaceChildren(el('div', { text: `${r.status} ${r.body && r.body.code}: ${r.body && r.body.message}` }));
  else $('stop-reason').textContent = t('cancel_requested');
}

async function loadHistory() {
  const r = await api('/agent/runs?limit=20');
  const list = $('history');
  list.replaceChildren();
  if (!r.ok) {
    renderFollowRuns([]);
    const b = r.body || {};
    list.append(el('li', { class: 'errors', 'data-testid': 'history-error', text: `${r.status} ${b.code || ''}: ${b.message || ''}` }));
    return;
  }
  renderFollowRuns(r.body.runs);
  if (!r.body.runs.length) { list.append(el('li', { class: 'muted', text: t('history_empty') })); return; }
  for (const run of r.body.runs) {
    const a = el('a', { href: `#run=${run.id}`, class: 'mono', text: run.id });
    a.addEventListener('click', (e) => { e.preventDefault(); selectRun(run.id); });
    list.append(el('li', {}, a, ' ', el('span', { class: `badge badge-${run.status}`, text: t(run.status) }),
      ' ', el('span', { class: 'muted', text: `${run.stop_reason || ''} · ${run.policy || ''} · ${run.events} ev` }),
      run.task ? ' · ' : null, run.task ? taskLink(run.task) : null));
  }
}

// A run's task, linked to its task.json in the source browser below.
function taskLink(task) {
  const path = `fixtures/tasks/${task}/task.json`;
  const a = el('a', { href: '#source-card', class: 'mono', 'data-testid': 'run-task', title: path, text: task });
  a.addEventListener('click', () => openFile(path));
  return a;
}


// The budget inputs, from the runner's own fields, ranges and defaults (GET /agent/schema).
async function loadBudgetForm() {
  const r = await api('/agent/schema');
  const box = $('budget-fields');
  if (!r.ok || !r.body.budgets) {
    const b = r.body || {};
    box.replaceChildren(el('div', { class: 'errors', text: `${t('schema_failed')}: ${r.status} ${b.code || ''} ${b.message || ''}` }));
    return;
  }
  const defaults = r.body.budgets.defaults || {};
  BUDGET_FIELDS = r.body.budgets.ranges.map((x) => x.field);
  box.replaceChildren(...r.body.budgets.ranges.map(({ field, min, max }) => el('label', {},
    el('span', { 'data-i18n': field, text: t(field) }),
    el('input', { name: field, type: 'number', min, max, value: defaults[field], placeholder: defaults[field], 'data-testid': `budget-${field}` }))));
}

function renderMetrics() {
  const m = S.result ? S.result.metrics : undefined;
  const noRun = !S.result;
  const v = (f) => (noRun ? t('not_run') : (m === null || m === undefined ? t('na') : f(m)));
  const orNa = (x) => (x === null || x === undefined ? t('na') : x);
  const cards = [
    ['task_success', () => v((m) => orNa(m.task_success === null ? null : (m.task_success ? t('pass') : t('fail'))))],
    ['valid_action_rate', () => v((m) => orNa(pct(m.valid_action_rate)))],
    ['tool_argument_accuracy', () => v((m) => orNa(pct(m.tool_argument_accuracy)))],
    ['recovery_rate', () => v((m) => orNa(pct(m.recovery_rate)))],
    ['loop_rate', () => v((m) => orNa(pct(m.loop_rate)))],
    ['termination_correctness', () => v((m) => orNa(m.termination_correctness === null ? null : (m.termination_correctness ? t('pass') : t('fail'))))],
    ['steps', () => (noRun ? '—' : (m ? m.steps : (S.result.steps ?? t('na'))))],
    ['latency', () => v((m) => `${m.model_latency_ms} / ${m.tool_latency_ms} / ${m.total_latency_ms} ms`)],
    ['tokens', () => v((m) => `${m.input_tokens} / ${m.output_tokens}`)],
    ['cost', () => v((m) => (typeof m.cost_units === 'number' ? m.cost_units.toFixed(3) : t('na')))],
    ['forced_share', () => v((m) => forcedShare(m))],
  ];
  $('metrics').replaceChildren(...cards.map(([k, f]) => el('div', { class: 'metric', 'data-metric': k },
    el('div', { class: 'metric-name', text: t(`m_${k}`) }), el('div', { class: 'metric-value', text: String(f()) }),
    el('div', { class: 'metric-desc', text: t(`m_${k}_d`) }))));
}

// The run's forced share with its counts; unknown (with how many decisions) when a server generated.
function forcedShare(m) {
  const counts = `${m.forced_tokens ?? 0} / ${(m.forced_tokens ?? 0) + (m.choice_tokens ?? 0)}`;
  if (typeof m.forced_share === 'number') return `${pct(m.forced_share)} (${counts})`;
  if (m.share_unknown_decisions) return `${t('share_unknown')} (${m.share_unknown_decisions})`;
  return t('na');
}

// What the claims gate verified of the accepted answer: its status, then each claim (verified, how; or
// unverified, why). An abstention is shown as such, never as a plain success.
function verificationView(v) {
  const box = el('div', { class: 'verification', id: 'verification' });
  if (!v) return box;
  box.dataset.status = v.status;
  box.append(el('div', { class: `badge badge-verification-${v.status}`, text: `${t('verification')}: ${t('verification_' + v.status)}` }));
  const list = el('ul', { class: 'claims small' });
  for (const c of v.claims || []) {
    list.append(el('li', { class: `claim claim-${c.status}`, text: `${c.part} = ${c.stated} — ${t('claim_' + c.status)}: ${c.detail}` }));
  }
  box.append(list);
  return box;
}

function renderRunHead() {
  const st = $('run-status');
  st.textContent = S.runStatus ? t(S.runStatus) : t('not_run');
  st.className = `badge badge-${S.runStatus || 'idle'}`;
  st.dataset.status = S.runStatus || 'idle';
  $('run-id').textContent = S.runId || '';
  $('stop-reason').textContent = S.result ? `stop_reason = ${S.result.stop_reason}` : '';
  const fin = $('final');
  if (S.result && S.result.final_answer) {
    fin.hidden = false;
    fin.replaceChildren(el('strong', { text: `${t('final_answer')}: ` }), S.result.final_answer,
      el('div', { class: 'muted small', text: `${t('evidence')}: ${(S.result.evidence_ids || []).join(', ')}` }),
      verificationView(S.result.verification));
  } else if (S.result && S.result.error) {
    fin.hidden = false;
    fin.replaceChildren(el('strong', { text: `${S.result.error.code}: ` }), S.result.error.message || '');
  } else { fin.hidden = true; fin.replaceChildren(); }
}

function renderAll() {
  renderRunHead(); renderStages(); renderMeters(); renderTimeline(); renderWritten(); renderMetrics(); renderChart(); renderModel(); renderManifest();
  updateStartButton();
}

// ---------- start ----------
function init() {
  $('lang-toggle').addEventListener('click', () => {
    S.lang = S.lang === 'en' ? 'zh' : 'en'; applyLang();
    // The course and evaluation panels follow the same toggle.
    setLang(S.lang);
  });
  $('inspect-btn').addEventListener('click', inspectModel);
  $('unload-btn').addEventListener('click', unloadModel);
  $('run-form').addEventListener('submit', startRun);
  $('cancel-btn').addEventListener('click', cancelRun);
  $('policy').addEventListener('change', updateStartButton);
  $('model-picker').addEventListener('change', () => { S.modelOk = false; inspectModel(); });
  $('task-picker').addEventListener('change', renderTask);
  $('task-picker').addEventListener('focus', loadTasks);
  $('follow-run').addEventListener('change', (e) => followRun(e.target.value));
  applyLang();
  loadBudgetForm();
  loadTasks();
  loadStatus().then(() => loadModels()).then(() => { if (S.runnerUp) inspectModel(); });
  // The chain first, so the tree and the followed events show their stages when they appear.
  loadManifest().then(loadChain).then(loadHistory);
  const m = location.hash.match(/run=(run-[0-9a-z-]+)/);
  if (m) selectRun(m[1]);
  setInterval(loadStatus, 5000);
}

document.addEventListener('DOMContentLoaded', init);
