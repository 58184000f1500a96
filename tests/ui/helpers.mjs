// Shared browser-test helpers: launch Debian's chromium through playwright-core with a fresh profile.
// Not a test file itself; the runner under test is started by run.sh (FORGE_UI_BASE says where).
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BASE = process.env.FORGE_UI_BASE;
// Screenshots differ on every run, so they go under target/ (git-ignored), never into evidence/.
export const EVIDENCE = process.env.FORGE_EVIDENCE_DIR || join(ROOT, 'target', 'ui-screenshots');
export const CHROMIUM = process.env.FORGE_CHROMIUM || '/usr/bin/chromium';

if (!BASE) throw new Error('FORGE_UI_BASE is not set: run tests/ui/run.sh, which starts the runner');
mkdirSync(EVIDENCE, { recursive: true });

export async function openBrowser() {
  const profile = mkdtempSync(join(tmpdir(), 'forge-ui-profile-'));
  // launchPersistentContext is playwright's way of passing a user data dir: a fresh one per test file.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = context.pages()[0] || await context.newPage();
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(String(e)));
  const close = async () => { await context.close(); rmSync(profile, { recursive: true, force: true }); };
  return { context, page, consoleErrors, close };
}

export async function status() {
  const r = await fetch(`${BASE}/status`);
  return r.json();
}

/// Wait until the run badge shows a terminal status; returns it.
export async function waitTerminal(page, timeout) {
  await page.waitForFunction(() => {
    const s = document.querySelector('[data-testid=run-status]').dataset.status;
    return ['completed', 'failed', 'cancelled', 'stopped'].includes(s);
  }, null, { timeout, polling: 200 });
  return page.locator('[data-testid=run-status]').getAttribute('data-status');
}

export async function metric(page, key) {
  return (await page.locator(`[data-metric=${key}] .metric-value`).textContent()).trim();
}

/// Wait for the chart <img> to load and return its natural width (0 if it failed to decode).
export async function chartWidth(page, timeout = 15000) {
  const img = page.locator('[data-testid=chart-img]');
  await img.waitFor({ timeout });
  await page.waitForFunction(() => document.querySelector('[data-testid=chart-img]').complete, null, { timeout });
  return img.evaluate((i) => i.naturalWidth);
}
