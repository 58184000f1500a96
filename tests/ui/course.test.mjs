// Browser test of the page's Course section: a guide rendered in English and, through the page's
// language toggle, in Chinese; hints one click per level; the answer section behind a click; and the
// local self-check turning a chosen verification.json into the five states per stage — learner and
// instructor files, and a malformed one refused with a message — without any upload.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASE, EVIDENCE, openBrowser } from './helpers.mjs';

const STATES_EN = ['not started', 'reading', 'lab downloaded', 'test results read', 'self-check passed'];

/// A learner-mode verification.json as `cargo xtask check` writes it, for two stages.
function learnerReport() {
  const run = (tests) => ({
    variant: 'learner', source_dir: 'learn/x', targets: ['stage'], build_ok: true, build_errors: [], build_ms: 1, run_ms: 1,
    timed_out: false, passed: tests.filter((t) => t.outcome === 'passed').length, failed: tests.filter((t) => t.outcome === 'failed').length, ignored: 0, tests,
  });
  const stage = (id, outcome, passed, failed, caught) => ({
    stage_id: id, experiment_id: `single-agent-loop-${id}`, fault_id: null, outcome, detail: `${failed.length} failing`,
    expected: { fail: [], pass: [...passed, ...failed], excerpt: null },
    observed: { failed, passed, excerpt_found: null },
    cached: false, cached_from: null, cache_key: '0'.repeat(64), duration_ms: 3, files: {},
    runs: {
      solution: null,
      fault: caught ? { ...run(caught.map((name) => ({ name, target: 'transfer', outcome: 'failed' }))), variant: 'fault' } : null,
      learner: run([...passed.map((name) => ({ name, target: 'stage', outcome: 'passed' })), ...failed.map((name) => ({ name, target: 'stage', outcome: 'failed' }))]),
    },
    evidence_dir: null,
  });
  return {
    format_version: 1, mode: 'learner', generator: 'cargo xtask check 0.1.0',
    toolchain: { rustc: 'rustc 1.95.0', rustc_commit: 'x', host_triple: 'x86_64-unknown-linux-gnu', cargo: 'cargo 1.95.0' },
    host: { os: 'linux', os_release: null, kernel: null, arch: 'x86_64', cpus: 2, memory_mib: null },
    started_at: '2026-01-01T00:00:00.000Z', finished_at: '2026-01-01T00:00:01.000Z', duration_ms: 1000,
    options: { selected: ['01-action-selection', '02-observation-state'], no_cache: true, jobs: 2, timeout_s: 60 },
    all_contracts_hold: false, stages_tree_hash: '0'.repeat(64), cargo_lock_blake3: null, summary: { passed: 1, failed: 1 },
    stages: [
      stage('01-action-selection', 'passed', ['selects_the_only_best_matching_tool', 'ambiguous_tools_require_clarification'], [], ['office_research_with_two_searchers_asks_which_one']),
      stage('02-observation-state', 'failed', ['results_are_recorded_in_order'], ['retryable_error_does_not_end_the_loop'], null),
    ],
  };
}

async function states(page) {
  return page.locator('[data-testid=course-stages] li').evaluateAll((lis) => lis.map((l) => Number(l.dataset.stateLevel)));
}

