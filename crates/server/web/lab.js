// The chapter's experiments without a model: Experiment 1 steps through a finished run's trace one state
// transition at a time (state, decision, validated action, observation, what changed), Experiment 2 sends candidate
// decisions to POST /agent/decisions/validate (the runtime's own checks, no tool runs), and the trace walk-through
// annotates the same run phase by phase. Everything shown comes from the runner's answers; nothing is simulated here.
import { chapterData } from './chapter.js';
import { $, api, el } from './dom.js';
import { currentLang, onLangChange } from './lang.js';
import { TERMINAL } from './state.js';
import { phaseClass, summarize } from './timeline.js';

const T = {
  en: {
    runs_h: 'A finished run to study', runs_none: 'No finished run yet: start one above — with a model, or with a scripted fixture when the runner was started with --enable-test-policies (no model needed) — then refresh.',
    refresh: 'Refresh', steps_h: 'Experiment 1 · one state transition at a time', step_of: 'Step {0} of {1}', prev: '← previous', next: 'next →',
    state: 'State', decision: 'Decision', action: 'Action', observation: 'Observation',
    goal: 'task', tools: 'tools allowed', obs_so_far: 'observations so far', none: 'none', steps_used: 'steps used', tool_calls: 'tool calls', missing: 'still missing',
    proposed: 'proposed', invalid: 'not a decision', repaired: 'repaired in the same step', summary: 'runtime summary',
    validated: 'validated, dispatched', rejected: 'refused before any tool ran', final: 'a final answer: checked by the gates, no tool',
    no_action: 'no action this step', attempts: 'attempts', changed: 'changed', added: 'new observations',
    finished: 'the run finished: {0} / {1}', guard: 'a guard fired: {0}', next_gap: 'the next step is offered',
    sandbox_h: 'Experiment 2 · four candidates, one validator', sandbox_own: 'Or write your own decision JSON:', validate: 'Validate (no tool runs)',
    verdict: 'verdict', phase: 'trace phase', refusal: 'refusal', fields: 'fields', obs_h: 'the observation the model would read next',
    feedback: 'feedback to the model', args: 'arguments as the tool would receive them', not_checked: 'checked only inside a run',
    tool_ran: 'no tool ran', contract: 'the tool\'s contract', missing_names: 'missing:', undeclared: 'not declared:', allowed: 'declared:', walk_h: 'Reading the trace of this run', events: 'events', failed: 'The runner answered {0}: {1}',
  },
  zh: {
    runs_h: '选一个已结束的运行来研究', runs_none: '还没有已结束的运行：先在上面启动一个——使用模型，或在运行器以 --enable-test-policies 启动时使用脚本化 fixture（不需要模型）——然后刷新。',
    refresh: '刷新', steps_h: '实验 1 · 一次只看一个状态转移', step_of: '第 {0} 步，共 {1} 步', prev: '← 上一步', next: '下一步 →',
    state: '状态', decision: '决策', action: '动作', observation: '观察',
    goal: '任务', tools: '可用工具', obs_so_far: '已有的观察', none: '无', steps_used: '已用步数', tool_calls: '工具调用', missing: '还缺',
    proposed: '提议', invalid: '不是一个决策', repaired: '在同一步内修复', summary: '运行时摘要',
    validated: '校验通过，已分派', rejected: '在任何工具运行之前被拒绝', final: '最终答案：由关卡检查，不运行工具',
    no_action: '本步没有动作', attempts: '次尝试', changed: '变化', added: '新增观察',
    finished: '运行结束：{0} / {1}', guard: '守卫触发：{0}', next_gap: '下一步可以做',
    sandbox_h: '实验 2 · 四个候选，一个校验器', sandbox_own: '或者写下你自己的决策 JSON：', validate: '校验（不运行工具）',
    verdict: '结论', phase: 'trace 阶段', refusal: '拒绝', fields: '字段', obs_h: '模型下一步会读到的观察',
    feedback: '给模型的反馈', args: '工具将收到的参数', not_checked: '只在运行中检查',
    tool_ran: '没有运行任何工具', contract: '工具契约', missing_names: '缺少：', undeclared: '未声明：', allowed: '已声明：', walk_h: '读懂这次运行的 trace', events: '个事件', failed: '运行器返回 {0}：{1}',
  },
};
let lang = currentLang();
const tr = (key, ...args) => (T[lang][key] || key).replace(/\{(\d)\}/g, (_, i) => String(args[Number(i)]));
const SUB = '₀₁₂₃₄₅₆₇₈₉';
const sub = (n) => String(n).split('').map((d) => SUB[Number(d)]).join('');

