// Forge course view, the instructor's part: a class's grades.json (written by cargo xtask grade) chosen in the
// browser and parsed here, never uploaded — stages × learners, why each stage did not pass, the copies flagged,
// and the charts' data (pass rate per stage, the tests that fail most, time to a first pass) drawn as SVG. It
// shares the page's helpers (dom.js) and language (lang.js), nothing else.
import { $, el, svg } from './dom.js';
import { currentLang, onLangChange } from './lang.js';

const T = {
  en: {
    h: 'Course · class grades',
    note: 'Choose a grades.json written by cargo xtask grade (one learn/ folder or zip per learner, every build and test in a box). It is parsed in this browser only and never uploaded.',
    choose: 'Choose grades.json',
    none: 'No class file chosen.',
    summary: '{0} learner(s) · {1} stage(s) · generated {2} · box: {3}, no network, tests stopped after {4} s',
    bad: '{0} was refused: {1}',
    learner: 'learner',
    failed_h: 'What did not pass',
    all_passed: 'Every submitted stage passed.',
    copies_h: 'Copies (flagged, not failed)',
    copies_none: 'No copies found.',
    copy: '{0}: {1} — {2} (similarity {3})',
    rate_h: 'Pass rate per stage',
    rate_bar: '{0}: {1}% ({2} of {3})',
    tests_h: 'Tests that fail most',
    tests_bar: '{0} {1}: {2} learner(s)',
    tests_none: 'No test failed.',
    time_h: 'Median minutes to a first pass (from learners\' own progress logs)',
    time_bar: '{0}: {1} min (n={2})',
    time_none: 'No progress log records a first pass.',
    reference: 'the reference',
    outcomes: { passed: 'passed', failed: 'failed', unviable: 'does not compile', transfer_missing: 'transfer test missing', transfer_not_caught: 'transfer test misses the fault', refused: 'refused', not_submitted: 'not submitted' },
    kinds: { identical: 'identical', near_identical: 'near-identical', reference_copy: 'copy of the reference' },
  },
  zh: {
    h: '课程 · 全班成绩',
    note: '选择由 cargo xtask grade 生成的 grades.json（每位学员一个 learn/ 文件夹或 zip，每次构建和测试都在沙箱中运行）。它只在当前浏览器中解析，不会上传。',
    choose: '选择 grades.json',
    none: '尚未选择全班成绩文件。',
    summary: '{0} 位学员 · {1} 个阶段 · 生成于 {2} · 沙箱：{3}，无网络，测试超过 {4} 秒即停止',
    bad: '{0} 被拒绝：{1}',
    learner: '学员',
    failed_h: '未通过的内容',
    all_passed: '所有提交的阶段都已通过。',
    copies_h: '雷同（只标记，不判失败）',
    copies_none: '未发现雷同。',
    copy: '{0}：{1} —— {2}（相似度 {3}）',
    rate_h: '各阶段通过率',
    rate_bar: '{0}：{1}%（{3} 份中 {2} 份）',
    tests_h: '失败最多的测试',
    tests_bar: '{0} {1}：{2} 位学员',
    tests_none: '没有失败的测试。',
    time_h: '首次通过的中位用时（分钟，来自学员自己的进度记录）',
    time_bar: '{0}：{1} 分钟（n={2}）',
    time_none: '没有进度记录写明首次通过。',
    reference: '参考实现',
    outcomes: { passed: '通过', failed: '未通过', unviable: '无法编译', transfer_missing: '缺少迁移测试', transfer_not_caught: '迁移测试没有抓住故障', refused: '被拒绝', not_submitted: '未提交' },
    kinds: { identical: '完全相同', near_identical: '几乎相同', reference_copy: '抄自参考实现' },
  },
};

const OUTCOMES = Object.keys(T.en.outcomes);
const G = { lang: currentLang(), report: null, name: null, error: null };

const t = (key, ...args) => {
  let s = (T[G.lang] && T[G.lang][key]) || T.en[key] || key;
  args.forEach((a, i) => { s = s.split(`{${i}}`).join(String(a)); });
  return s;
};
const outcomeText = (o) => (T[G.lang].outcomes[o] || o);

