// The same checks as `oncepost probe` on the same 10 locators, done the usual Playwright way (one call per
// state per locator), with the same system Chromium. Prints the median time per round of checks in µs.
// Usage: node probe-playwright.js URL ROUNDS
const { chromium } = require('playwright-core');
const [url, rounds] = [process.argv[2], Number(process.argv[3] || 20)];
(async () => {
  const browser = await chromium.launch(require('./browser').launchOptions());
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  await page.goto(url);
  const locs = [
    page.locator('#post-text'), page.getByRole('textbox', { name: 'Title', exact: true }),
    page.getByRole('textbox', { name: 'Tags', exact: true }), page.locator('#location'), page.locator('#link'),
    page.locator('#alt'), page.getByRole('textbox', { name: 'Summary', exact: true }), page.locator('#mood'),
    page.locator('#audience'), page.getByRole('button', { name: 'Publish', exact: true }),
  ];
  const median = t => { t.sort((a, b) => a - b); return t[Math.floor(t.length / 2)]; };
  // Same checks without the per-locator stability wait (the cheapest fair Playwright variant).
  const quick = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (const l of locs) {
      if (await l.count() !== 1) throw new Error('strict');
      await l.isVisible(); await l.isEnabled(); await l.isEditable().catch(() => false);
      await l.boundingBox();
      await l.evaluate(el => { const r = el.getBoundingClientRect();
        const h = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return [h === el || el.contains(h), el.tabIndex >= 0, el.innerText]; });
    }
    quick.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  const times = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (const l of locs) {
      const count = await l.count();                       // strictness
      if (count !== 1) throw new Error('strict: ' + l + ' matched ' + count);
      await l.isVisible(); await l.isEnabled(); await l.isEditable().catch(() => false);
      const b1 = await l.boundingBox();                    // box, in viewport
      await page.evaluate(() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r))));
      const b2 = await l.boundingBox();                    // stable
      await l.evaluate(el => { const r = el.getBoundingClientRect();  // receives events, focusable, text
        const h = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return [h === el || el.contains(h), el.tabIndex >= 0, el.innerText]; });
      void b1; void b2;
    }
    times.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  console.log(JSON.stringify({ median_us: median(times), median_no_stability_us: median(quick), rounds }));
  await browser.close();
})().catch(e => { console.error(e); process.exit(1); });
