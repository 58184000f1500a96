// Forge runner page: polls the runner it was served from (same loopback origin) and shows only what
// the runner reports. It never invents a decision, a status or a metric: without data it says "not run".
'use strict';

const I18N = {
  en: {
    title: 'Forge · local ReAct runner',
    subtitle: 'A local model proposes one decision per step; the runtime validates, runs tools, feeds observations back and decides when to stop.',
    model_h: 'Model', model_hint: 'Choose one of the runner\'s verified models and inspect it. A run uses exactly the model inspected here; if inspection fails, starting is disabled — there is no fallback policy.',
    model_pick: 'Model', inspect: 'Inspect', unload: 'Unload', model_runner_default: '(runner default model)',
    models_none: 'No verified model is listed (cargo xtask model fetch, or runner serve --gguf FILE); the runner default is inspected instead.',
    models_count: 'verified models listed by the runner', model_default: 'default',
    f_name: 'Name', f_file: 'File', f_size: 'Size', f_sha256: 'SHA-256', f_sha256_source: 'Hash from', f_architecture: 'Architecture',
    f_parameters: 'Parameters', f_quantization: 'Quantization', f_context: 'Context length', f_template: 'Chat template',
    f_gguf: 'GGUF version', f_tensors: 'Tensors', f_fetched: 'Fetched at', f_source: 'Source', f_packages: 'Packages',
    f_manifest_ok: 'Manifest hash', f_runtime: 'llama.cpp', f_system: 'System', f_used: 'Used for runs', yes: 'yes', no: 'no',
    task_text: 'What the task asks', task_knowledge: 'Knowledge files', truth_loaded: 'ground truth loaded (expected.json) — runs are scored',
    truth_unavailable: 'no usable ground truth — runs are not scored', tasks_broken: 'folders that do not load',
    tasks_none: 'No task folder loads.', tasks_failed: 'Could not read the task list', chart_svg_h: 'Drawn from the plot spec', chart_png_h: 'PNG artifact', chart_average: 'average',
    not_checked: 'Not checked yet.', inspecting: 'Inspecting…', model_ok: 'Model inspected: ready to run.',
    model_failed: 'Inspection failed — start is disabled', unloaded: 'Model unloaded from the runner cache.',
    task_h: 'Task and budgets', task: 'Task', mode: 'Mode', mode_guided: 'guided', mode_free: 'free', temperature: 'Temperature',
    max_steps: 'Steps', max_tool_calls: 'Tool calls', wall_clock_s: 'Wall clock (s)', max_input_tokens: 'Input tokens',
    max_output_tokens: 'Output tokens', max_retries: 'Retries', repeated_action_limit: 'Repeat limit', no_progress_limit: 'No-progress limit',
    policy: 'Policy (test mode)', policy_model: 'model', policy_scripted: 'scripted fixture',
    start: 'Start run', cancel: 'Cancel', export: 'Export trace',
    run_h: 'Run', not_run: 'not run', legend: '✓ reached · ● in progress · ! attempted but failed · ○ not reached',
    timeline_h: 'Timeline', timeline_empty: 'Decision summary → Action → Observation → next state appear here once a real run starts.',
    metrics_h: 'Metrics of this run', chart_h: 'Chart', chart_empty: 'The plot tool\'s PNG appears here after a run produced it.',
    source_h: 'Source of this runner', source_hint: 'The file list, each file and the zip all come from one live enumeration of this project\'s tree. Each file\'s role is its own opening line (hover a name, or open it); opening a file shows its public items and its place in the chain.',
    role_file: 'Role (from the file\'s opening line)', role_generic: 'Role (generic: the file has no opening line)',
    chain_place: 'Place in the chain', chain_support: 'outside the chain (support)', chain_none: 'not in the chain map',
    items_h: 'Public items (click to go to the line)', items_none: 'No public items.',
    follow_h: 'Follow one decision', follow_hint: 'Pick a finished run: its trace events in order, each with its place in the chain and links to the code that produced it.',
    follow_none: 'No finished run yet.', follow_pick: 'Run', follow_failed: 'Cannot follow this run',
    manifest_loading: 'Reading the manifest…', history_h: 'Recent runs', history_empty: 'No runs yet.',
    poll_failed: 'Polling the run failed', retrying: 'retrying with back-off', schema_failed: 'Could not read the budget fields from /agent/schema',
    decision_max_new_tokens: 'Decision tokens',
    runner_ok: 'runner', runner_down: 'runner not reachable — not run',
    st_load: 'Load model', st_decision: 'Decision', st_validate: 'Validate', st_tool: 'Tool', st_observation: 'Observation', st_final: 'Final',
    queued: 'queued', running: 'running', completed: 'completed', failed: 'failed', cancelled: 'cancelled', stopped: 'stopped',
    m_task_success: 'Task Success', m_task_success_d: 'checked against expected.json, not self-graded',
    m_valid_action_rate: 'Valid Action Rate', m_valid_action_rate_d: 'valid decisions / proposals',
    m_tool_argument_accuracy: 'Tool/Argument Accuracy', m_tool_argument_accuracy_d: 'right tool and right arguments',
    m_recovery_rate: 'Recovery Rate', m_recovery_rate_d: 'recovered / recoverable errors',
    m_loop_rate: 'Loop Rate', m_loop_rate_d: 'repeated or no-progress actions / proposals',
    m_termination_correctness: 'Termination Correctness', m_termination_correctness_d: 'final only with full evidence; correct stop otherwise',
    m_steps: 'Steps', m_steps_d: 'decision rounds', m_latency: 'Latency', m_latency_d: 'model / tool / total wall clock',
    m_tokens: 'Tokens', m_tokens_d: 'input / output (tokenizer counts)', m_cost: 'Cost', m_cost_d: 'cost units (input + 2×output)/1000, not money',
    na: 'N/A', pass: 'PASS', fail: 'FAIL', verification: 'Verification', verification_verified: 'verified', verification_partial: 'partial (abstains on unverified claims)', verification_unverified: 'unverified (abstains)', claim_verified: 'verified', claim_unverified: 'unverified', final_answer: 'Final answer', evidence: 'evidence',
    files: 'files', bytes: 'bytes', tree_hash: 'tree blake3', download_zip: 'Download zip', download: 'download',
    manifest_failed: 'Manifest unavailable', binary_file: '(binary file)', cancel_requested: 'Cancel requested…',
    step: 'step', attempt: 'attempt', obs_delta: 'observations',
    meter_steps: 'steps', meter_tool_calls: 'tool calls', meter_time: 'time', meter_input: 'input tokens', meter_output: 'output tokens',
  },
  zh: {
    title: 'Forge · 本地 ReAct 运行器',
    subtitle: '本地模型每一步只提出一个决策；运行时负责校验、执行工具、回灌观察结果，并决定何时停止。',
    model_h: '模型', model_hint: '从运行器已验证的模型中选择一个并检查。运行只使用这里检查过的模型；检查失败时无法启动——没有任何兜底策略。',
    model_pick: '模型', inspect: '检查', unload: '卸载', model_runner_default: '（运行器默认模型）',
    models_none: '运行器没有列出已验证的模型（cargo xtask model fetch，或 runner serve --gguf FILE）；改为检查运行器默认模型。',
    models_count: '个已验证模型', model_default: '默认',
    f_name: '名称', f_file: '文件', f_size: '大小', f_sha256: 'SHA-256', f_sha256_source: '哈希来源', f_architecture: '架构',
    f_parameters: '参数量', f_quantization: '量化', f_context: '上下文长度', f_template: '对话模板',
    f_gguf: 'GGUF 版本', f_tensors: '张量数', f_fetched: '获取时间', f_source: '来源', f_packages: '包',
    f_manifest_ok: 'Manifest 哈希', f_runtime: 'llama.cpp', f_system: '系统', f_used: '用于运行', yes: '是', no: '否',
    task_text: '任务要求', task_knowledge: '知识文件', truth_loaded: '已加载标准答案（expected.json）——运行会被评分',
    truth_unavailable: '没有可用的标准答案——运行不评分', tasks_broken: '个无法加载的文件夹',
    tasks_none: '没有可加载的任务文件夹。', tasks_failed: '无法读取任务列表', chart_svg_h: '根据 plot 规格绘制', chart_png_h: 'PNG 产物', chart_average: '平均',
    not_checked: '尚未检查。', inspecting: '正在检查…', model_ok: '模型检查通过：可以运行。',
    model_failed: '检查失败——已禁用启动', unloaded: '已从运行器缓存中卸载模型。',
    task_h: '任务与预算', task: '任务', mode: '模式', mode_guided: '引导 guided', mode_free: '自由 free', temperature: '温度',
    max_steps: '步数', max_tool_calls: '工具调用', wall_clock_s: '墙钟（秒）', max_input_tokens: '输入 token',
    max_output_tokens: '输出 token', max_retries: '重试次数', repeated_action_limit: '重复阈值', no_progress_limit: '无进展阈值',
    policy: '策略（测试模式）', policy_model: '模型', policy_scripted: '脚本夹具',
    start: '开始运行', cancel: '取消', export: '导出 trace',
    run_h: '运行', not_run: '未运行', legend: '✓ 已到达 · ● 进行中 · ! 已尝试但未通过 · ○ 尚未到达',
    timeline_h: '时间线', timeline_empty: '真实运行开始后，这里才会出现 决策摘要 → 动作 → 观察 → 下一状态。',
    metrics_h: '本次运行指标', chart_h: '图表', chart_empty: '运行产生 plot 工具的 PNG 后显示在这里。',
    source_h: '本运行器的源码', source_hint: '文件列表、单个文件与 ZIP 都来自对本项目目录的同一次实时枚举。每个文件的作用取自它自己的首行说明（悬停文件名或打开文件）；打开文件可看到它的公开条目及其在链路中的位置。',
    role_file: '作用（取自文件首行说明）', role_generic: '作用（通用说明：文件没有首行说明）',
    chain_place: '在链路中的位置', chain_support: '链路之外（支撑文件）', chain_none: '未在链路映射中',
    items_h: '公开条目（点击跳到该行）', items_none: '没有公开条目。',
    follow_h: '跟随一次决策', follow_hint: '选择一次已结束的运行：按顺序列出它的追踪事件，标出在链路中的位置，并链接到产生它的代码。',
    follow_none: '还没有已结束的运行。', follow_pick: '运行', follow_failed: '无法跟随此运行',
    manifest_loading: '正在读取 manifest…', history_h: '最近的运行', history_empty: '还没有运行。',
    poll_failed: '轮询运行失败', retrying: '正在退避重试', schema_failed: '无法从 /agent/schema 读取预算字段',
    decision_max_new_tokens: '决策 token 数',
    runner_ok: '运行器', runner_down: '无法连接运行器——未运行',
    st_load: '加载模型', st_decision: '决策', st_validate: '校验', st_tool: '工具', st_observation: '观察', st_final: '最终答案',
    queued: '排队中', running: '运行中', completed: '已完成', failed: '失败', cancelled: '已取消', stopped: '已停止',
    m_task_success: '任务成功', m_task_success_d: '由 expected.json 确定性验收，不由模型自评',
    m_valid_action_rate: '有效动作率', m_valid_action_rate_d: '合法决策 / 全部提议',
    m_tool_argument_accuracy: '工具/参数准确率', m_tool_argument_accuracy_d: '工具与参数同时正确',
    m_recovery_rate: '恢复率', m_recovery_rate_d: '成功恢复 / 可恢复错误',
    m_loop_rate: '循环率', m_loop_rate_d: '重复或无进展动作 / 提议',
    m_termination_correctness: '终止正确性', m_termination_correctness_d: '证据齐全才给最终答案；异常时正确停止',
    m_steps: '步数', m_steps_d: '决策轮数', m_latency: '延迟', m_latency_d: '模型 / 工具 / 总墙钟',
    m_tokens: 'Token', m_tokens_d: '输入 / 输出（分词器统计）', m_cost: '成本', m_cost_d: '成本单位 (输入+2×输出)/1000，不是货币',
    na: '不适用', pass: '通过', fail: '未通过', verification: '核验', verification_verified: '已核验', verification_partial: '部分核验（未核验之处弃答）', verification_unverified: '未核验（弃答）', claim_verified: '已核验', claim_unverified: '未核验', final_answer: '最终答案', evidence: '证据',
    files: '个文件', bytes: '字节', tree_hash: '目录树 blake3', download_zip: '下载 ZIP', download: '下载',
    manifest_failed: '无法读取 manifest', binary_file: '（二进制文件）', cancel_requested: '已请求取消…',
    step: '步', attempt: '尝试', obs_delta: '观察数',
    meter_steps: '步数', meter_tool_calls: '工具调用', meter_time: '时间', meter_input: '输入 token', meter_output: '输出 token',
  },
};

