// Browser test of the run view's "who wrote each decision" (scripted policy, no model): per decision the fields the
// runtime fixed in its prefix, the fields the policy wrote and the answer the runtime wrote from the policy's slots, the forced share of the policy's tokens, the run's
// forced share among the metrics; a run whose policy cannot count says the share is unknown instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, openBrowser, waitTerminal, metric } from './helpers.mjs';

async function runFixture(page, fixture) {
  await page.goto(`${BASE}/`);
  await page.locator('#policy-row').waitFor({ state: 'visible' });
  await page.selectOption('[data-testid=policy]', 'scripted');
  await page.fill('[data-testid=fixture]', fixture);
  await page.click('[data-testid=start-btn]');
  assert.equal(await waitTerminal(page, 60_000), 'completed');
}

const fieldsOf = (card, part) => card.locator(`[data-testid=${part}] li`).evaluateAll((lis) => lis.map((l) => l.dataset.field));

test('each decision shows what the runtime fixed, what the model wrote and the forced share', { timeout: 120_000 }, async () => {
  const { page, consoleErrors, close } = await openBrowser();
  try {
    await runFixture(page, 'fixtures/guided_share.json');
    const cards = page.locator('[data-testid=written-decision]');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=written-decision]').length === 4, null, { timeout: 30_000 });
    assert.deepEqual(await fieldsOf(cards.nth(1), 'written-runtime'), ['type', 'tool']);
    assert.deepEqual(await fieldsOf(cards.nth(1), 'written-policy'), ['arguments']);
    assert.match(await cards.nth(1).locator('[data-testid=written-runtime]').textContent(), /"expression":"/);
    assert.match(await cards.nth(1).locator('[data-testid=written-share]').textContent(), /4 forced \/ 8 choice \(33 % forced\)/);
    assert.deepEqual(await fieldsOf(cards.nth(3), 'written-runtime'), ['type', 'evidence_ids']);
    assert.deepEqual(await fieldsOf(cards.nth(3), 'written-policy'), ['slots']);
    // The sentence is the runtime's, written from the task's template and the model's slot values.
    assert.deepEqual(await fieldsOf(cards.nth(3), 'written-composed'), ['answer']);
    assert.match(await cards.nth(3).locator('[data-testid=written-share]').textContent(), /50 forced \/ 0 choice \(100 % forced\)/);
    // The run's share: 86 of its 113 output tokens were forced.
    assert.equal(await metric(page, 'forced_share'), '76.1% (86 / 113)');
    assert.deepEqual(consoleErrors, []);

    // A scripted run that reports no share: no prefix (every field the policy's), the share unknown by name.
    await runFixture(page, 'fixtures/happy.json');
    await page.waitForFunction(() => document.querySelectorAll('[data-testid=written-decision]').length === 4, null, { timeout: 30_000 });
    const first = page.locator('[data-testid=written-decision]').first();
    assert.deepEqual(await fieldsOf(first, 'written-runtime'), []);
    assert.deepEqual(await fieldsOf(first, 'written-policy'), ['type', 'tool', 'arguments']);
    assert.equal(await first.locator('[data-testid=written-share]').getAttribute('data-status'), 'unknown');
    assert.match(await first.locator('[data-testid=written-share]').textContent(), /share unknown: scripted policy/);
    assert.equal(await metric(page, 'forced_share'), 'share unknown (4)');
  } finally {
    await close();
  }
});
