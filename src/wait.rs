//! One bounded wait for every poll loop: a named condition, a deadline and a poll period.
//!
//! A loop that polls something (a lock, a page's state, a process's exit) checks, asks [`Wait::pause`]
//! whether it may look again, and stops when the answer is no. The bound is a deadline set when the wait
//! starts, so slow checks count against it, and the last pause is cut to the deadline: the final check
//! happens at the deadline, never a whole period after it. What ran out is named by [`Expired`] (what was
//! awaited, for how long), so no caller has to invent a timeout message of its own.
//!
//! Every wait checks at least once, also with a zero bound.
use std::time::{Duration, Instant};

/// A wait that ran out: what was awaited and for how long.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} did not happen within {bound:?}")]
pub struct Expired {
    /// The condition that was awaited.
    pub what: String,
    /// The bound it had.
    pub bound: Duration,
}

/// A bounded poll: see the module docs.
#[derive(Debug, Clone)]
pub struct Wait {
    what: String,
    bound: Duration,
    period: Duration,
    start: Instant,
    deadline: Instant,
}

impl Wait {
    /// Start waiting now for `what`, for at most `bound`, looking again every `period`.
    pub fn new(what: impl Into<String>, bound: Duration, period: Duration) -> Wait {
        let start = Instant::now();
        Wait {
            what: what.into(),
            bound,
            period,
            start,
            // A bound too large for the clock never expires (`Duration::MAX` means "no bound").
            deadline: start
                .checked_add(bound)
                .or_else(|| start.checked_add(Duration::from_secs(3_000_000_000)))
                .unwrap_or(start),
        }
    }

    /// The condition awaited.
    pub fn what(&self) -> &str {
        &self.what
    }

    /// The bound.
    pub fn bound(&self) -> Duration {
        self.bound
    }

    /// Time since the wait started.
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Time left before the deadline (zero once expired).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// The error naming this wait.
    pub fn expiry(&self) -> Expired {
        Expired {
            what: self.what.clone(),
            bound: self.bound,
        }
    }

    /// Between two checks: `Err` when the deadline has passed (check no more), else sleep one period (cut
    /// to the deadline) and `Ok`: check again.
    pub async fn pause(&self) -> Result<(), Expired> {
        let left = self.remaining();
        if left.is_zero() {
            return Err(self.expiry());
        }
        tokio::time::sleep(self.period.min(left)).await;
        Ok(())
    }

    /// Poll `check` until it yields a value, or the deadline passes ([`Expired`], converted into the caller's
    /// error). An error from `check` ends the wait at once.
    pub async fn until<T, E, F>(&self, mut check: F) -> Result<T, E>
    where
        F: AsyncFnMut() -> Result<Option<T>, E>,
        E: From<Expired>,
    {
        loop {
            if let Some(v) = check().await? {
                return Ok(v);
            }
            self.pause().await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_condition_that_holds_is_seen_at_the_first_check() {
        let w = Wait::new("a true thing", Duration::ZERO, Duration::from_secs(60));
        let mut checks = 0;
        let got: Result<u32, Expired> = w
            .until(async || {
                checks += 1;
                Ok(Some(7))
            })
            .await;
        assert_eq!(got, Ok(7));
        assert_eq!(checks, 1);
    }

    #[tokio::test]
    async fn a_zero_bound_still_checks_once_then_names_what_it_awaited() {
        let w = Wait::new("the lock", Duration::ZERO, Duration::from_millis(10));
        let mut checks = 0;
        let got: Result<(), Expired> = w
            .until(async || {
                checks += 1;
                Ok(None)
            })
            .await;
        let e = got.unwrap_err();
        assert_eq!(checks, 1);
        assert_eq!(e.to_string(), "the lock did not happen within 0ns");
        assert_eq!(e.what, "the lock");
    }

    #[tokio::test]
    async fn the_bound_is_kept_and_the_period_paces_the_checks() {
        let t = Instant::now();
        let w = Wait::new(
            "never",
            Duration::from_millis(120),
            Duration::from_millis(40),
        );
        let mut checks = 0;
        let got: Result<(), Expired> = w
            .until(async || {
                checks += 1;
                Ok(None)
            })
            .await;
        assert!(got.is_err());
        let took = t.elapsed();
        // Checks at 0, 40, 80 and 120 ms (the last pause cut to the deadline); never past it by a period.
        assert!(took >= Duration::from_millis(120), "{took:?}");
        assert!((2..=5).contains(&checks), "{checks} checks");
        assert_eq!(got.unwrap_err().bound, Duration::from_millis(120));
    }

    #[tokio::test]
    async fn a_failing_check_ends_the_wait_with_its_own_error() {
        #[derive(Debug, PartialEq)]
        enum E {
            Mine,
            Out(Expired),
        }
        impl From<Expired> for E {
            fn from(e: Expired) -> Self {
                E::Out(e)
            }
        }
        let w = Wait::new("x", Duration::from_secs(60), Duration::from_millis(1));
        let got: Result<(), E> = w.until(async || Err(E::Mine)).await;
        assert_eq!(got, Err(E::Mine));
        let w = Wait::new("y", Duration::ZERO, Duration::from_millis(1));
        let got: Result<(), E> = w.until(async || Ok(None)).await;
        assert!(matches!(got, Err(E::Out(e)) if e.what == "y"));
    }

    #[tokio::test]
    async fn pause_refuses_after_the_deadline() {
        let w = Wait::new("z", Duration::from_millis(30), Duration::from_millis(10));
        let mut pauses = 0;
        while w.pause().await.is_ok() {
            pauses += 1;
        }
        assert!(w.expired());
        // Each pause sleeps at least the period, so at most deadline/period + 1 pauses pass; a loaded machine
        // can only make pauses longer (measured: 1 pause at load 17), so no lower bound is asserted.
        assert!(pauses <= 4, "{pauses}");
        assert_eq!(w.remaining(), Duration::ZERO);
    }
}