const STAGES = ['load', 'decision', 'validate', 'tool', 'observation', 'final'];
const TERMINAL = ['completed', 'failed', 'cancelled', 'stopped'];
// The budget form is built from GET /agent/schema (field, range, default); nothing is hard-coded here.
let BUDGET_FIELDS = [];

const S = {
  lang: localStorage.getItem('forge.lang') || 'en',
  runnerUp: false, status: null,
  modelOk: false, modelFacts: null, modelError: null, models: [], inspected: null,
  tasks: [], defaultTask: null,
  runId: null, runStatus: null, events: [], result: null, pollTimer: null, pollFailures: 0,
  manifest: null, chain: null, follow: null,
};

const $ = (id) => document.getElementById(id);
const t = (k) => (I18N[S.lang] && I18N[S.lang][k]) || I18N.en[k] || k;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v; else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

async function api(path, opts) {
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

function humanBytes(n) {
  if (typeof n !== 'number' || !n) return null;
  const units = ['B', 'KB', 'MB', 'GB']; let i = 0; let v = n;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function humanCount(n) {
  if (typeof n !== 'number') return null;
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(0)} M`;
  return String(n);
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

// ---------- rendering ----------
function phaseClass(phase) {
  const p = phase.toLowerCase();
  if (/(reject|invalid|error|fail|denied|refus)/.test(p)) return 'bad';
  if (/(retry|repair)/.test(p)) return 'retry';
  if (/guard|loop|no_progress|stop|cancel/.test(p)) return 'warn';
  return 'ok';
}

function stageOf(phase) {
  const p = phase.toLowerCase();
  if (p.startsWith('final') || p.includes('.final')) return 'final';
  if (p.includes('observation')) return 'observation';
  if (p.startsWith('tool') || p.startsWith('action') || p.includes('argument')) return 'tool';
  if (p.startsWith('decision') || p.includes('repair') || p.includes('valid')) return 'validate';
  if (p.startsWith('model.load') || p.startsWith('model.unavailable') || p === 'run.started') return 'load';
  if (p.startsWith('model')) return 'decision';
  return null;
}

function stageStates() {
  const st = Object.fromEntries(STAGES.map((s) => [s, { reached: false, failed: false }]));
  let current = null;
  for (const e of S.events) {
    const s = stageOf(e.phase);
    if (!s) continue;
    current = s;
    if (phaseClass(e.phase) === 'bad') st[s].failed = true;
    else if (!e.phase.endsWith('.started')) st[s].reached = true;
    // An observation is what a finished tool call returns.
    if (s === 'observation' && phaseClass(e.phase) !== 'bad') st.tool.reached = true;
    // A model call that returned means the model was loaded.
    if (s === 'decision' && !e.phase.endsWith('.started')) st.load.reached = true;
  }
  if (S.result) {
    if (S.result.status === 'completed') st.final.reached = true;
    if (S.result.stop_reason === 'model_unavailable') st.load.failed = true;
  }
  const running = S.runStatus === 'running';
  return STAGES.map((s) => {
    let mark = '○', cls = 'todo';
    if (running && s === current && !st[s].reached) { mark = '●'; cls = 'active'; }
    else if (st[s].reached) { mark = '✓'; cls = 'done'; }
    else if (st[s].failed) { mark = '!'; cls = 'failed'; }
    else if (running && s === current) { mark = '●'; cls = 'active'; }
    return { s, mark, cls };
  });
}

function renderStages() {
  const ol = $('stages');
  ol.replaceChildren(...stageStates().map(({ s, mark, cls }) =>
    el('li', { class: `stage ${cls}`, 'data-stage': s, 'data-state': cls }, el('span', { class: 'mark', text: mark }), ' ', t(`st_${s}`))));
}

function summarize(data) {
  if (data === null || data === undefined) return '';
  if (typeof data !== 'object') return String(data);
  const parts = [];
  if (data.gap && data.gap.kind) parts.push(data.gap.kind === 'tool' ? `gap → ${data.gap.tool}: ${data.gap.hint}` : `gap → final (${(data.gap.evidence_ids || []).join(', ')})`);
  if (data.output_blake3) parts.push(`tokens ${data.input_tokens} in / ${data.output_tokens} out · ${data.latency_ms} ms`);
  if (data.observation) {
    const o = data.observation;
    const r = o.result || {};
    const what = r.summary || (r.spec ? `spec ${r.spec.kind} ${JSON.stringify(r.spec.values)} avg ${r.spec.average}` : '')
      || (r.citations ? `${r.citations.length} citations` : '') || (o.error ? `${o.error.code}: ${o.error.message}` : '');
    parts.push(`${o.id || ''} ${o.ok === false ? '✗' : '✓'} ${what}`);
    if (data.state_delta) parts.push(`next state: ${JSON.stringify(data.state_delta)}`);
    return parts.join(' · ');
  }
  if (data.accepted !== undefined) parts.push(`${data.accepted ? 'accepted' : 'rejected'} ${(data.evidence_ids || []).join(', ')}`);
  if (data.summary) parts.push(String(data.summary));
  if (data.decision_summary) parts.push(String(data.decision_summary));
  if (data.tool && !data.summary) parts.push(`${data.tool}(${data.arguments ? JSON.stringify(data.arguments) : ''})`);
  if (data.error && typeof data.error === 'object') parts.push(`${data.error.code || ''}: ${data.error.message || ''}`);
  else if (data.error) parts.push(String(data.error));
  if (data.error_code && !data.error) parts.push(String(data.error_code));
  if (data.status && data.stop_reason) parts.push(`${data.status} / ${data.stop_reason}`);
  if (data.answer) parts.push(String(data.answer));
  if (data.run_id && data.task) parts.push(`task ${data.task} · policy ${data.policy}`);
  if (!parts.length) {
    const s = JSON.stringify(data);
    parts.push(s.length > 240 ? `${s.slice(0, 240)}…` : s);
  }
  return parts.join(' · ');
}

// Appends only the events not shown yet, so rows a reader expanded stay expanded while the run goes on; the
// whole list is rebuilt only for another run (or the language switch, which re-labels everything).
function renderTimeline(rebuild) {
  const box = $('timeline');
  if (!S.events.length) {
    box.replaceChildren(el('p', { class: 'muted', text: S.runId ? `${t(S.runStatus || 'queued')}…` : t('timeline_empty') }));
    box.dataset.run = ''; box.dataset.shown = '0';
    return;
  }
  let shown = Number(box.dataset.shown || 0);
  if (rebuild || box.dataset.run !== S.runId || shown > S.events.length) {
    box.replaceChildren(); shown = 0; box.dataset.run = S.runId;
  }
  const rows = [];
  const prev = shown ? S.events[shown - 1] : null;
  let prevObs = prev ? (prev.observation_count || 0) : 0, prevStep = prev ? prev.step : null;
  for (const e of S.events.slice(shown)) {
    if (e.step !== prevStep) { rows.push(el('div', { class: 'step-head', text: `${t('step')} ${e.step}` })); prevStep = e.step; }
    const delta = (e.observation_count || 0) - prevObs;
    prevObs = e.observation_count || 0;
    const details = el('details', {}, el('summary', {}, el('span', { class: 'seq mono', text: `#${e.seq}` }), ' ',
      el('span', { class: `phase ${phaseClass(e.phase)}`, text: e.phase }),
      e.attempt ? el('span', { class: 'muted', text: ` ${t('attempt')} ${e.attempt}` }) : null,
      delta > 0 ? el('span', { class: 'delta', text: ` ${t('obs_delta')} +${delta}` }) : null,
      ' ', el('span', { class: 'sum', text: summarize(e.data) })),
      el('pre', { class: 'mono small', text: JSON.stringify(e.data, null, 2) }));
    rows.push(el('div', { class: `event ${phaseClass(e.phase)}`, 'data-seq': e.seq, 'data-phase': e.phase }, details));
  }
  box.append(...rows);
  box.dataset.shown = String(S.events.length);
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

