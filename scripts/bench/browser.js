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
module.exports = { executablePath };