const L = { runs: [], runId: null, events: [], step: 0, chapter: null, candidate: null, dry: null, tools: [] };

// ---------- the run to study ----------
async function loadRuns() {
  const r = await api('/agent/runs?limit=50');
  L.runs = r.ok ? r.body.runs.filter((x) => TERMINAL.includes(x.status) && x.events > 1) : [];
  if (!L.runs.some((x) => x.id === L.runId)) L.runId = L.runs.length ? L.runs[0].id : null;
  renderRuns();
  await loadEvents();
}

async function loadEvents() {
  L.events = []; L.step = 0;
  if (L.runId) {
    const r = await api(`/agent/runs/${encodeURIComponent(L.runId)}?after_seq=0`);
    L.events = r.ok ? r.body.events : [];
  }
  renderSteps(); renderWalk();
}

function renderRuns() {
  const picker = el('select', { 'data-testid': 'lab-run' }, ...L.runs.map((x) =>
    el('option', { value: x.id, text: `${x.id} · ${x.status}/${x.stop_reason || ''} · ${x.policy || ''}` })));
  picker.value = L.runId || '';
  picker.addEventListener('change', () => { L.runId = picker.value; loadEvents(); });
  const refresh = el('button', { type: 'button', class: 'secondary', 'data-testid': 'lab-refresh', text: tr('refresh') });
  refresh.addEventListener('click', loadRuns);
  $('lab-runs').replaceChildren(el('h2', { text: tr('runs_h') }),
    L.runs.length ? el('div', { class: 'row' }, picker, refresh) : el('div', { class: 'row' }, el('span', { class: 'muted', text: tr('runs_none') }), refresh));
}

// ---------- Experiment 1: the step-through ----------
/// The run's steps from its trace: for each outer step, the events before it (the state) and in it.
function steps() {
  const numbers = [...new Set(L.events.filter((e) => e.step > 0).map((e) => e.step))].sort((a, b) => a - b);
  return numbers.map((n) => ({
    n,
    before: L.events.filter((e) => e.step < n),
    during: L.events.filter((e) => e.step === n),
    nextStart: L.events.find((e) => e.step === n + 1 && e.phase === 'model.started'),
  }));
}

const observationsIn = (events) => events.filter((e) => e.data && e.data.observation).map((e) => e.data.observation);
const gapText = (gap) => (!gap ? tr('none') : gap.kind === 'tool' ? `${gap.tool}: ${gap.hint}` : `final (${(gap.evidence_ids || []).join(', ')})`);
const json = (v) => el('pre', { class: 'spec', text: JSON.stringify(v, null, 1) });
const line = (label, value) => el('div', { class: 'small' }, el('b', { text: `${label}: ` }), value);

function stateCard(step) {
  const last = step.before[step.before.length - 1];
  const ids = observationsIn(step.before).map((o) => `${o.id} ${o.ok ? '✓' : '✗'}`);
  const started = step.during.find((e) => e.phase === 'model.started');
  const b = last ? last.budget : null;
  const run = L.events.find((e) => e.phase === 'run.started');
  return [run ? line(tr('goal'), run.data.task) : null, L.tools.length ? line(tr('tools'), L.tools.join(', ')) : null,
    line(tr('obs_so_far'), ids.length ? ids.join(', ') : tr('none')),
    b ? line(tr('steps_used'), `${b.steps} / ${b.max_steps}`) : null,
    b ? line(tr('tool_calls'), `${b.tool_calls} / ${b.max_tool_calls}`) : null,
    line(tr('missing'), gapText(started && started.data.gap))];
}

function decisionCard(step) {
  const out = [];
  for (const e of step.during.filter((x) => x.phase.startsWith('decision.'))) {
    if (e.phase === 'decision.invalid') out.push(line(tr('invalid'), `${e.data.code}: ${e.data.error}`));
    else {
      if (e.phase === 'decision.repaired') out.push(el('div', { class: 'small muted', text: tr('repaired') }));
      out.push(line(tr('summary'), e.data.summary || ''), json(e.data.decision));
    }
  }
  return out.length ? out : [el('span', { class: 'muted', text: tr('none') })];
}

function actionCard(step) {
  const started = step.during.filter((e) => e.phase === 'tool.started');
  const rejected = step.during.find((e) => e.phase === 'tool.rejected');
  const final = step.during.find((e) => e.phase === 'final.validated');
  if (started.length) return [el('div', { class: 'small', text: `${tr('validated')} · ${started.length} ${tr('attempts')}` }), json({ tool: started[0].data.tool, arguments: started[0].data.arguments })];
  if (rejected) return [el('div', { class: 'small bad', text: tr('rejected') }), json(rejected.data.observation.attempted_arguments || {})];
  if (final) return [el('div', { class: 'small', text: tr('final') })];
  return [el('span', { class: 'muted', text: tr('no_action') })];
}