function renderMeters() {
  const box = $('meters');
  const last = S.events.length ? S.events[S.events.length - 1] : null;
  const b = last && last.budget;
  if (!b) { box.replaceChildren(); return; }
  const items = [
    ['meter_steps', b.steps, b.max_steps], ['meter_tool_calls', b.tool_calls, b.max_tool_calls],
    ['meter_time', b.elapsed_ms, b.wall_clock_ms, 'ms'], ['meter_input', b.input_tokens, b.max_input_tokens],
    ['meter_output', b.output_tokens, b.max_output_tokens],
  ];
  box.replaceChildren(...items.filter((i) => i[2] !== undefined).map(([k, used, max, unit]) => {
    const pct = max ? Math.min(100, (100 * used) / max) : 0;
    const fill = el('div', { class: `fill ${pct >= 100 ? 'full' : ''}` });
    fill.style.width = `${pct}%`; // CSSOM, not an inline style attribute (the CSP forbids those)
    return el('div', { class: 'meter', 'data-meter': k }, el('div', { class: 'meter-label', text: `${t(k)} ${used}/${max}${unit ? ' ' + unit : ''}` }),
      el('div', { class: 'bar' }, fill));
  }));
}

function pct(x) { return x === null || x === undefined ? null : `${(100 * x).toFixed(1)}%`; }

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
  ];
  $('metrics').replaceChildren(...cards.map(([k, f]) => el('div', { class: 'metric', 'data-metric': k },
    el('div', { class: 'metric-name', text: t(`m_${k}`) }), el('div', { class: 'metric-value', text: String(f()) }),
    el('div', { class: 'metric-desc', text: t(`m_${k}_d`) }))));
}

