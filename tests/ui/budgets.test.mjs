// Browser test of the budget form (scripted policy, no model): the inputs come from GET /agent/schema with
// its defaults, and a cleared field falls back to the runner's default instead of sending null (issue 14).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BASE, openBrowser, waitTerminal } from './helpers.mjs';

test('a cleared budget field starts a run with the default', { timeout: 120_000 }, async () => {
  const { page, consoleErrors, close } = await openBrowser();
  try {
    const schema = await (await fetch(`${BASE}/agent/schema`)).json();
    await page.goto(`${BASE}/`);
    // The form has exactly the schema's budget fields, each starting at its default.
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid=budget-fields] input').length === n,
      schema.budgets.ranges.length, { timeout: 30_000 });
    const names = await page.locator('[data-testid=budget-fields] input').evaluateAll((is) => is.map((i) => i.name));
    assert.deepEqual(names, schema.budgets.ranges.map((r) => r.field));
    assert.equal(await page.inputValue('input[name=max_steps]'), String(schema.budgets.defaults.max_steps));

    await page.locator('#policy-row').waitFor({ state: 'visible' });
    await page.selectOption('[data-testid=policy]', 'scripted');
    await page.fill('[data-testid=fixture]', 'fixtures/happy.json');
    await page.fill('input[name=max_steps]', '');
    await page.fill('input[name=max_tool_calls]', '7');
    const sent = page.waitForRequest((r) => r.url().endsWith('/agent/runs') && r.method() === 'POST');
    await page.click('[data-testid=start-btn]');
    const body = JSON.parse((await sent).postData());
    assert.equal('max_steps' in body.budgets, false, `a cleared field is left out: ${JSON.stringify(body.budgets)}`);
    assert.ok(Object.values(body.budgets).every((v) => v !== null), 'no budget is sent as null');
    assert.equal(await waitTerminal(page, 60_000), 'completed');
    assert.equal(await page.locator('[data-testid=form-errors]').textContent(), '');
    // The runner stored its default for the cleared field and the typed value for the other.
    const id = (await page.evaluate(() => location.hash)).replace('#run=', '');
    const run = await (await fetch(`${BASE}/agent/runs/${id}`)).json();
    assert.equal(run.request.budgets.max_steps, schema.budgets.defaults.max_steps);
    assert.equal(run.request.budgets.max_tool_calls, 7);
    assert.deepEqual(consoleErrors, []);
  } finally {
    await close();
  }
});
