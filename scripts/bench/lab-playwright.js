// The same publish as `oncepost publish` on a lab app, done the plain Playwright way without any durability:
// launch the same system Chromium with the same logged-in cookies oncepost's profile holds (the app's login
// done once beforehand, as for oncepost), open the compose page, fill, click, wait for the app to say it is
// done, then read the post back in a fresh page and compare its words. No store, no lock, no takeover, no
// look-before-write, no evidence. Exit 0 when the read-back matches.
// Usage: node lab-playwright.js dokuwiki|wordpress BASE_URL COOKIES_JSON PAGE_OR_TITLE TEXT
const { chromium } = require('playwright-core');
const [app, base, cookiesFile, name, text] = process.argv.slice(2);
const words = s => (s || '').normalize('NFC').match(/[\p{L}\p{N}]+/gu) || [];
(async () => {
  const browser = await chromium.launch(require('./browser').launchOptions());
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await context.addCookies(JSON.parse(require('fs').readFileSync(cookiesFile, 'utf8'))
    .map(c => ({ name: c.name, value: c.value, domain: c.domain, path: c.path, expires: c.expires, httpOnly: !!c.httpOnly })));
  const page = await context.newPage();
  let permalink, shownSel;
  if (app === 'dokuwiki') {
    await page.goto(`${base}/doku.php?id=${encodeURIComponent(name)}&do=edit`);
    await page.locator('#wiki__text').fill(text);
    await Promise.all([page.waitForURL(/doku\.php\?id=[^&]+$/), page.locator('#edbtn__save').click()]);
    permalink = page.url();
    shownSel = '#dokuwiki__content .page';
  } else {
    await page.goto(`${base}/wp-admin/post-new.php`);
    await page.locator('.editor-post-title__input').fill(name);
    await page.locator('.block-editor-default-block-appender__content').click();
    await page.locator('p[data-type="core/paragraph"][contenteditable="true"]').fill(text);
    await page.locator('.editor-post-publish-panel__toggle').click();
    const answer = page.waitForResponse(r => /posts(\/|%2F)[0-9]+/.test(r.url()) && r.request().method() === 'POST');
    await page.locator('.editor-post-publish-panel .editor-post-publish-button').click();
    const id = (await (await answer).json()).id;
    await page.locator('.post-publish-panel__postpublish').waitFor();
    permalink = `${base}/?p=${id}`;
    shownSel = '.wp-block-post-content';
  }
  const check = await context.newPage();
  await check.goto(permalink);
  const shown = await check.locator(shownSel).first().textContent();
  await browser.close();
  if (words(shown).join(' ') !== words(text).join(' ')) {
    console.error(`read-back mismatch: ${shown}`); process.exit(1);
  }
  console.log(JSON.stringify({ permalink }));
})().catch(e => { console.error(e); process.exit(1); });