function findPlotSpec() {
  for (let i = S.events.length - 1; i >= 0; i--) {
    const d = S.events[i].data || {};
    const o = d.observation;
    if (o && o.tool === 'plot' && o.result && o.result.spec) return o.result.spec;
  }
  return null;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

function fmtNum(v) { return typeof v === 'number' ? String(Math.round(v * 1000) / 1000) : String(v); }

// The bar chart drawn from the plot tool's own spec (labels, values, average, title, y label): the same
// observation the PNG was rendered from. Values and the average show on hover (<title>).
function chartSvg(spec) {
  const labels = spec.labels || []; const values = (spec.values || []).map(Number);
  const W = 640, H = 360, L = 56, R = 16, T = 36, B = 64;
  const pw = W - L - R, ph = H - T - B;
  const avg = typeof spec.average === 'number' ? spec.average : null;
  const top = Math.max(0, ...values, avg === null ? 0 : avg);
  const bottom = Math.min(0, ...values);
  const span = (top - bottom) || 1;
  const y = (v) => T + ph - ((v - bottom) / span) * ph;
  const root = svg('svg', { viewBox: `0 0 ${W} ${H}`, role: 'img', 'aria-label': spec.title || 'chart', 'data-testid': 'chart-svg-root' });
  root.append(svg('text', { x: W / 2, y: 20, 'text-anchor': 'middle', class: 'chart-title' }, spec.title || ''));
  root.append(svg('line', { x1: L, y1: T, x2: L, y2: T + ph, class: 'axis' }), svg('line', { x1: L, y1: y(0), x2: L + pw, y2: y(0), class: 'axis' }));
  for (let i = 0; i <= 4; i++) {
    const v = bottom + (span * i) / 4;
    root.append(svg('text', { x: L - 6, y: y(v) + 4, 'text-anchor': 'end' }, fmtNum(v)));
  }
  root.append(svg('text', { x: 14, y: T + ph / 2, transform: `rotate(-90 14 ${T + ph / 2})`, 'text-anchor': 'middle' }, spec.y_label || ''));
  const slot = pw / Math.max(1, values.length);
  values.forEach((v, i) => {
    const x = L + i * slot + slot * 0.15; const w = slot * 0.7;
    const y0 = y(Math.max(0, v)); const h = Math.abs(y(v) - y(0));
    root.append(svg('rect', { x, y: y0, width: w, height: Math.max(h, 1), class: 'bar-rect', 'data-label': labels[i], 'data-value': v },
      svg('title', {}, `${labels[i]}: ${fmtNum(v)}`)));
    root.append(svg('text', { x: x + w / 2, y: T + ph + 16, 'text-anchor': 'middle', class: 'bar-label' }, labels[i]));
  });
  if (avg !== null) {
    root.append(svg('line', { x1: L, y1: y(avg), x2: L + pw, y2: y(avg), class: 'avg-line', 'data-value': avg },
      svg('title', {}, `${t('chart_average')}: ${fmtNum(avg)}`)));
    root.append(svg('text', { x: L + pw - 4, y: y(avg) - 6, 'text-anchor': 'end', class: 'avg-label' }, `${t('chart_average')} ${fmtNum(avg)}`));
  }
  return root;
}

function renderChart() {
  const box = $('chart-box');
  const arts = (S.result && S.result.artifacts) || [];
  const png = arts.find((a) => a.media_type === 'image/png') || arts[0];
  if (png) {
    const existing = box.querySelector('img');
    if (!existing || existing.dataset.id !== png.id) {
      box.replaceChildren(el('div', { class: 'muted small', text: t('chart_png_h') }),
        el('img', { src: `/artifacts/${encodeURIComponent(png.id)}`, alt: 'plot', 'data-id': png.id, 'data-testid': 'chart-img' }),
        el('div', { class: 'mono small', text: `${png.id} · ${png.bytes} ${t('bytes')} · blake3 ${String(png.blake3 || '').slice(0, 16)}…` }));
    }
  } else {
    box.replaceChildren(el('p', { class: 'muted', text: t('chart_empty') }));
  }
  const spec = findPlotSpec();
  const drawn = $('chart-svg');
  const key = spec ? JSON.stringify(spec) + S.lang : '';
  if (drawn.dataset.key !== key) {
    drawn.dataset.key = key;
    drawn.replaceChildren(...(spec ? [el('div', { class: 'muted small', text: t('chart_svg_h') }), chartSvg(spec)] : []));
  }
  $('chart-spec').hidden = !spec;
  $('chart-spec').textContent = spec ? JSON.stringify(spec, null, 2) : '';
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
  renderRunHead(); renderStages(); renderMeters(); renderTimeline(); renderMetrics(); renderChart(); renderModel(); renderManifest();
  updateStartButton();
}

// ---------- source browser ----------
async function loadManifest() {
  try {
    const r = await api('/example/manifest');
    S.manifest = r.ok ? r.body : { error: r.body };
  } catch (e) { S.manifest = { error: { code: 'runner_unreachable', message: String(e) } }; }
  renderManifest(); renderTree();
}

function renderManifest() {
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

async function openFile(path) {
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
async function loadChain() {
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
function renderFollowRuns(runs) {
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

async function followRun(id) {
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

// ---------- start ----------
function init() {
  $('lang-toggle').addEventListener('click', () => {
    S.lang = S.lang === 'en' ? 'zh' : 'en'; localStorage.setItem('forge.lang', S.lang); applyLang();
    // course.js follows the same toggle.
    document.dispatchEvent(new CustomEvent('forge:lang', { detail: S.lang }));
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
