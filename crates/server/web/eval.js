// The Evaluation panel: the latest task-suite report of each model (GET /agent/evaluation, written by
// `cargo xtask eval`), as a table per policy × mode × temperature with its 95 % interval, every outcome class
// (correct, wrong-accepted, abstained, no answer), the model's lift over the grammar-only policy, a per-task
// table and the success chart. Reads only; nothing here runs an evaluation.
import { el, pct as percent } from './dom.js';
import { currentLang, onLangChange } from './lang.js';

const text = {
  en: { h: 'Evaluation', none: 'No evaluation report yet: run `cargo xtask eval`.', mode: 'mode', temp: 't', runs: 'runs',
    policy: 'policy', uniform: 'uniform', no_answer: 'no answer', lift: 'lift over grammar-only (95 %)', no_baseline: 'no grammar-only runs',
    success: 'correct', ci: '95 % interval', pass: 'pass^k', wall: 'wall p50 (s)', task: 'task', failed: 'error',
    accepted_wrong: 'accepted but wrong', abstained: 'abstained (claims named unverified)', unavailable: 'no ground truth', tasks: 'Per task (successes / runs)' },
  zh: { h: '评测', none: '还没有评测报告：运行 `cargo xtask eval`。', mode: '模式', temp: '温度', runs: '运行数',
    policy: '策略', uniform: '均匀', no_answer: '无答案', lift: '相对纯语法基线的提升（95%）', no_baseline: '无纯语法基线',
    success: '正确', ci: '95% 区间', pass: 'pass^k', wall: '单次耗时中位数 (秒)', task: '任务', failed: '错误',
    accepted_wrong: '被接受但错误', abstained: '弃答（未核验之处已列出）', unavailable: '无标准答案', tasks: '按任务（成功 / 运行）' },
};
let lang = currentLang();
let data = null;
const t = (k) => text[lang][k];
const pct = (x) => percent(x) ?? '—';


function table(head, rows) {
  return el('table', { class: 'facts eval-table' },
    el('thead', {}, el('tr', {}, ...head.map((h) => el('th', { text: h })))),
    el('tbody', {}, ...rows.map((r) => el('tr', {}, ...r.map((c) => el('td', { text: String(c) }))))));
}

function renderReport(report) {
  const box = el('div', { class: 'eval-report', 'data-testid': 'eval-report', 'data-model': report.model });
  box.append(el('h3', { class: 'mono', text: report.model }));
  if (report.error) { box.append(el('p', { class: 'errors', text: report.error })); return box; }
  if (report.note) box.append(el('p', { class: 'muted', text: report.note }));
  const configs = report.configs || [];
  const policy = (c) => c.policy || 'model';
  const temp = (c) => (policy(c) === 'model' ? c.temperature : t('uniform'));
  const pp = (x) => `${x >= 0 ? '+' : ''}${(100 * x).toFixed(0)} pp`;
  const lift = (c) => {
    if (policy(c) !== 'model') return '—';
    const l = c.lift_over_grammar_only;
    if (!l) return t('no_baseline');
    return `${pp(l.difference)} (${pp(l.newcombe_95[0])} – ${pp(l.newcombe_95[1])}) vs ${l.baseline_successes}/${l.baseline_scored}`;
  };
  box.append(table([t('policy'), t('mode'), t('temp'), t('runs'), t('success'), t('ci'), t('pass'), t('accepted_wrong'), t('abstained'), t('no_answer'), t('lift'), t('unavailable'), t('wall')],
    configs.map((c) => [policy(c), c.mode, temp(c), c.runs, `${c.successes}/${c.scored} (${pct(c.success_rate)})`,
      `${pct(c.wilson_95[0])} – ${pct(c.wilson_95[1])}`,
      (c.pass_hat_k || []).map(([k, v]) => `k=${k}: ${pct(v)}`).join(' · ') || '—',
      c.accepted_but_wrong, c.abstained ?? 0, c.no_answer ?? '—', lift(c), c.ground_truth_unavailable,
      c.wall_per_run_p50_s === null ? '—' : c.wall_per_run_p50_s.toFixed(1)])));
  const tasks = [...new Set(configs.flatMap((c) => Object.keys(c.per_task || {})))].sort();
  if (tasks.length) {
    box.append(el('h4', { text: t('tasks') }));
    box.append(table([t('task'), ...configs.map((c) => `${policy(c)} ${c.mode} t=${temp(c)}`)],
      tasks.map((task) => [task, ...configs.map((c) => {
        const cell = (c.per_task || {})[task];
        return cell ? `${cell[0]}/${cell[1]}` : '—';
      })])));
  }
  if (report.chart) box.append(el('img', { src: report.chart, alt: `${t('success')} — ${report.model}`, class: 'eval-chart', 'data-testid': 'eval-chart' }));
  return box;
}

function render() {
  const card = document.getElementById('eval-card');
  if (!card) return;
  card.replaceChildren(el('h2', { text: t('h') }));
  if (!data) return;
  if (data.error) { card.append(el('p', { class: 'errors', 'data-testid': 'eval-error', text: data.error })); return; }
  if (!data.reports.length) { card.append(el('p', { class: 'muted', text: t('none') })); return; }
  for (const report of data.reports) card.append(renderReport(report));
}

async function load() {
  try {
    const r = await fetch('/agent/evaluation');
    const body = await r.json();
    data = r.ok ? body : { error: `${r.status} ${body && body.message}` };
  } catch (e) {
    data = { error: String(e) };
  }
  render();
}

document.addEventListener('DOMContentLoaded', load);
