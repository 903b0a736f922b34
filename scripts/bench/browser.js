// The Chromium the Playwright side of a benchmark launches: the one oncepost picks (ONCEPOST_CHROMIUM, else
// Chromium's headless shell, else /usr/bin/chromium; src/browser/session.rs), so both sides run the same
// browser. BENCH_PLAYWRIGHT_CHROMIUM overrides it for the Playwright side alone (a reference run).
const fs = require('fs');
function executablePath() {
  if (process.env.BENCH_PLAYWRIGHT_CHROMIUM) return process.env.BENCH_PLAYWRIGHT_CHROMIUM;
  if (process.env.ONCEPOST_CHROMIUM) return process.env.ONCEPOST_CHROMIUM;
  for (const p of ['/usr/lib/chromium/chromium-headless-shell', '/usr/bin/chromium']) {
    try { fs.accessSync(p, fs.constants.X_OK); return p; } catch (e) { /* next */ }
  }
  return '/usr/bin/chromium';
}
// Every Playwright side launches the same way: that browser, with the switches a plain script would give it.
function launchOptions() {
  return {
    executablePath: executablePath(),
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  };
}
// The plain Playwright publish both publish scripts time: on `page` (logged in), open the compose page, fill
// the text, click Publish, wait for the permalink, read the post back in a fresh page of `context` (closed
// after) and compare. Resolves to the permalink; rejects on a read-back mismatch.
async function publishAndReadBack(context, page, base, text) {
  await page.goto(`${base}/compose`);
  await page.locator('#post-text').fill(text);
  await page.locator('#publish').click();
  await page.waitForURL(/\/p\/[a-z0-9]+$/, { timeout: 20000 });
  const permalink = page.url();
  const check = await context.newPage();
  await check.goto(permalink);
  const shown = await check.locator('article.post .post-text').first().textContent();
  await check.close();
  if ((shown || '').trim().normalize('NFC') !== text.trim().normalize('NFC')) throw new Error('read-back mismatch');
  return permalink;
}
module.exports = { executablePath, launchOptions, publishAndReadBack };
