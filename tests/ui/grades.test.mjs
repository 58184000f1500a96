// Browser test of the Course section's class grades: a grades.json written by `cargo xtask grade` (the synthetic
// class of xtask/tests/grade_class.rs, kept as tests/ui/grades.sample.json and checked against the schema by
// xtask's own tests) chosen in the browser and shown as stages × learners, what failed, the copies and the
// charts' data, in English and in Chinese — without any upload; a malformed file refused by name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASE, EVIDENCE, ROOT, openBrowser } from './helpers.mjs';

const SAMPLE = join(ROOT, 'tests', 'ui', 'grades.sample.json');

test('class grades: a grades.json chosen in the browser, in two languages', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'forge-grades-'));
  const { page, consoleErrors, close } = await openBrowser();
  // Every request with what it carries: the chosen file's content must never leave the browser.
  const requests = [];
  page.on('request', (r) => requests.push(`${r.method()} ${r.url()} ${r.postData() || ''}`));
  try {
    await page.goto(`${BASE}/`);
    await page.evaluate(() => localStorage.setItem('forge.lang', 'en'));
    await page.reload();
    await page.waitForFunction(() => document.querySelector('[data-testid=class-grades]')?.dataset.ready === 'true', null, { timeout: 20_000 });
    assert.match(await page.locator('[data-testid=grades-body]').textContent(), /No class file chosen/);

    await page.setInputFiles('[data-testid=grades-file]', SAMPLE);
    await page.waitForFunction(() => document.querySelector('[data-testid=grades-body]').dataset.loaded === 'true');
    // Stages × learners: one row per learner, each cell the grade.
    const table = page.locator('[data-testid=grades-table]');
    assert.equal(await table.locator('tbody tr').count(), 11);
    const cell = (name) => page.locator(`[data-testid=grade-${name}-01]`);
    assert.equal(await cell('honest').getAttribute('data-outcome'), 'passed');
    assert.equal(await cell('fault_left').textContent(), 'failed');
    assert.equal(await cell('bogus_transfer').getAttribute('data-outcome'), 'transfer_not_caught');
    assert.equal(await cell('forks').textContent(), 'refused');
    assert.match(await cell('loops_forever').getAttribute('title'), /time limit/);
    // What failed, with the reason and the failing tests named.
    assert.match(await page.locator('[data-testid=why-fault_left-01]').textContent(), /stage::adds_two_numbers/);
    assert.match(await page.locator('[data-testid=why-opens_socket-01]').textContent(), /std::net/);
    assert.equal(await page.locator('[data-testid=why-honest-01]').count(), 0, 'a pass has no reason to show');
    // Copies, with the pairs named.
    const copies = await page.locator('[data-testid=grades-copies]').textContent();
    assert.match(copies, /identical — twin_a & twin_b/);
    assert.match(copies, /copy of the reference — ref_copy & the reference/);
    // The charts' data as bars.
    assert.match(await page.locator('[data-testid=chart-pass-rate]').textContent(), /01-holds: 36% \(4 of 11\)/);
    assert.match(await page.locator('[data-testid=chart-failing-tests]').textContent(), /stage::adds_two_numbers: 1 learner/);
    assert.match(await page.locator('[data-testid=chart-time-to-pass]').textContent(), /42 min \(n=1\)/);
    assert.ok(await page.locator('[data-testid=chart-pass-rate] rect').count() >= 1);
    await page.screenshot({ path: join(EVIDENCE, 'class-grades-en.png'), fullPage: true });

    // The page's one language toggle switches the class view too.
    await page.click('[data-testid=lang-toggle]');
    await page.waitForFunction(() => document.querySelector('[data-testid=grade-forks-01]').textContent === '被拒绝');
    assert.equal(await cell('honest').textContent(), '通过');
    assert.match(await page.locator('[data-testid=grades-copies]').textContent(), /完全相同 —— twin_a & twin_b/);
    assert.match(await page.locator('[data-testid=chart-pass-rate]').textContent(), /36%（11 份中 4 份）/);
    assert.match(await page.locator('[data-testid=class-grades] h2').textContent(), /全班成绩/);
    await page.screenshot({ path: join(EVIDENCE, 'class-grades-zh.png'), fullPage: true });
    await page.click('[data-testid=lang-toggle]');

    // A malformed file is refused with the problem named; the table goes.
    const sample = JSON.parse(readFileSync(SAMPLE, 'utf8'));
    sample.learners[0].stages[0].outcome = 'cheated';
    const bad = join(dir, 'bad-grades.json');
    writeFileSync(bad, JSON.stringify(sample));
    await page.setInputFiles('[data-testid=grades-file]', bad);
    await page.waitForFunction(() => document.querySelector('[data-testid=grades-error]').textContent.length > 0);
    assert.match(await page.locator('[data-testid=grades-error]').textContent(), /bad-grades\.json was refused: .*"cheated" is not a grade/);
    assert.equal(await page.locator('[data-testid=grades-table]').count(), 0);

    // Nothing was uploaded: no request went elsewhere or carried the file's content.
    assert.deepEqual(requests.filter((r) => !r.includes(` ${BASE}/`) || /twin_a|cheated|grades\.json/.test(r)), []);
    assert.deepEqual(consoleErrors, []);
  } finally {
    await close();
    rmSync(dir, { recursive: true, force: true });
  }
});
