// A reference for the warm worker: the plain Playwright publish of publish-playwright.js, N times in one
// process with the browser and its logged-in context kept open, a fresh compose page and a fresh read-back
// page per post (closed after it), as a warm worker does. No store, no look-before-write, no evidence.
// Prints one JSON line: the median and each post's wall time in ms (the launch and login not counted).
// Usage: node publish-playwright-warm.js BASE_URL POSTS
const { chromium } = require('playwright-core');
const [base, posts] = [process.argv[2], Number(process.argv[3] || 8)];
(async () => {
  const browser = await chromium.launch(require('./browser').launchOptions());
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  const login = await context.newPage();
  await login.goto(`${base}/login?account=bench`);
  await login.close();
  const each = [];
  for (let i = 0; i < posts; i++) {
    const text = `bench playwright warm ${i} ${Date.now()} ${Math.random().toString(36).slice(2)}`;
    const t0 = process.hrtime.bigint();
    const page = await context.newPage();
    await require('./browser').publishAndReadBack(context, page, base, text);
    await page.close();
    each.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  await browser.close();
  const sorted = [...each].sort((a, b) => a - b);
  console.log(JSON.stringify({ median_ms: sorted[Math.floor(sorted.length / 2)], each_ms: each }));
})().catch(e => { console.error(e); process.exit(1); });