/// An error message for anything this page cannot read as a Forge grades.json, else null.
function problemWith(r) {
  if (r === null || typeof r !== 'object' || Array.isArray(r)) return 'the top level must be a JSON object';
  if (r.format_version !== 1) return `format_version must be 1, got ${JSON.stringify(r.format_version)}`;
  if (!Array.isArray(r.stages) || !r.stages.every((s) => s && typeof s.id === 'string')) return 'stages must be a list of stages with an id';
  if (!Array.isArray(r.learners)) return 'learners must be an array';
  const ids = new Set(r.stages.map((s) => s.id));
  for (const [k, l] of r.learners.entries()) {
    if (!l || typeof l.name !== 'string' || !Array.isArray(l.stages)) return `learners[${k}] must have a name and stages`;
    for (const [j, s] of l.stages.entries()) {
      if (!ids.has(s.stage_id)) return `learners[${k}].stages[${j}].stage_id ${JSON.stringify(s.stage_id)} is not one of the file's stages`;
      if (!OUTCOMES.includes(s.outcome)) return `learners[${k}].stages[${j}].outcome ${JSON.stringify(s.outcome)} is not a grade (${OUTCOMES.join(', ')})`;
      if (!Array.isArray(s.failing_tests)) return `learners[${k}].stages[${j}].failing_tests must be a list`;
    }
  }
  if (!Array.isArray(r.copies)) return 'copies must be an array';
  if (!r.summary || !Array.isArray(r.summary.per_stage) || !Array.isArray(r.summary.failing_tests)) return 'summary must hold per_stage and failing_tests';
  if (!r.box || typeof r.box.mechanism !== 'string') return 'box must name its mechanism';
  return null;
}

async function chooseFile(file) {
  G.name = file.name;
  let parsed;
  try {
    parsed = JSON.parse(await file.text());
  } catch (e) {
    G.report = null; G.error = t('bad', file.name, `not JSON (${e.message})`); render(); return;
  }
  const problem = problemWith(parsed);
  G.report = problem ? null : parsed;
  G.error = problem ? t('bad', file.name, problem) : null;
  render();
}

// ---------- rendering ----------

function table(r) {
  const head = el('tr', {}, el('th', { text: t('learner') }), ...r.stages.map((s) => el('th', { title: G.lang === 'zh' ? s.title_zh : s.title_en, text: s.id.slice(0, 2) })));
  const rows = r.learners.map((l) => el('tr', {},
    el('th', { class: 'learner', text: l.name }),
    ...r.stages.map((s) => {
      const g = l.stages.find((x) => x.stage_id === s.id);
      const outcome = g ? g.outcome : 'not_submitted';
      return el('td', { class: `grade grade-${outcome}`, 'data-testid': `grade-${l.name}-${s.id.slice(0, 2)}`, 'data-outcome': outcome, title: g ? g.reason : '', text: outcomeText(outcome) });
    })));
  return el('table', { class: 'grades-table', 'data-testid': 'grades-table' }, el('thead', {}, head), el('tbody', {}, ...rows));
}

function failures(r) {
  const items = [];
  for (const l of r.learners) {
    for (const g of l.stages.filter((x) => x.outcome !== 'passed' && x.outcome !== 'not_submitted')) {
      const tests = g.failing_tests.length ? ` [${g.failing_tests.join(', ')}]` : '';
      items.push(el('li', { 'data-testid': `why-${l.name}-${g.stage_id.slice(0, 2)}` }, el('strong', { text: `${l.name} · ${g.stage_id} · ${outcomeText(g.outcome)}: ` }), `${g.reason}${tests}`));
    }
  }
  return items.length ? el('ul', { class: 'grades-why', 'data-testid': 'grades-why' }, ...items) : el('p', { class: 'muted', text: t('all_passed') });
}

function copies(r) {
  if (!r.copies.length) return el('p', { class: 'muted', 'data-testid': 'grades-copies', text: t('copies_none') });
  const names = (c) => c.learners.map((n) => (n === 'reference' ? t('reference') : n)).join(' & ');
  return el('ul', { class: 'grades-copies', 'data-testid': 'grades-copies' },
    ...r.copies.map((c) => el('li', { 'data-kind': c.kind, text: t('copy', c.stage_id, T[G.lang].kinds[c.kind] || c.kind, names(c), Number(c.similarity).toFixed(2)) })));
}

