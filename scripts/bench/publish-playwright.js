// The same publish as `oncepost publish`, done the plain Playwright way without any durability: launch the
// same Chromium as oncepost (browser.js), log in, open the compose page, fill the text, click Publish, wait for the
// permalink URL, then read the post back in a fresh page and compare the text. No store, no lock, no
// takeover, no look-before-write, no evidence. Exit 0 when the read-back matches.
// Usage: node publish-playwright.js BASE_URL TEXT
const { chromium } = require('playwright-core');
const [base, text] = [process.argv[2], process.argv[3]];
(async () => {
  const browser = await chromium.launch(require('./browser').launchOptions());
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const page = await context.newPage();
  await page.goto(`${base}/login?account=bench`);
  const permalink = await require('./browser').publishAndReadBack(context, page, base, text);
  await browser.close();
  console.log(JSON.stringify({ permalink }));
})().catch(e => { console.error(e); process.exit(1); });
