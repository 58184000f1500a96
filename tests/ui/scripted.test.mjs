// Browser test with the scripted policy (no model needed): the page inspects the model, runs the
// happy fixture to completion, shows stages, metrics and the chart, browses the source (roles, chain
// stages, public items), follows one decision to its code, cancels a slow second run, and refuses bad
// budgets. Screenshots go to target/ui-screenshots/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { BASE, EVIDENCE, openBrowser, waitTerminal, metric, chartWidth } from './helpers.mjs';

test('scripted run end to end in the browser', { timeout: 180_000 }, async () => {
  const { page, consoleErrors, close } = await openBrowser();
  try {
    await page.goto(`${BASE}/`);
    await page.locator('[data-testid=model-panel]').waitFor();
    // Inspection finishes one way or the other; the page states it and never invents a model.
    await page.waitForFunction(() => {
      const t = document.querySelector('[data-testid=model-state]').className;
      return t.includes('ok') || t.includes('bad');
    }, null, { timeout: 30_000 });
    const modelOk = await page.locator('[data-testid=model-state].ok').count() === 1;
    if (modelOk) {
      assert.ok(await page.locator('[data-testid=model-facts] tr').count() > 3, 'model facts are listed');
    } else {
      assert.equal(await page.locator('[data-testid=start-btn]').isDisabled(), true, 'start is disabled while the model is unavailable');
    }
    // The task picker lists the runner's loadable task folders, starts on the default, shows the task's text
    // and a preview of its knowledge files.
    const st = await (await fetch(`${BASE}/status`)).json();
    const tasks = await (await fetch(`${BASE}/agent/tasks`)).json();
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=task-picker] option').length > 0, null, { timeout: 30_000 });
    assert.equal(await page.locator('[data-testid=task-picker] option').count(), tasks.tasks.filter((x) => x.status === 'ok').length);
    assert.equal(await page.locator('[data-testid=task-picker]').inputValue(), st.default_task);
    const chosen = tasks.tasks.find((x) => x.name === st.default_task);
    assert.equal((await page.locator('[data-testid=task-text]').textContent()).includes(chosen.text), true);
    assert.equal(await page.locator('[data-testid=task-details] details').count(), chosen.knowledge.length);
    // The model picker offers exactly what the runner lists (or the runner default when it lists none).
    const models = await (await fetch(`${BASE}/agent/models`)).json();
    assert.equal(await page.locator('[data-testid=model-picker] option').count(), Math.max(1, models.models.length));
    // Before any run: metrics say "not run", no chart.
    assert.equal(await metric(page, 'task_success'), 'not run');
    assert.equal(await page.locator('[data-testid=chart-img]').count(), 0);
    await page.screenshot({ path: join(EVIDENCE, 'page-initial.png'), fullPage: true });

    // The test-only policy selector exists only because the runner was started with --enable-test-policies.
    await page.locator('#policy-row').waitFor({ state: 'visible' });
    await page.selectOption('[data-testid=policy]', 'scripted');
    await page.fill('[data-testid=fixture]', 'fixtures/happy.json');
    assert.equal(await page.locator('[data-testid=start-btn]').isDisabled(), false);
    await page.click('[data-testid=start-btn]');
    const final = await waitTerminal(page, 60_000);
    assert.equal(final, 'completed');
    assert.match(await page.locator('[data-testid=stop-reason]').textContent(), /stop_reason = completed/);

    // Stage strip: every stage reached.
    const states = await page.locator('[data-testid=stages] li').evaluateAll((lis) => lis.map((l) => `${l.dataset.stage}:${l.dataset.state}`));
    assert.deepEqual(states, ['load:done', 'decision:done', 'validate:done', 'tool:done', 'observation:done', 'final:done']);
    // Timeline: contiguous events ending in run.finished.
    const seqs = await page.locator('[data-testid=timeline] .event').evaluateAll((es) => es.map((e) => Number(e.dataset.seq)));
    assert.ok(seqs.length >= 8, `timeline has ${seqs.length} events`);
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1));
    assert.equal(await page.locator('[data-testid=timeline] .event').last().getAttribute('data-phase'), 'run.finished');
    // Metrics cards.
    assert.equal(await metric(page, 'task_success'), 'PASS');
    assert.match(await metric(page, 'valid_action_rate'), /^\d+(\.\d)?%$/);
    assert.equal(await metric(page, 'termination_correctness'), 'PASS');
    assert.match(await metric(page, 'tokens'), /^\d+ \/ \d+$/);
    // Budget meters and final answer.
    assert.ok(await page.locator('[data-testid=meters] .meter').count() >= 4);
    assert.match(await page.locator('[data-testid=final]').textContent(), /79/);
    // The chart is a real PNG served by the runner.
    const width = await chartWidth(page);
    assert.ok(width > 0, 'chart image decoded');
    assert.ok(await page.locator('[data-testid=chart-spec]').isVisible(), 'plot spec shown');
    // The same chart drawn as SVG from the plot spec: one bar per label, the average line, values on hover.
    const spec = JSON.parse(await page.locator('[data-testid=chart-spec]').textContent());
    assert.equal(await page.locator('[data-testid=chart-svg] rect.bar-rect').count(), spec.labels.length);
    assert.deepEqual(await page.locator('[data-testid=chart-svg] rect.bar-rect title').allTextContents(),
      spec.labels.map((l, i) => `${l}: ${spec.values[i]}`));
    assert.deepEqual(await page.locator('[data-testid=chart-svg] text.bar-label').allTextContents(), spec.labels);
    assert.equal(await page.locator('[data-testid=chart-svg] line.avg-line').count(), 1);
    assert.equal(Number(await page.locator('[data-testid=chart-svg] line.avg-line').getAttribute('data-value')), spec.average);
    // Trace export link points at this run.
    const runId = (await page.locator('[data-testid=run-id]').textContent()).trim();
    assert.equal(await page.locator('[data-testid=trace-link]').getAttribute('href'), `/agent/runs/${runId}/trace`);
    await page.screenshot({ path: join(EVIDENCE, 'scripted-completed.png'), fullPage: true });

    // Chinese UI text.
    await page.click('[data-testid=lang-toggle]');
    assert.equal(await page.locator('h1').textContent(), 'Forge · 本地 ReAct 运行器');
    assert.equal(await metric(page, 'task_success'), '通过');
    await page.screenshot({ path: join(EVIDENCE, 'scripted-completed-zh.png'), fullPage: true });
    await page.click('[data-testid=lang-toggle]');
    assert.equal(await page.locator('h1').textContent(), 'Forge · local ReAct runner');

    // Source browser: the file list, one file's content and hash, and the zip link.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=file-tree] a').length > 20, null, { timeout: 30_000 });
    await page.locator('[data-testid=file-tree] a[data-path="Cargo.toml"]').click();
    await page.waitForFunction(() => document.querySelector('[data-testid=file-content]').textContent.includes('[workspace]'));
    assert.match(await page.locator('[data-testid=file-head]').textContent(), /Cargo\.toml · \d+ bytes · blake3 [0-9a-f]{64}/);
    assert.equal(await page.locator('[data-testid=zip-link]').getAttribute('href'), '/example.zip');
    assert.match(await page.locator('[data-testid=file-role]').textContent(), /Cargo manifest/);
    // Every file under crates/ has a role; a Rust file's is its own //! line.
    const roles = await page.locator('[data-testid=file-tree] a[data-path^="crates/"]').evaluateAll((as) => as.map((a) => [a.dataset.path, a.dataset.role]));
    assert.ok(roles.length > 50, `${roles.length} files under crates/`);
    assert.deepEqual(roles.filter(([, r]) => !r), [], 'files under crates/ without a role');
    await page.evaluate(() => document.querySelector('[data-testid=file-tree] a[data-path="crates/server/src/tasks.rs"]').click());
    await page.waitForFunction(() => document.querySelector('[data-testid=file-role]').textContent.includes('Task folders as a resource'), null, { timeout: 10_000 });
    // ... and a place in the chain (crates/server/chain.toml), named in its tooltip once the chain is loaded.
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid=file-tree] a[data-path^="crates/"]')]
      .every((a) => a.title.includes('Place in the chain')), null, { timeout: 10_000 });
    const staged = await page.locator('[data-testid=file-tree] a[data-path^="crates/"]').evaluateAll((as) => as.map((a) => [a.dataset.path, a.dataset.stage]));
    assert.equal(staged.length, roles.length);
    assert.deepEqual(staged.filter(([, s]) => !s), [], 'files under crates/ without a chain stage');
    // Opening a file lights its stage on the chain strip and lists its public items; an item scrolls to its line.
    await page.evaluate(() => document.querySelector('[data-testid=file-tree] a[data-path="crates/runtime/src/decision.rs"]').click());
    await page.waitForFunction(() => document.querySelector('[data-testid=file-chain]').dataset.stage === 'validate', null, { timeout: 10_000 });
    assert.deepEqual(await page.locator('[data-testid=file-chain] li.chain-stage.on').evaluateAll((ls) => ls.map((l) => l.dataset.stage)), ['validate']);
    const item = page.locator('[data-testid=file-items] button.item[data-name=parse_decision]');
    const line = Number(await item.getAttribute('data-line'));
    await item.click();
    assert.equal(Number(await page.locator('[data-testid=file-content] .ln.hit').getAttribute('data-line')), line);
    assert.match(await page.locator('[data-testid=file-content] .ln.hit').textContent(), /pub fn parse_decision/);
    assert.ok(await page.locator('[data-testid=file-content]').evaluate((p) => p.scrollTop) > 0, 'the view scrolled to the item');
    // A support file is said to be outside the chain.
    await page.evaluate(() => document.querySelector('[data-testid=file-tree] a[data-path="crates/server/tests/http_api.rs"]').click());
    await page.waitForFunction(() => document.querySelector('[data-testid=file-chain]').dataset.stage === 'support', null, { timeout: 10_000 });
    assert.equal(await page.locator('[data-testid=file-chain] li.chain-stage.on').count(), 0);
    assert.match(await page.locator('[data-testid=file-stage-note]').textContent(), /outside the chain/);
    await page.locator('#source-card').screenshot({ path: join(EVIDENCE, 'source-browser.png') });

    // Follow one decision: the finished run's events in order, each with a stage, linked to the code.
    await page.waitForFunction((id) => document.querySelector('[data-testid=follow-events]').dataset.run === id, runId, { timeout: 30_000 });
    const followed = await page.locator('[data-testid=follow-events] li.follow-event').evaluateAll((ls) => ls.map((l) => [Number(l.dataset.seq), l.dataset.phase, l.dataset.stage]));
    assert.deepEqual(followed.map(([s]) => s), seqs, 'every event of the run, in order');
    assert.deepEqual(followed.filter(([, , st]) => !st), [], 'events without a stage');
    const validLink = page.locator('[data-testid=follow-events] li[data-phase="decision.valid"] [data-testid=follow-file][data-path="crates/runtime/src/decision.rs"]').first();
    await validLink.click();
    await page.waitForFunction(() => document.querySelector('[data-testid=file-head]').textContent.startsWith('crates/runtime/src/decision.rs'), null, { timeout: 10_000 });
    assert.equal(await page.locator('[data-testid=file-chain]').getAttribute('data-stage'), 'validate');
    const gateLink = page.locator('[data-testid=follow-events] li[data-phase="final.validated"] [data-testid=follow-file]').nth(1);
    const gatePath = await gateLink.getAttribute('data-path');
    await gateLink.click();
    await page.waitForFunction((p) => document.querySelector('[data-testid=file-head]').textContent.startsWith(p), gatePath, { timeout: 10_000 });
    assert.equal(await page.locator('[data-testid=file-chain]').getAttribute('data-stage'), 'final');
    await page.locator('#source-card').screenshot({ path: join(EVIDENCE, 'follow-one-decision.png') });

    // A final the gate disputes in two parts, held to: an abstention, shown as one — the status named in the
    // page's language, each disputed claim listed, each disputed part marked in the answer's text.
    await page.fill('[data-testid=fixture]', 'crates/server/tests/fixtures/disputed_final.json');
    await page.click('[data-testid=start-btn]');
    assert.equal(await waitTerminal(page, 60_000), 'completed');
    await page.waitForFunction(() => document.querySelector('#verification')?.dataset.status === 'disputed', null, { timeout: 10_000 });
    const badge = await page.locator('#verification .badge').textContent();
    assert.match(badge, /disputed \(abstains/, badge);
    assert.equal(await page.locator('#verification .claim-disputed').count(), 2);
    const shown = await page.locator('[data-testid=final]').textContent();
    assert.equal((shown.match(/\[unverified\]/g) || []).length, 2, shown);

    // Cancel a second, slow run while it is running.
    await page.fill('[data-testid=fixture]', 'crates/server/tests/fixtures/slow_happy.json');
    await page.click('[data-testid=start-btn]');
    await page.waitForFunction(() => document.querySelector('[data-testid=run-status]').dataset.status === 'running', null, { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=timeline] .event').length >= 2, null, { timeout: 30_000 });
    assert.equal(await page.locator('[data-testid=cancel-btn]').isDisabled(), false);
    await page.click('[data-testid=cancel-btn]');
    assert.equal(await waitTerminal(page, 30_000), 'cancelled');
    assert.match(await page.locator('[data-testid=stop-reason]').textContent(), /stop_reason = cancelled/);
    assert.equal(await page.locator('[data-testid=cancel-btn]').isDisabled(), true);
    await page.screenshot({ path: join(EVIDENCE, 'scripted-cancelled.png'), fullPage: true });

    // Bad budgets: the runner's field errors are shown on the form, nothing starts.
    const before = (await page.locator('[data-testid=run-id]').textContent()).trim();
    await page.fill('input[name=max_steps]', '0');
    await page.click('[data-testid=start-btn]');
    await page.waitForFunction(() => document.querySelector('[data-testid=form-errors]').textContent.includes('400'));
    assert.match(await page.locator('[data-testid=form-errors]').textContent(), /invalid_request.*budgets\.max_steps/);
    assert.equal(await page.locator('input[name=max_steps].field-bad').count(), 1);
    assert.equal((await page.locator('[data-testid=run-id]').textContent()).trim(), before);

    // History lists both runs, each linked to its task, which opens in the source browser.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=history] li a').length >= 2);
    const taskLink = page.locator('[data-testid=history] [data-testid=run-task]').first();
    assert.match(await taskLink.textContent(), /^[a-z0-9_]+$/);
    await taskLink.click();
    await page.waitForFunction(() => /fixtures\/tasks\/[a-z0-9_]+\/task\.json/.test(document.querySelector('[data-testid=file-head]').textContent));

    // Evaluation panel: the committed suite reports, each a table per mode x temperature and its chart.
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=eval-report]').length >= 1, null, { timeout: 30_000 });
    const firstReport = page.locator('[data-testid=eval-report]').first();
    assert.ok(await firstReport.locator('table tbody tr').count() >= 1, 'a row per configuration');
    assert.match(await firstReport.textContent(), /\d+\/\d+ \(\d+\.\d%\)/);
    await page.waitForFunction(() => {
      const img = document.querySelector('[data-testid=eval-chart]');
      return img && img.complete && img.naturalWidth > 0;
    }, null, { timeout: 30_000 });
    await page.locator('#eval-card').screenshot({ path: join(EVIDENCE, 'evaluation-panel.png') });
    assert.deepEqual(consoleErrors.filter((e) => !e.includes('400') && !e.includes('503')), [], 'no page errors');
  } finally {
    await close();
  }
});
