//! The `oncepost` binary against one data dir: the environment every test gives it, and its output.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::BIN;

/// How long one command of a test may run: the longest (a publish through a slow fault, a conform run) take
/// well under a minute; past this the command is stuck, and [`output_within`] says where.
pub const RUN_BOUND: std::time::Duration = std::time::Duration::from_secs(300);

/// `oncepost` with `ONCEPOST_HOME` set to one data dir and, when the store is not that dir's SQLite file,
/// `ONCEPOST_STORE` set to a store URL. The caller's `ONCEPOST_STORE` and `ONCEPOST_BASE_URL` never leak in.
#[derive(Debug, Clone)]
pub struct Oncepost {
    home: PathBuf,
    store: Option<String>,
}

impl Oncepost {
    pub fn new(home: impl Into<PathBuf>) -> Oncepost {
        Oncepost {
            home: home.into(),
            store: None,
        }
    }

    /// The same data dir with its store at `store` (a PostgreSQL URL or a file path); `None`: the default.
    pub fn with_store(mut self, store: Option<String>) -> Oncepost {
        self.store = store;
        self
    }

    pub fn home(&self) -> &Path {
        &self.home
    }

    pub fn store(&self) -> Option<&str> {
        self.store.as_deref()
    }

    /// The command, not started (killed if the test drops it).
    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args(args)
            .env("ONCEPOST_HOME", &self.home)
            .env_remove("ONCEPOST_STORE")
            .env_remove("ONCEPOST_BASE_URL")
            .kill_on_drop(true);
        if let Some(s) = &self.store {
            cmd.env("ONCEPOST_STORE", s);
        }
        cmd
    }

    /// Run to the end: (exit code, -1 for a signal; stdout; stderr).
    pub async fn run(&self, args: &[&str]) -> (i32, String, String) {
        match output_within(self.command(args), RUN_BOUND).await {
            Ok(out) => output_of(&out),
            Err(why) => panic!("oncepost {args:?}: {why}"),
        }
    }

    /// [`Oncepost::run`] with stdout parsed as JSON (`Value::Null` when it is not JSON).
    pub async fn run_json(&self, args: &[&str]) -> (i32, Value, String) {
        let (code, out, err) = self.run(args).await;
        (code, json_or_null(&out), err)
    }

    /// `sweep` (which must succeed), then, once `propagation` has passed, `reconcile --json --key KEY`: its
    /// (exit code, the JSON or `Value::Null`, stderr).
    pub async fn sweep_then_reconcile(
        &self,
        key: &str,
        propagation: std::time::Duration,
    ) -> (i32, Value, String) {
        let (code, out, err) = self.run(&["sweep", "--json"]).await;
        assert_eq!(code, 0, "sweep: {out} {err}");
        tokio::time::sleep(propagation).await;
        self.run_json(&["reconcile", "--json", "--key", key]).await
    }

    /// `intents show --json KEY`, which must succeed.
    pub async fn show(&self, key: &str) -> Value {
        let (code, out, err) = self.run(&["intents", "show", "--json", key]).await;
        assert_eq!(code, 0, "intents show: {out} {err}");
        serde_json::from_str(&out).expect("intents show --json")
    }
}

