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
module.exports = { executablePath, launchOptions };