/// Horizontal bars: (label text, value, max) per row, drawn as SVG (no inline styles under the page's CSP).
function bars(testid, rows) {
  const W = 560; const rowH = 22; const labelW = 0;
  const root = svg('svg', { viewBox: `0 0 ${W} ${Math.max(1, rows.length) * rowH + 4}`, class: 'grades-bars', role: 'img', 'data-testid': testid });
  rows.forEach(([text, value, max], i) => {
    const w = max > 0 ? Math.max(2, ((W - labelW) * 0.45 * value) / max) : 2;
    root.append(svg('rect', { x: 0, y: i * rowH + 3, width: w, height: rowH - 6, class: 'bar' }));
    root.append(svg('text', { x: w + 6, y: i * rowH + rowH - 7 }, text));
  });
  return root;
}

function charts(r) {
  const per = r.summary.per_stage;
  const rate = bars('chart-pass-rate', per.map((s) => [t('rate_bar', s.stage_id, s.pass_rate === null ? '—' : Math.round(s.pass_rate * 100), s.passed, s.submitted), s.pass_rate || 0, 1]));
  const most = Math.max(1, ...r.summary.failing_tests.map((f) => f.learners));
  const failing = r.summary.failing_tests.length
    ? bars('chart-failing-tests', r.summary.failing_tests.slice(0, 8).map((f) => [t('tests_bar', f.stage_id.slice(0, 2), f.test, f.learners), f.learners, most]))
    : el('p', { class: 'muted', text: t('tests_none') });
  const timed = per.filter((s) => s.median_minutes_to_first_pass !== null);
  const longest = Math.max(1, ...timed.map((s) => s.median_minutes_to_first_pass));
  const times = timed.length
    ? bars('chart-time-to-pass', timed.map((s) => [t('time_bar', s.stage_id, s.median_minutes_to_first_pass, s.first_pass_times), s.median_minutes_to_first_pass, longest]))
    : el('p', { class: 'muted', text: t('time_none') });
  return el('div', { class: 'grades-charts' },
    el('div', {}, el('h4', { text: t('rate_h') }), rate),
    el('div', {}, el('h4', { text: t('tests_h') }), failing),
    el('div', {}, el('h4', { text: t('time_h') }), times));
}

function render() {
  const card = $('class-card');
  if (!card) return;
  for (const e of card.querySelectorAll('[data-grades-i18n]')) e.textContent = t(e.dataset.gradesI18n);
  $('grades-error').textContent = G.error || '';
  const body = $('grades-body');
  const r = G.report;
  if (!r) { body.replaceChildren(el('p', { class: 'muted', text: t('none') })); delete body.dataset.loaded; return; }
  body.replaceChildren(
    el('p', { class: 'state-line small', 'data-testid': 'grades-summary', text: t('summary', r.learners.length, r.stages.length, r.generated_at, r.box.mechanism, r.box.test_timeout_s) }),
    table(r),
    el('h4', { text: t('failed_h') }), failures(r),
    el('h4', { text: t('copies_h') }), copies(r),
    charts(r));
  body.dataset.loaded = 'true';
  body.setAttribute('lang', G.lang === 'zh' ? 'zh-CN' : 'en');
}

function init() {
  const card = $('class-card');
  if (!card) return;
  card.replaceChildren(
    el('h2', { 'data-grades-i18n': 'h', text: t('h') }),
    el('p', { class: 'hint small', 'data-grades-i18n': 'note', text: t('note') }),
    el('label', { class: 'button secondary file-button' },
      el('span', { 'data-grades-i18n': 'choose', text: t('choose') }),
      el('input', { id: 'grades-file', type: 'file', accept: '.json,application/json', 'data-testid': 'grades-file' })),
    el('div', { id: 'grades-error', class: 'errors', 'data-testid': 'grades-error', role: 'alert' }),
    el('div', { id: 'grades-body', class: 'grades-body', 'data-testid': 'grades-body' }));
  $('grades-file').addEventListener('change', (e) => { const f = e.target.files && e.target.files[0]; if (f) chooseFile(f); });
  onLangChange((lang) => { G.lang = lang; render(); });
  render();
  card.dataset.ready = 'true';
}

document.addEventListener('DOMContentLoaded', init);
