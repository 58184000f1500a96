// Browser test of the runner chapter with no model loaded: every chapter section (1–21) placed beside the element
// it explains, Experiment 1 stepping through a finished scripted run, Experiment 2 sending the four preset
// candidates and the learner's own JSON through POST /agent/decisions/validate (the legacy chart refused with the
// real invalid_arguments observation), the trace walk-through, the course frame and the source orientation —
// first in English, then in Chinese through the page's language toggle. Screenshots go to target/ui-screenshots/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { BASE, EVIDENCE, openBrowser } from './helpers.mjs';

async function finishedScriptedRun() {
  const r = await fetch(`${BASE}/agent/runs`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ policy: 'scripted:fixtures/happy.json' }) });
  assert.equal(r.status, 202);
  const { id } = await r.json();
  for (let i = 0; i < 300; i++) {
    const s = await (await fetch(`${BASE}/agent/runs/${id}`)).json();
    if (s.terminal) return s;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`run ${id} did not finish`);
}

async function sandbox(page, key) {
  await page.click(`[data-testid=sandbox-candidate][data-candidate=${key}]`);
  await page.waitForFunction((k) => {
    const r = document.querySelector('[data-testid=sandbox-result]');
    const input = document.querySelector('[data-testid=sandbox-input]');
    return r && r.dataset.verdict && input && input.value.includes(k === 'legacy_plot' ? '"kind"' : k === 'plot' ? '"title"' : `"${k}"`);
  }, key, { timeout: 10_000 });
  return page.locator('[data-testid=sandbox-result]').getAttribute('data-verdict');
}