/// (exit code, -1 for a signal; stdout; stderr) of a finished process.
pub fn output_of(out: &std::process::Output) -> (i32, String, String) {
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `text` as JSON, or `Value::Null` (a command that printed no JSON; the test's assertion says why).
pub fn json_or_null(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::Null)
}

/// Run `cmd` to its end (stdout and stderr piped), within `bound`. Past the bound the process is killed and
/// the error says what was stuck, so a rare hang explains itself in the log: the command still running
/// (each thread's kernel state and, when gdb is installed, every thread's stack), or the command gone but
/// its output pipes held open by another process (which one).
pub async fn output_within(
    mut cmd: tokio::process::Command,
    bound: std::time::Duration,
) -> Result<std::process::Output, String> {
    use std::os::fd::AsRawFd;
    use tokio::io::AsyncReadExt;
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|e| format!("cannot start: {e}"))?;
    let pid = child.id().unwrap_or(0);
    let mut out = child.stdout.take().ok_or("no stdout pipe")?;
    let mut err = child.stderr.take().ok_or("no stderr pipe")?;
    let pipes = [pipe_inode(out.as_raw_fd()), pipe_inode(err.as_raw_fd())];
    let (mut so, mut se) = (Vec::new(), Vec::new());
    let deadline = tokio::time::Instant::now() + bound;
    let mut status = None;
    let ran = tokio::time::timeout_at(deadline, async {
        let (a, b, s) = tokio::join!(out.read_to_end(&mut so), err.read_to_end(&mut se), async {
            let s = child.wait().await;
            status = s.as_ref().ok().copied();
            s
        });
        (a, b, s)
    })
    .await;
    match ran {
        Ok((Ok(_), Ok(_), Ok(status))) => Ok(std::process::Output {
            status,
            stdout: so,
            stderr: se,
        }),
        Ok((a, b, s)) => Err(format!(
            "cannot read the command's end: {:?} {:?} {:?}",
            a.err(),
            b.err(),
            s.err()
        )),
        Err(_) => {
            let still = matches!(child.try_wait(), Ok(None));
            let why = if still {
                format!(
                    "pid {pid} still running after {bound:?}:\n{}",
                    process_report(pid)
                )
            } else {
                format!(
                    "pid {pid} ended ({:?}) but its output pipes stayed open after {bound:?}; held by: {}",
                    status.or_else(|| child.try_wait().ok().flatten()),
                    pipe_holders(&pipes)
                )
            };
            let _ = child.kill().await;
            Err(format!(
                "{why}\nstdout so far: {}\nstderr so far: {}",
                String::from_utf8_lossy(&so),
                String::from_utf8_lossy(&se)
            ))
        }
    }
}

/// The inode of the pipe behind `fd` (as `/proc/*/fd` links name it: `pipe:[N]`).
fn pipe_inode(fd: std::os::fd::RawFd) -> Option<String> {
    std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .ok()
        .map(|p| p.to_string_lossy().into_owned())
}

/// Every process (pid and command line) holding one of `pipes` open.
fn pipe_holders(pipes: &[Option<String>]) -> String {
    let me = std::process::id().to_string();
    let mut found = Vec::new();
    for proc in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let pid = proc.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) || pid == me {
            continue;
        }
        let holds = std::fs::read_dir(proc.path().join("fd"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|fd| {
                let link = std::fs::read_link(fd.path()).ok();
                let link = link.map(|l| l.to_string_lossy().into_owned());
                link.is_some() && pipes.iter().any(|p| p.is_some() && *p == link)
            });
        if holds {
            let cmdline = std::fs::read(proc.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push(format!("{pid} ({})", cmdline.trim()));
        }
    }
    if found.is_empty() {
        "nobody else (the test's own reader?)".into()
    } else {
        found.join(", ")
    }
}

/// Each thread of `pid`: name, state and kernel wait channel; then, when gdb is installed, every thread's
/// stack (bounded to 60 s).
fn process_report(pid: u32) -> String {
    let mut report = String::new();
    let tasks = format!("/proc/{pid}/task");
    for task in std::fs::read_dir(&tasks).into_iter().flatten().flatten() {
        let p = task.path();
        let read = |f: &str| {
            std::fs::read_to_string(p.join(f))
                .unwrap_or_default()
                .trim()
                .to_string()
        };
        let stat = read("stat");
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.split(' ').next())
            .unwrap_or("?")
            .to_string();
        report.push_str(&format!(
            "  thread {} {:<16} state {state} wchan {}\n",
            task.file_name().to_string_lossy(),
            read("comm"),
            read("wchan")
        ));
    }
    let gdb = std::process::Command::new("timeout")
        .args(["60", "gdb", "-p", &pid.to_string(), "-batch", "-nx"])
        .args(["-ex", "thread apply all bt 30"])
        .stdin(std::process::Stdio::null())
        .output();
    match gdb {
        Ok(o) if o.status.success() => {
            report.push_str(&String::from_utf8_lossy(&o.stdout));
        }
        Ok(o) => report.push_str(&format!(
            "  (no stacks: gdb {}: {})\n",
            o.status,
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => report.push_str(&format!("  (no stacks: {e})\n")),
    }
    report
}