function observationCard(step) {
  const obs = observationsIn(step.during);
  const final = step.during.find((e) => e.phase === 'final.validated');
  const out = obs.map((o) => json(o));
  if (final) out.push(json(final.data));
  return out.length ? out : [el('span', { class: 'muted', text: tr('none') })];
}

function changedCard(step) {
  const last = step.during[step.during.length - 1];
  const before = step.before[step.before.length - 1];
  const added = observationsIn(step.during).map((o) => o.id);
  const out = [line(tr('added'), added.length ? added.join(', ') : tr('none'))];
  if (before && last) {
    out.push(line(tr('steps_used'), `${before.budget.steps} → ${last.budget.steps}`),
      line(tr('tool_calls'), `${before.budget.tool_calls} → ${last.budget.tool_calls}`),
      line('observation_count', `${before.observation_count} → ${last.observation_count}`));
  }
  const guard = step.during.find((e) => e.phase.startsWith('guard.'));
  if (guard) out.push(el('div', { class: 'small bad', text: tr('guard', guard.phase) }));
  const end = step.during.find((e) => e.phase === 'run.finished');
  if (end) out.push(el('div', { class: 'small', 'data-testid': 'step-finished', text: tr('finished', end.data.status, end.data.stop_reason) }));
  else if (step.nextStart) out.push(line(tr('next_gap'), gapText(step.nextStart.data.gap)));
  return out;
}

function renderSteps() {
  const all = steps();
  const box = $('lab-steps');
  const head = el('h3', { text: tr('steps_h') });
  if (!all.length) { box.replaceChildren(head); return; }
  L.step = Math.min(L.step, all.length - 1);
  const step = all[L.step];
  const k = step.n - 1;
  const cards = [
    ['state', `${tr('state')}${sub(k)}`, stateCard(step)],
    ['decision', `${tr('decision')}${sub(k)}`, decisionCard(step)],
    ['action', `${tr('action')}${sub(k)}`, actionCard(step)],
    ['observation', `${tr('observation')}${sub(k)}`, observationCard(step)],
    ['next', `${tr('state')}${sub(k + 1)} · ${tr('changed')}`, changedCard(step)],
  ].map(([key, title, body]) => el('div', { class: 'step-card', 'data-testid': 'step-card', 'data-card': key }, el('h4', { text: title }), ...body.filter(Boolean)));
  const prev = el('button', { type: 'button', class: 'secondary', 'data-testid': 'step-prev', text: tr('prev') });
  const next = el('button', { type: 'button', class: 'secondary', 'data-testid': 'step-next', text: tr('next') });
  prev.disabled = L.step === 0; next.disabled = L.step === all.length - 1;
  prev.addEventListener('click', () => { L.step -= 1; renderSteps(); });
  next.addEventListener('click', () => { L.step += 1; renderSteps(); });
  box.replaceChildren(head, el('div', { class: 'row' }, prev, el('span', { 'data-testid': 'step-position', text: tr('step_of', L.step + 1, all.length) }), next),
    el('div', { class: 'step-cards', 'data-testid': 'step-cards', 'data-step': step.n, 'data-run': L.runId }, ...cards));
}

// ---------- Experiment 2: the decision sandbox ----------
async function validate(text) {
  const r = await api('/agent/decisions/validate', { json: { text } });
  L.dry = r.ok ? r.body : { error: r };
  renderResult();
}

