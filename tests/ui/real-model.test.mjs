// Browser test with the real model: a guided run from the page, decided by llama.cpp, end to end.
// Skipped when the runner has no model file, unless FORGE_REQUIRE_MODEL=1 (then that is a failure).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { BASE, EVIDENCE, openBrowser, status, waitTerminal, metric, chartWidth } from './helpers.mjs';

const st = await status();
const available = Boolean(st.model && st.model.available);
const required = process.env.FORGE_REQUIRE_MODEL === '1';

test('real model guided run end to end in the browser', { timeout: 900_000, skip: !available && !required ? 'no model file (set FORGE_REQUIRE_MODEL=1 to require one)' : false }, async () => {
  assert.ok(available, `the runner has no model file (${JSON.stringify(st.model)}); fetch it with cargo xtask model fetch`);
  const { page, consoleErrors, close } = await openBrowser();
  try {
    await page.goto(`${BASE}/`);
    await page.waitForFunction(() => document.querySelector('[data-testid=model-state]').className.includes('ok')
      || document.querySelector('[data-testid=model-state]').className.includes('bad'), null, { timeout: 60_000 });
    assert.equal(await page.locator('[data-testid=model-state].ok').count(), 1, await page.locator('[data-testid=model-state]').textContent());
    assert.ok(await page.locator('[data-testid=model-facts] tr').count() > 3);
    if (await page.locator('#policy-row').isVisible()) await page.selectOption('[data-testid=policy]', 'model');
    await page.selectOption('select[name=mode]', 'guided');
    assert.equal(await page.locator('[data-testid=start-btn]').isDisabled(), false);
    await page.click('[data-testid=start-btn]');
    await page.waitForFunction(() => document.querySelector('[data-testid=run-status]').dataset.status === 'running', null, { timeout: 60_000 });
    await page.screenshot({ path: join(EVIDENCE, 'real-guided-running.png'), fullPage: true });
    const final = await waitTerminal(page, 840_000);
    // Named by outcome, taken before the assertions so a failed run leaves its picture too.
    await page.screenshot({ path: join(EVIDENCE, `real-guided-${final}.png`), fullPage: true });
    const phases = await page.locator('[data-testid=timeline] .event').evaluateAll((es) => es.map((e) => e.dataset.phase));
    assert.ok(phases.includes('model.completed'), `the model decided at least once: ${phases.join(', ')}`);
    assert.equal(final, 'completed', `real guided run ended ${final}: ${await page.locator('[data-testid=stop-reason]').textContent()}`);
    assert.notEqual(await metric(page, 'task_success'), 'not run');
    assert.ok((await chartWidth(page)) > 0, 'chart image decoded');
    assert.deepEqual(consoleErrors.filter((e) => !e.includes('400') && !e.includes('503')), []);
  } finally {
    await close();
  }
});

// The 1.5B model, when `cargo xtask model fetch --model qwen2.5-coder-1.5b` has put it in models/: the picker
// offers it and inspection of exactly that file succeeds with readable facts.
const listed = await (await fetch(`${BASE}/agent/models`)).json();
const big = listed.models.find((m) => m.name === 'qwen2.5-coder-1.5b');

test('pick the 1.5B model in the model panel', { timeout: 120_000, skip: big ? false : 'qwen2.5-coder-1.5b is not in models/ (cargo xtask model fetch --model qwen2.5-coder-1.5b)' }, async () => {
  const { page, close } = await openBrowser();
  try {
    await page.goto(`${BASE}/`);
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=model-picker] option').length > 0, null, { timeout: 30_000 });
    await page.selectOption('[data-testid=model-picker]', big.name);
    await page.waitForFunction(() => document.querySelector('[data-testid=model-state]').className.includes('ok')
      || document.querySelector('[data-testid=model-state]').className.includes('bad'), null, { timeout: 60_000 });
    assert.equal(await page.locator('[data-testid=model-state].ok').count(), 1, await page.locator('[data-testid=model-state]').textContent());
    assert.equal((await page.locator('[data-testid=model-facts] tr[data-field=f_file] td').textContent()).trim(), big.file);
    assert.equal((await page.locator('[data-testid=model-facts] tr[data-field=f_sha256] td').textContent()).trim(), big.sha256);
  } finally {
    await close();
  }
});
