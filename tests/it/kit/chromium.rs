//! Chromium from one place: the project's own driver ([`session`], with its door and write guard) and a
//! plain headless Chromium without either ([`Chrome`], chromiumoxide launched directly: a person's browser,
//! or a page's own behaviour observed with nothing of oncepost in between).

use std::path::Path;
use std::time::Duration;

use chromiumoxide::cdp::browser_protocol::input::InsertTextParams;
use chromiumoxide::cdp::browser_protocol::target::SetAutoAttachParams;
use chromiumoxide::error::CdpError;
use chromiumoxide::{Browser, BrowserConfig, Page};
use futures::StreamExt;
use oncepost::browser::{BrowserSession, LaunchOptions};

/// The project's driver with a profile at `profile`, behind the guard as the binary runs it (this harness
/// is not oncepost, so the guard binary is named: without it the headless shell is refused).
pub async fn session(profile: &Path) -> BrowserSession {
    let mut opts = LaunchOptions::new(profile.to_path_buf());
    opts.guard = Some(std::path::PathBuf::from(env!("CARGO_BIN_EXE_oncepost")));
    BrowserSession::launch(&opts)
        .await
        .expect("Chromium launches")
}

/// A plain headless Chromium; close it with [`Chrome::close`]. Every call below is bounded by the bound it
/// was launched with.
pub struct Chrome {
    browser: Browser,
    handler: tokio::task::JoinHandle<()>,
    bound: Duration,
    _profile: Option<tempfile::TempDir>,
}

impl Chrome {
    /// With a fresh temp profile (removed on drop).
    pub async fn launch(bound: Duration) -> Chrome {
        let profile = tempfile::tempdir().expect("profile dir");
        let mut c = Chrome::launch_in(profile.path(), None, bound).await;
        c._profile = Some(profile);
        c
    }

    /// With its profile at `profile`, and a window size when the test looks at the layout.
    pub async fn launch_in(profile: &Path, window: Option<(u32, u32)>, bound: Duration) -> Chrome {
        let mut config = BrowserConfig::builder()
            .chrome_executable(oncepost::browser::find_chromium().expect("chromium"))
            .user_data_dir(profile)
            .no_sandbox()
            .args([
                "disable-gpu",
                "disable-quic",
                "no-first-run",
                "disable-background-networking",
                "disable-component-update",
                "disable-sync",
            ])
            .viewport(None)
            .launch_timeout(bound)
            .request_timeout(bound);
        if let Some((w, h)) = window {
            config = config.window_size(w, h);
        }
        let config = config.build().expect("browser config");
        let (browser, mut handler) = tokio::time::timeout(bound, Browser::launch(config))
            .await
            .expect("launch in time")
            .expect("launch Chromium");
        let handler = tokio::spawn(async move {
            while let Some(ev) = handler.next().await {
                // The browser is gone: stop, or later CDP calls hang instead of failing.
                if let Err(CdpError::Ws(_)) = ev {
                    break;
                }
            }
        });
        Chrome {
            browser,
            handler,
            bound,
            _profile: None,
        }
    }

    pub fn browser(&self) -> &Browser {
        &self.browser
    }

    /// A new tab on `url`.
    pub async fn open(&self, url: &str) -> Page {
        self.try_open(url).await.expect("a new page in time")
    }

    /// A new tab on `url`, or what stopped it (the bound ran out, or Chromium refused), for a test that
    /// tries again rather than fail on one slow load.
    pub async fn try_open(&self, url: &str) -> Result<Page, String> {
        match tokio::time::timeout(self.bound, self.browser.new_page(url)).await {
            Ok(Ok(page)) => Ok(page),
            Ok(Err(e)) => Err(format!("new page: {e}")),
            Err(_) => Err(format!("no page within {:?}", self.bound)),
        }
    }

    /// A new tab on `url` with nothing attached to the workers it starts, as in a person's browser.
    /// chromiumoxide has every page attach its workers waiting for the debugger, then resumes them and
    /// detaches service workers: under load (two CPU burners on 2 cores) a page's service worker was seen
    /// never to come up that way (`register()` never settled, in three browsers in a row). Here the tab is
    /// opened blank, told to attach nothing, then navigated.
    pub async fn try_open_unattached(&self, url: &str) -> Result<Page, String> {
        let page = self.try_open("about:blank").await?;
        let off = SetAutoAttachParams::builder()
            .auto_attach(false)
            .wait_for_debugger_on_start(false)
            .flatten(true)
            .build()
            .map_err(|e| format!("auto-attach params: {e}"))?;
        let steps = async {
            page.execute(off)
                .await
                .map_err(|e| format!("auto-attach off: {e}"))?;
            page.goto(url).await.map_err(|e| format!("navigate: {e}"))?;
            Ok::<(), String>(())
        };
        match tokio::time::timeout(self.bound, steps).await {
            Ok(Ok(())) => Ok(page),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(format!("no page within {:?}", self.bound)),
        }
    }

    pub async fn close(mut self) {
        let _ = tokio::time::timeout(self.bound, self.browser.close()).await;
        let _ = tokio::time::timeout(self.bound, self.browser.wait()).await;
        self.handler.abort();
    }
}

/// Focus `selector` and type `text` into it as a person would (input events, not a value assignment).
pub async fn type_text(page: &Page, selector: &str, text: &str) {
    page.find_element(selector)
        .await
        .unwrap()
        .focus()
        .await
        .unwrap();
    page.execute(InsertTextParams::new(text)).await.unwrap();
}

/// Click `selector` (chromiumoxide scrolls it into view and clicks its centre).
pub async fn click(page: &Page, selector: &str) {
    page.find_element(selector)
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
}