function renderResult() {
  const box = $('sandbox-result');
  if (!box) return;
  const d = L.dry;
  if (!d) { delete box.dataset.verdict; box.replaceChildren(); return; }
  if (d.error) {
    const b = d.error.body || {};
    box.dataset.verdict = 'error';
    box.replaceChildren(el('p', { class: 'errors', text: tr('failed', d.error.status, `${b.code || ''} ${b.message || ''}`) }));
    return;
  }
  box.dataset.verdict = d.verdict;
  const parts = [line(tr('verdict'), el('span', { class: `badge ${d.verdict.startsWith('valid') ? 'badge-completed' : 'badge-failed'}`, 'data-testid': 'sandbox-verdict', text: d.verdict })),
    line(tr('phase'), d.phase), el('div', { class: 'small muted', 'data-testid': 'sandbox-tool-ran', text: d.tool_ran ? '' : tr('tool_ran') })];
  if (d.refusal) {
    parts.push(line(tr('refusal'), el('span', { 'data-testid': 'sandbox-code', text: `${d.refusal.code} (${d.refusal.kind})` })),
      line(tr('fields'), el('span', { 'data-testid': 'sandbox-fields', text: d.refusal.fields.join(', ') || tr('none') })),
      el('p', { class: 'small', text: d.refusal.message }));
  }
  if (d.contract && (d.contract.missing.length || d.contract.undeclared.length)) {
    parts.push(el('div', { class: 'small', 'data-testid': 'sandbox-contract' },
      el('b', { text: `${tr('contract')}: ` }), `${tr('missing_names')} ${d.contract.missing.join(', ') || tr('none')} · ${tr('undeclared')} ${d.contract.undeclared.join(', ') || tr('none')} · ${tr('allowed')} ${d.contract.allowed.join(', ')}`));
  }
  if (d.observation) parts.push(el('h4', { text: tr('obs_h') }), el('pre', { class: 'spec', 'data-testid': 'sandbox-observation', text: JSON.stringify(d.observation, null, 1) }));
  if (d.feedback) parts.push(line(tr('feedback'), d.feedback));
  if (d.validated_arguments) parts.push(el('h4', { text: tr('args') }), json(d.validated_arguments));
  if (d.not_checked && d.not_checked.length) parts.push(line(tr('not_checked'), d.not_checked.join(', ')));
  box.replaceChildren(...parts);
}

function renderSandbox() {
  const box = $('lab-sandbox');
  const candidates = L.chapter ? L.chapter.lab.candidates : [];
  const input = el('textarea', { rows: 4, id: 'sandbox-input', class: 'sandbox-input mono', 'data-testid': 'sandbox-input', spellcheck: 'false' });
  input.value = L.candidate ? L.candidate.text : (candidates[0] ? candidates[0].text : '');
  const buttons = candidates.map((c) => {
    const b = el('button', { type: 'button', class: `secondary${L.candidate && L.candidate.key === c.key ? ' selected' : ''}`, 'data-testid': 'sandbox-candidate', 'data-candidate': c.key, text: c[lang] });
    b.addEventListener('click', () => { L.candidate = c; L.dry = null; renderSandbox(); validate(c.text); });
    return b;
  });
  const go = el('button', { type: 'button', 'data-testid': 'sandbox-validate', text: tr('validate') });
  go.addEventListener('click', () => { const text = input.value; L.candidate = null; L.dry = null; renderSandbox(); $('sandbox-input').value = text; validate(text); });
  box.replaceChildren(el('h3', { text: tr('sandbox_h') }), el('div', { class: 'row' }, ...buttons),
    el('label', { class: 'small', text: tr('sandbox_own') }), input, el('div', { class: 'row' }, go),
    el('div', { id: 'sandbox-result', class: 'sandbox-result', 'data-testid': 'sandbox-result' }));
  renderResult();
}

// ---------- the trace walk-through ----------
function renderWalk() {
  const box = $('walk-steps');
  const groups = L.chapter ? L.chapter.walkthrough : [];
  const head = el('h3', { text: tr('walk_h') });
  if (!L.events.length || !groups.length) { box.replaceChildren(head); return; }
  const blocks = [];
  for (const e of L.events) {
    const g = groups.findIndex((x) => x.phases.includes(e.phase));
    const lastBlock = blocks[blocks.length - 1];
    if (lastBlock && lastBlock.g === g) lastBlock.events.push(e); else blocks.push({ g, events: [e] });
  }
  box.replaceChildren(head, el('ol', { class: 'walk', 'data-testid': 'walk' }, ...blocks.map((b) => el('li', { 'data-testid': 'walk-phase', 'data-group': b.g },
    el('p', { class: 'walk-note', text: b.g >= 0 ? groups[b.g][lang] : '' }),
    el('ul', { class: 'small' }, ...b.events.map((e) => el('li', { class: phaseClass(e.phase), 'data-phase': e.phase },
      el('span', { class: 'mono', text: `#${e.seq} ${e.phase}` }), ` · ${summarize(e.data)}`)))))));
}

async function start() {
  const r = await chapterData();
  L.chapter = r.ok ? r.body : null;
  // The tools the state allows: the registry the runtime validates with (GET /agent/schema).
  const schema = await api('/agent/schema');
  L.tools = schema.ok ? (schema.body.tool_registry.tools || []).map((x) => x.name) : [];
  renderSandbox();
  await loadRuns();
}

onLangChange((l) => { lang = l; renderRuns(); renderSteps(); renderSandbox(); renderWalk(); });
start();