test('the chapter and its experiments in English and Chinese, with no model', { timeout: 90_000 }, async () => {
  const run = await finishedScriptedRun();
  assert.equal(run.status, 'completed');
  const stepsInRun = new Set(run.events.filter((e) => e.step > 0).map((e) => e.step)).size;
  const { page, consoleErrors, close } = await openBrowser();
  try {
    await page.goto(`${BASE}/`);
    // Every section, once, each beside its live element.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=chapter-note]').length === 21, null, { timeout: 20_000 });
    const ids = await page.locator('[data-testid=chapter-note]').evaluateAll((ns) => ns.map((n) => Number(n.dataset.section)).sort((a, b) => a - b));
    assert.deepEqual(ids, Array.from({ length: 21 }, (_, i) => i + 1));
    const chapter = await (await fetch(`${BASE}/course/chapter`)).json();
    for (const s of chapter.sections) {
      const box = page.locator(`.chapter-notes[data-anchor="${s.anchor}"]`);
      assert.equal(await box.locator(`[data-section="${s.id}"]`).count(), 1, `§${s.id} sits beside #${s.anchor}`);
    }
    // The budget notes directly after the budget fields; the stop table after the run's stop; the metric notes after the cards.
    assert.equal(await page.evaluate(() => document.getElementById('budget-fields').nextElementSibling.dataset.anchor), 'budget-fields');
    assert.equal(await page.evaluate(() => document.querySelector('.run-head').nextElementSibling.dataset.anchor), 'stop-reason');
    assert.equal(await page.evaluate(() => document.getElementById('metrics').nextElementSibling.dataset.anchor), 'metrics');
    // The index opens a section where it lives; the stop table states Forge's Termination Correctness rule.
    await page.click('#chapter-card summary');
    await page.click('[data-testid=chapter-index] a[data-section="11"]');
    await page.locator('#chapter-11[open]').waitFor();
    assert.match(await page.locator('#chapter-11').textContent(), /protected_stop_reasons/);
    assert.ok(await page.locator('#chapter-20 [data-testid=chapter-code]').count() === 1, 'the loop in code');
    assert.ok(await page.locator('#chapter-21 [data-testid=chapter-tests] a').count() >= 8, 'the acceptance list links its tests');

    // Experiment 1 over the finished run: five cards per step, from State₀ to the stop.
    // Other test files start runs at the same time: pick this test's own run.
    await page.click('[data-testid=lab-refresh]');
    await page.waitForFunction((id) => [...document.querySelectorAll('[data-testid=lab-run] option')].some((o) => o.value === id), run.id, { timeout: 10_000 });
    await page.selectOption('[data-testid=lab-run]', run.id);
    await page.locator(`[data-testid=step-cards][data-run="${run.id}"]`).waitFor({ timeout: 10_000 });
    assert.equal(await page.locator('[data-testid=step-card]').count(), 5);
    assert.deepEqual(await page.locator('[data-testid=step-card] h4').allTextContents(),
      ['State₀', 'Decision₀', 'Action₀', 'Observation₀', 'State₁ · changed']);
    assert.match(await page.locator('[data-card=state]').textContent(), /tools allowed: knowledge_search, calculator, plot/);
    assert.match(await page.locator('[data-card=state]').textContent(), /observations so far: none/);
    assert.match(await page.locator('[data-card=decision]').textContent(), /knowledge_search/);
    assert.match(await page.locator('[data-card=observation]').textContent(), /obs-knowledge_search-1/);
    for (let i = 1; i < stepsInRun; i++) await page.click('[data-testid=step-next]');
    assert.equal(await page.locator('[data-testid=step-next]').isDisabled(), true);
    assert.match(await page.locator('[data-testid=step-finished]').textContent(), /completed \/ completed/);
    await page.screenshot({ path: join(EVIDENCE, 'chapter-steps-en.png'), fullPage: false });

    // Experiment 2: the three valid candidates pass, the old chart shape gets the real observation.
    for (const key of ['knowledge_search', 'calculator', 'plot']) assert.equal(await sandbox(page, key), 'valid_action', key);
    assert.equal(await sandbox(page, 'legacy_plot'), 'invalid_arguments');
    assert.match(await page.locator('[data-testid=sandbox-code]').textContent(), /^invalid_arguments/);
    assert.equal(await page.locator('[data-testid=sandbox-fields]').textContent(), 'title');
    assert.match(await page.locator('[data-testid=sandbox-contract]').textContent(), /missing: title · not declared: kind/);
    const observation = JSON.parse(await page.locator('[data-testid=sandbox-observation]').textContent());
    assert.equal(observation.ok, false);
    assert.equal(observation.error.code, 'invalid_arguments');
    assert.equal(observation.attempted_arguments.kind, 'bar');
    // The learner's own JSON.
    await page.fill('[data-testid=sandbox-input]', '{"type":"action","tool":"search","arguments":{"query":"x"}}');
    await page.click('[data-testid=sandbox-validate]');
    await page.waitForFunction(() => document.querySelector('[data-testid=sandbox-result]').dataset.verdict === 'invalid_decision', null, { timeout: 10_000 });
    assert.match(await page.locator('[data-testid=sandbox-code]').textContent(), /unknown_tool/);

    // The trace walk-through: the run annotated phase by phase, starting at the run's start, ending at run.finished.
    const groups = await page.locator('[data-testid=walk-phase]').evaluateAll((ls) => ls.map((l) => Number(l.dataset.group)));
    assert.ok(groups.length >= 5, `${groups.length} phase blocks`);
    assert.equal(groups[0], 0);
    assert.equal(groups[groups.length - 1], chapter.walkthrough.length - 1);
    assert.ok(groups.every((g) => g >= 0), 'every event belongs to a phase of the walk-through');
    assert.equal(await page.locator('[data-testid=walk-phase] li').last().getAttribute('data-phase'), 'run.finished');

    // The course frame and the source orientation.
    assert.equal(await page.locator('[data-testid=capability-chain] > li').count(), 7);
    assert.equal(await page.locator('[data-testid=capability-chain] [data-testid=nav-line]').count(), 7);
    assert.equal(await page.locator('[data-testid=concepts] .concept').count(), 4);
    assert.equal(await page.locator('[data-testid=principles] .principle').count(), 4);
    assert.match(await page.locator('[data-testid=data-boundary] .never').textContent(), /expected\.json/);
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=role-group]')].some((g) => Number(g.dataset.count) > 0), null, { timeout: 30_000 });
    await page.screenshot({ path: join(EVIDENCE, 'chapter-en.png'), fullPage: true });

    // 中文: the same page through the language toggle.
    await page.click('[data-testid=lang-toggle]');
    await page.waitForFunction(() => document.querySelector('#chapter-11 summary').textContent.includes('运行如何停止'), null, { timeout: 10_000 });
    for (const s of chapter.sections) {
      assert.ok((await page.locator(`#chapter-${s.id} summary`).textContent()).includes(s.zh.title), `§${s.id} in Chinese`);
    }
    assert.deepEqual(await page.locator('[data-testid=step-card] h4').first().textContent(), `状态${'₀₁₂₃₄₅₆₇₈₉'[stepsInRun - 1]}`);
    assert.equal(await sandbox(page, 'legacy_plot'), 'invalid_arguments');
    assert.equal(await page.locator('[data-testid=sandbox-candidate][data-candidate=legacy_plot]').textContent(), '旧的图表形状');
    for (const key of ['knowledge_search', 'calculator', 'plot']) assert.equal(await sandbox(page, key), 'valid_action', key);
    assert.match(await page.locator('[data-testid=walk-phase] .walk-note').first().textContent(), /阶段 0/);
    assert.match(await page.locator('[data-testid=capability-chain]').textContent(), /阶段 01/);
    await page.screenshot({ path: join(EVIDENCE, 'chapter-zh.png'), fullPage: true });
    assert.deepEqual(consoleErrors, []);
  } finally {
    await page.evaluate(() => localStorage.removeItem('forge.lang')).catch(() => {});
    await close();
  }
});