test('course view: guides in two languages, hints, and the local self-check', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'forge-selfcheck-'));
  const { page, consoleErrors, close } = await openBrowser();
  // Every request the page makes after the self-check starts; a chosen file must never leave the browser.
  const requests = [];
  page.on('request', (r) => requests.push(`${r.method()} ${r.url()}`));
  try {
    await page.goto(`${BASE}/`);
    await page.waitForFunction(() => document.querySelector('[data-testid=course]').dataset.ready === 'true', null, { timeout: 20_000 });
    const rows = page.locator('[data-testid=course-stages] li');
    assert.equal(await rows.count(), 7);
    assert.deepEqual(await states(page), [0, 0, 0, 0, 0, 0, 0], 'a fresh browser has read nothing');
    assert.match(await page.locator('[data-testid=course-progress]').textContent(), /learn\/progress\.json/);

    // Open stage 06: the guide renders (headings, code, lists), and the stage becomes "reading".
    await page.click('[data-testid=course-open-06]');
    const guide = page.locator('[data-testid=course-guide]');
    await page.waitForFunction(() => document.querySelector('[data-testid=guide-title]')?.textContent.includes('Stop conditions'));
    assert.equal(await guide.getAttribute('data-lang'), 'en');
    assert.ok(await guide.locator('section[data-section=predict_first] pre code').count() >= 1, 'code blocks render');
    assert.ok(await guide.locator('section[data-section=what_it_is] ol li').count() >= 5, 'nested ordered list renders');
    assert.ok(await guide.locator('section[data-section=mastery_evidence] table tr').count() >= 4, 'tables render');
    assert.equal(await page.locator('[data-testid=course-state-06]').textContent(), 'reading');
    // The guide's markdown is not leaked as raw syntax.
    assert.ok(!(await guide.textContent()).includes('## '), 'no raw markdown headings');

    // Hints: one level per click, never more.
    const hints = guide.locator('[data-testid=hints]');
    assert.equal(await hints.locator('.hint-text').count(), 0);
    await hints.locator('[data-testid=hint-next]').click();
    assert.equal(await guide.locator('[data-testid=hint-1]').count(), 1);
    assert.equal(await guide.locator('[data-testid=hint-2]').count(), 0);
    assert.match(await guide.locator('[data-testid=hint-1]').textContent(), /verified/);
    // The answer section stays behind a click.
    const after = guide.locator('[data-testid=after-pass]');
    assert.equal(await after.isHidden(), true, 'After it passes is hidden at first');
    await guide.locator('[data-testid=after-pass-toggle]').click();
    assert.equal(await guide.locator('[data-testid=after-pass]').isVisible(), true);
    assert.match(await guide.locator('[data-testid=after-pass]').textContent(), /Answer: B\./);
    await page.screenshot({ path: join(EVIDENCE, 'course-guide-en.png'), fullPage: true });

    // The same toggle as the rest of the page switches the guide to Chinese.
    await page.click('[data-testid=lang-toggle]');
    await page.waitForFunction(() => document.querySelector('[data-testid=guide-title]')?.textContent.includes('停止条件'));
    assert.equal(await guide.getAttribute('data-lang'), 'zh-CN');
    assert.ok(await guide.locator('section[data-section=hints]').count() === 1);
    assert.match(await guide.locator('section[data-section=problem] h4').textContent(), /问题从哪里来/);
    assert.equal(await page.locator('[data-testid=course-state-06]').textContent(), '阅读中');
    await page.screenshot({ path: join(EVIDENCE, 'course-guide-zh.png'), fullPage: true });
    // And the guide's own link back to English switches the page back.
    await guide.locator('[data-testid=guide-lang-link]').first().click();
    await page.waitForFunction(() => document.querySelector('[data-testid=guide-title]')?.textContent.includes('Stop conditions'));

    // Self-check, learner file: stage 01 passed, stage 02 read but failing, 06 still reading.
    const before = requests.length;
    const good = join(dir, 'verification.json');
    writeFileSync(good, JSON.stringify(learnerReport()));
    await page.setInputFiles('[data-testid=selfcheck-file]', good);
    await page.waitForFunction(() => document.querySelector('[data-testid=selfcheck-summary]').dataset.mode === 'learner');
    const levels = await states(page);
    assert.deepEqual(levels, [4, 3, 0, 0, 0, 1, 0]);
    assert.equal(await page.locator('[data-testid=course-state-01]').textContent(), STATES_EN[4]);
    assert.equal(await page.locator('[data-testid=course-state-02]').textContent(), STATES_EN[3]);
    assert.match(await page.locator('[data-testid=course-why-01]').textContent(), /office_research_with_two_searchers_asks_which_one/);
    assert.match(await page.locator('[data-testid=course-why-02]').textContent(), /retryable_error_does_not_end_the_loop/);
    assert.equal(await page.locator('[data-testid=selfcheck-error]').textContent(), '');

    // Instructor file (mode reference): the contract verdicts decide.
    const reference = learnerReport();
    reference.mode = 'reference';
    reference.stages = reference.stages.map((s, k) => ({ ...s, outcome: k === 0 ? 'holds' : 'collateral',
      expected: { fail: [k === 0 ? 'ambiguous_tools_require_clarification' : 'retryable_error_does_not_end_the_loop'], pass: [], excerpt: 'x' },
      detail: k === 0 ? 'only one fails' : 'besides the target, others fail too' }));
    const instructor = join(dir, 'instructor.json');
    writeFileSync(instructor, JSON.stringify(reference));
    await page.setInputFiles('[data-testid=selfcheck-file]', instructor);
    await page.waitForFunction(() => document.querySelector('[data-testid=selfcheck-summary]').dataset.mode === 'reference');
    assert.deepEqual((await states(page)).slice(0, 2), [4, 3]);
    assert.match(await page.locator('[data-testid=course-why-01]').textContent(), /holds: .*ambiguous_tools_require_clarification/);
    assert.match(await page.locator('[data-testid=course-why-02]').textContent(), /collateral/);
    await page.screenshot({ path: join(EVIDENCE, 'course-selfcheck.png'), fullPage: true });

    // Malformed files are refused with a message naming the problem; no states come from them.
    const cases = [
      ['not-json.json', '{"format_version": 1, "mode": ', /not JSON/],
      ['wrong-mode.json', JSON.stringify({ ...learnerReport(), mode: 'teacher' }), /mode must be "learner" or "reference" \(instructor\), got "teacher"/],
      ['unknown-stage.json', JSON.stringify({ ...learnerReport(), stages: [{ ...learnerReport().stages[0], stage_id: '09-nothing' }] }), /stages\[0\]\.stage_id "09-nothing" is not a stage of this course/],
      ['bad-outcome.json', JSON.stringify({ ...learnerReport(), stages: [{ ...learnerReport().stages[0], outcome: 'holds' }] }), /"holds" is not a learner outcome/],
    ];
    for (const [name, content, message] of cases) {
      const path = join(dir, name);
      writeFileSync(path, content);
      await page.setInputFiles('[data-testid=selfcheck-file]', path);
      await page.waitForFunction((n) => document.querySelector('[data-testid=selfcheck-error]').textContent.includes(n), name);
      assert.match(await page.locator('[data-testid=selfcheck-error]').textContent(), message);
      assert.deepEqual((await states(page)).slice(0, 2), [0, 0], `${name}: a refused file yields no states`);
    }
    // Nothing was sent anywhere while files were chosen and read.
    const sent = requests.slice(before).filter((r) => !r.startsWith('GET ') || !r.startsWith(`GET ${BASE}/`));
    assert.deepEqual(sent, [], 'the self-check made no request with the file');
    assert.deepEqual(requests.slice(before).filter((r) => r.startsWith('POST')), []);

    // Script errors fail the test; HTTP statuses of other panels (e.g. the model inspection's 503
    // on a machine without a model) are not the course view's.
    assert.deepEqual(consoleErrors.filter((e) => !e.startsWith('Failed to load resource')), []);
  } finally {
    await close();
    rmSync(dir, { recursive: true, force: true });
  }
});
