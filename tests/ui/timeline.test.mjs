// Browser test of the run view while a run goes on (scripted slow fixture, no model): the timeline only
// appends, so a row the reader expanded stays expanded; a failing poll shows a banner and backs off, and
// the view recovers once polling answers again; a task list that cannot be read is reported, not
// silently kept (issue 14).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, openBrowser, waitTerminal } from './helpers.mjs';

test('expanded timeline rows stay open and polling failures are shown, then recovered', { timeout: 120_000 }, async () => {
  const { page, close } = await openBrowser();
  try {
    await page.goto(`${BASE}/`);
    await page.locator('#policy-row').waitFor({ state: 'visible' });
    await page.selectOption('[data-testid=policy]', 'scripted');
    await page.fill('[data-testid=fixture]', 'crates/server/tests/fixtures/slow_happy.json');
    await page.click('[data-testid=start-btn]');
    const first = page.locator('[data-testid=timeline] .event[data-seq="1"] details');
    await first.waitFor({ timeout: 30_000 });
    await first.locator('summary').click();
    assert.equal(await first.evaluate((d) => d.open), true);
    // More events arrive (the fixture spends 1.5 s per decision); the expanded row is the same, still open.
    const marker = await first.evaluate((d) => { d.dataset.mark = 'kept'; return d.dataset.mark; });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=timeline] .event').length >= 4, null, { timeout: 30_000 });
    assert.equal(await first.evaluate((d) => d.open), true, 'the expanded row collapsed');
    assert.equal(await first.evaluate((d) => d.dataset.mark), marker, 'the row was rebuilt');

    // Polls fail: a banner says so (with the error), polling goes on.
    await page.route('**/agent/runs/run-*?after_seq=*', (route) => route.abort());
    await page.locator('[data-testid=poll-error]').waitFor({ state: 'visible', timeout: 30_000 });
    assert.match(await page.locator('[data-testid=poll-error]').textContent(), /runner_unreachable/);
    await page.unroute('**/agent/runs/run-*?after_seq=*');
    assert.equal(await waitTerminal(page, 60_000), 'completed');
    await page.locator('[data-testid=poll-error]').waitFor({ state: 'hidden', timeout: 30_000 });
    const seqs = await page.locator('[data-testid=timeline] .event').evaluateAll((es) => es.map((e) => Number(e.dataset.seq)));
    assert.deepEqual(seqs, seqs.map((_, i) => i + 1), 'no gap or duplicate after the failed polls');

    // The task list cannot be read: the page says so and keeps the list it has; it clears once it can.
    const options = await page.locator('#task-picker option').count();
    await page.route('**/agent/tasks', (route) => route.abort());
    await page.locator('#task-picker').focus();
    await page.locator('[data-testid=tasks-error]').waitFor({ state: 'visible', timeout: 30_000 });
    assert.match(await page.locator('[data-testid=tasks-error]').textContent(), /runner_unreachable/);
    assert.equal(await page.locator('#task-picker option').count(), options, 'the shown list was kept');
    await page.unroute('**/agent/tasks');
    await page.locator('[data-testid=start-btn]').focus();
    await page.locator('#task-picker').focus();
    await page.locator('[data-testid=tasks-error]').waitFor({ state: 'detached', timeout: 30_000 });
  } finally {
    await close();
  }
});
