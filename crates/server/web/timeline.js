// A run's progress as it happens: the stage strip (load → decision → validate → tool → observation → final), the event
// timeline grouped by step, one-line summaries of event data, and the budget meters.
import { $, el } from './dom.js';
import { t } from './i18n.js';
import { S, STAGES } from './state.js';
import { shareText } from './written.js';

export function phaseClass(phase) {
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

export function renderStages() {
  const ol = $('stages');
  ol.replaceChildren(...stageStates().map(({ s, mark, cls }) =>
    el('li', { class: `stage ${cls}`, 'data-stage': s, 'data-state': cls }, el('span', { class: 'mark', text: mark }), ' ', t(`st_${s}`))));
}

export function summarize(data) {
  if (data === null || data === undefined) return '';
  if (typeof data !== 'object') return String(data);
  const parts = [];
  if (data.gap && data.gap.kind) parts.push(data.gap.kind === 'tool' ? `gap → ${data.gap.tool}: ${data.gap.hint}` : `gap → final (${(data.gap.evidence_ids || []).join(', ')})`);
  if (data.output_blake3) parts.push(`tokens ${data.input_tokens} in / ${data.output_tokens} out · ${data.latency_ms} ms`);
  if (data.output_blake3 && data.share) parts.push(shareText(data.share));
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
export function renderTimeline(rebuild) {
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

export function renderMeters() {
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
