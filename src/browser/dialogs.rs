//! Explicit policy for JavaScript dialogs and popups, with a record of each.
//!
//! An unanswered dialog blocks the page's JavaScript (and every evaluation) until it is answered, so every
//! dialog gets an answer from the policy: alerts are acknowledged, confirm and prompt are dismissed (a
//! probe never agrees to anything), beforeunload is accepted (leaving the page sends nothing). Popups
//! (new targets opened by the page) are recorded and closed; their requests are covered by the write guard.
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chromiumoxide::Page;
use chromiumoxide::cdp::browser_protocol::page::{
    DialogType, EventJavascriptDialogOpening, HandleJavaScriptDialogParams,
};
use chromiumoxide::cdp::browser_protocol::target::{CloseTargetParams, EventTargetCreated};
use futures::StreamExt;
use serde::Serialize;

use super::{BrowserError, BrowserSession};

/// How dialogs are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DialogPolicy {
    /// Accept `confirm()` (default false: dismiss).
    pub accept_confirm: bool,
    /// Accept `beforeunload` (default true: leaving sends nothing).
    pub accept_beforeunload: bool,
    /// Close popups (default true).
    pub close_popups: bool,
}

impl Default for DialogPolicy {
    fn default() -> Self {
        DialogPolicy {
            accept_confirm: false,
            accept_beforeunload: true,
            close_popups: true,
        }
    }
}

/// A dialog or popup that happened, and what the policy did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum DialogEvent {
    /// A JavaScript dialog.
    Dialog {
        /// alert, confirm, prompt or beforeunload.
        dialog_type: String,
        /// Its message.
        message: String,
        /// Whether it was accepted.
        accepted: bool,
        /// Whether answering it worked.
        answered: bool,
    },
    /// A popup window.
    Popup {
        /// Its URL when opened.
        url: String,
        /// Whether it was closed.
        closed: bool,
    },
}

/// Records of dialog/popup events. The watchers that answer and record them live as long as the log: when the
/// last clone is dropped (its page's send is over) both are stopped. The popup watcher listens to the whole
/// browser, so in a warm browser one left running per send would pile up, each closing every later popup
/// again and recording it into a send long over.
#[derive(Debug, Clone, Default)]
pub struct DialogLog {
    events: Arc<Mutex<Vec<DialogEvent>>>,
    /// Set by a press whose contract says so: every `confirm()` from then on is accepted.
    accept_confirm: Arc<AtomicBool>,
    _watchers: Arc<Watchers>,
}

/// The tasks answering one page's dialogs and the browser's popups for one log, stopped on drop.
#[derive(Debug, Default)]
struct Watchers(Vec<tokio::task::AbortHandle>);

impl Drop for Watchers {
    fn drop(&mut self) {
        for w in &self.0 {
            w.abort();
        }
    }
}

/// Counts a session's live popup watchers (see [`BrowserSession::popup_watchers`]): one more while the task
/// runs, one less when it ends or is stopped.
struct Running(Arc<AtomicUsize>);

impl Running {
    fn enter(count: &Arc<AtomicUsize>) -> Running {
        count.fetch_add(1, Ordering::Relaxed);
        Running(count.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl DialogLog {
    /// Everything recorded so far.
    pub fn events(&self) -> Vec<DialogEvent> {
        read(&self.events)
    }

    /// From now on answer OK to every `confirm()` of this page (a press whose contract accepts them).
    pub(crate) fn accept_confirms(&self) {
        self.accept_confirm.store(true, Ordering::SeqCst);
    }
}

fn read(events: &Mutex<Vec<DialogEvent>>) -> Vec<DialogEvent> {
    events.lock().map(|v| v.clone()).unwrap_or_default()
}

fn push(events: &Mutex<Vec<DialogEvent>>, e: DialogEvent) {
    if let Ok(mut v) = events.lock() {
        v.push(e);
    }
}

/// Start answering dialogs on `page` and closing popups of the browser, per `policy`.
pub async fn install(
    session: &BrowserSession,
    page: &Page,
    policy: DialogPolicy,
) -> Result<DialogLog, BrowserError> {
    let live = session.liveness().clone();
    let events: Arc<Mutex<Vec<DialogEvent>>> = Arc::default();
    let accept_confirm = Arc::new(AtomicBool::new(policy.accept_confirm));
    let mut dialogs = live
        .call(
            "listen for dialogs",
            page.event_listener::<EventJavascriptDialogOpening>(),
        )
        .await?;
    let (p, l, lv, yes) = (
        page.clone(),
        events.clone(),
        live.clone(),
        accept_confirm.clone(),
    );
    let answering = tokio::spawn(async move {
        while let Some(ev) = dialogs.next().await {
            let accept = match ev.r#type {
                DialogType::Alert => true,
                DialogType::Confirm => yes.load(Ordering::SeqCst),
                DialogType::Prompt => false,
                DialogType::Beforeunload => policy.accept_beforeunload,
            };
            let r = lv
                .call(
                    "answer a dialog",
                    p.execute(HandleJavaScriptDialogParams::new(accept)),
                )
                .await;
            push(
                &l,
                DialogEvent::Dialog {
                    dialog_type: format!("{:?}", ev.r#type).to_lowercase(),
                    message: ev.message.clone(),
                    accepted: accept,
                    answered: r.is_ok(),
                },
            );
        }
    });
    // Stopped with the log from here on: an error below drops it, and the answering task with it.
    let mut watchers = Watchers(vec![answering.abort_handle()]);
    let mut created = live
        .call(
            "listen for popups",
            session.browser().event_listener::<EventTargetCreated>(),
        )
        .await?;
    let (b, l) = (session.browser().clone(), events.clone());
    let running = Running::enter(session.popup_watcher_count());
    let closing = tokio::spawn(async move {
        let _running = running;
        while let Some(ev) = created.next().await {
            let info = &ev.target_info;
            if info.r#type != "page" || info.opener_id.is_none() {
                continue;
            }
            let closed = policy.close_popups
                && live
                    .call(
                        "close a popup",
                        b.execute(CloseTargetParams::new(info.target_id.clone())),
                    )
                    .await
                    .is_ok();
            push(
                &l,
                DialogEvent::Popup {
                    url: info.url.clone(),
                    closed,
                },
            );
        }
    });
    watchers.0.push(closing.abort_handle());
    Ok(DialogLog {
        events,
        accept_confirm,
        _watchers: Arc::new(watchers),
    })
}
