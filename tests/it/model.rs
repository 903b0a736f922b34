//! The publish protocol as a model, checked exhaustively with `stateright` (docs/model.md).
//!
//! One delivery key; three workers, a sweeper, a reconciler and an operator; a platform that counts the
//! create requests it received. Time is abstracted: any lease may run out at any step (an environment
//! action). Every change of the intent's state goes through the code's own [`Status::next`], so the model's
//! table cannot drift from the store's; the guards (claim, fence, lease) are the store's, written once here.
//! A worker may crash at every step: it loses everything it held in memory and starts over.
//!
//! Each worker is a host: before it begins, it takes the account's lease (a fence of its own; the lease may run
//! out at any step, and another host may then take it over), and it gives it back when it is done.
//!
//! Checked, in every reachable state: at most one create request per delivery key; `published` is never
//! left; `indeterminate` never returns to `pending`; no fenced-out worker (an older generation) ever
//! authorizes or settles; no host authorizes while another holds the account's live lease. Three deliberately broken
//! models (the sweep returns an expired dispatch to `pending`; authorization without the generation fence;
//! authorization without the account lease) are caught, with the counterexample trace printed.
use oncepost::store::{EventKind, Status};
use stateright::{Checker, Model, Property};

/// Generations issued at most (each `begin` issues one): bounds the state space.
const MAX_GENERATION: u8 = 8;
/// Account-lease fences issued at most (each new holder gets one).
const MAX_LEASE_FENCE: u8 = 4;
const WORKERS: usize = 3;

/// Where one worker is, in its own memory (lost on a crash).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Idle,
    /// `begin` gave it the claim with this generation.
    Claimed(u8),
    /// Its authorization passed: it may press.
    Authorized(u8),
    /// It pressed: the create request left.
    Sent(u8),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct World {
    state: Status,
    /// The store's generation (the fence): the last one `begin` issued.
    generation: u8,
    /// A claim (pending) or dispatch (authorized) lease is live.
    lease_live: bool,
    /// The reconcile lookup of the current indeterminate spell is spent.
    lookup_spent: bool,
    workers: [Phase; WORKERS],
    /// The account lease each worker believes it holds (its fence), in its own memory (lost on a crash).
    held: [Option<u8>; WORKERS],
    /// The store's account lease: holder and fence, and whether it is still live.
    lease_row: Option<(usize, u8)>,
    lease_row_live: bool,
    /// The last account-lease fence issued.
    lease_fence: u8,
    /// Create requests the platform received.
    creates: u8,
    /// History, for the properties.
    was_published: bool,
    was_indeterminate: bool,
    fenced_out_acted: bool,
    /// A host authorized while another host (or a newer fence) held the account's live lease.
    authorized_while_leased_elsewhere: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Action {
    /// The host takes the account's lease (free, run out, or its own).
    TakeLease(usize),
    /// The host gives the lease back (its publish is over).
    GiveLeaseBack(usize),
    /// The account lease runs out (the holder stalled or is cut off).
    AccountLeaseRunsOut,
    Begin(usize),
    Authorize(usize),
    Press(usize),
    /// The worker proves nothing left (before pressing) and settles `failed`.
    SettleNotSent(usize),
    /// After pressing: the read-back found it, or nobody can know.
    SettlePublished(usize),
    SettleIndeterminate(usize),
    /// Look-before-write found the post before any press (claim held).
    FoundBeforeWrite(usize),
    Crash(usize),
    LeaseRunsOut,
    Sweep,
    Reconcile,
    OperatorPark,
    OperatorRetry,
    OperatorResolve,
}

/// How the model is (deliberately) broken, to show the checker catches it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flaw {
    None,
    /// The sweep returns an expired dispatch to `pending` instead of `indeterminate`.
    SweepToPending,
    /// Authorization does not check the worker's generation against the store's.
    NoFence,
    /// Authorization does not check the account lease.
    NoAccountLease,
}

struct Protocol {
    flaw: Flaw,
    /// Check only the property of this name (a broken model's search then stops at its first, shortest,
    /// counterexample instead of exploring on).
    only: Option<&'static str>,
}

fn apply(w: &mut World, event: EventKind) -> bool {
    match w.state.next(event) {
        Ok(to) => {
            w.state = to;
            w.was_published |= to == Status::Published;
            w.was_indeterminate |= to == Status::Indeterminate;
            true
        }
        Err(_) => false,
    }
}

impl Model for Protocol {
    type State = World;
    type Action = Action;

    fn init_states(&self) -> Vec<World> {
        vec![World {
            state: Status::Pending,
            generation: 0,
            lease_live: false,
            lookup_spent: false,
            workers: [Phase::Idle; WORKERS],
            held: [None; WORKERS],
            lease_row: None,
            lease_row_live: false,
            lease_fence: 0,
            creates: 0,
            was_published: false,
            was_indeterminate: false,
            fenced_out_acted: false,
            authorized_while_leased_elsewhere: false,
        }]
    }

    fn actions(&self, w: &World, actions: &mut Vec<Action>) {
        for i in 0..WORKERS {
            match (w.workers[i], w.held[i]) {
                (Phase::Idle, None) => actions.push(Action::TakeLease(i)),
                (Phase::Idle, Some(_)) => {
                    actions.extend([Action::Begin(i), Action::GiveLeaseBack(i), Action::Crash(i)])
                }
                _ => {}
            }
            match w.workers[i] {
                Phase::Idle => {}
                Phase::Claimed(_) => actions.extend([
                    Action::Authorize(i),
                    Action::FoundBeforeWrite(i),
                    Action::Crash(i),
                ]),
                Phase::Authorized(_) => {
                    actions.extend([Action::Press(i), Action::SettleNotSent(i), Action::Crash(i)])
                }
                Phase::Sent(_) => actions.extend([
                    Action::SettlePublished(i),
                    Action::SettleIndeterminate(i),
                    Action::Crash(i),
                ]),
            }
        }
        actions.extend([
            Action::LeaseRunsOut,
            Action::AccountLeaseRunsOut,
            Action::Sweep,
            Action::Reconcile,
            Action::OperatorPark,
            Action::OperatorRetry,
            Action::OperatorResolve,
        ]);
    }

    fn next_state(&self, last: &World, action: Action) -> Option<World> {
        let mut w = last.clone();
        // The store's fence: the worker's generation is the store's current one.
        let current = |w: &World, g: u8| g == w.generation;
        match action {
            Action::TakeLease(i) => {
                // The store's guarded upsert: free, run out, or already this holder's.
                let free = !w.lease_row_live || w.lease_row.is_some_and(|(h, _)| h == i);
                if !free || w.lease_fence >= MAX_LEASE_FENCE {
                    return None;
                }
                w.lease_fence += 1;
                w.lease_row = Some((i, w.lease_fence));
                w.lease_row_live = true;
                w.held[i] = Some(w.lease_fence);
            }
            Action::GiveLeaseBack(i) => {
                let f = w.held[i]?;
                // Only this holder's lease with this fence is deleted.
                if w.lease_row == Some((i, f)) {
                    w.lease_row = None;
                    w.lease_row_live = false;
                }
                w.held[i] = None;
            }
            Action::AccountLeaseRunsOut => {
                if !w.lease_row_live {
                    return None;
                }
                w.lease_row_live = false;
            }
            Action::Begin(i) => {
                // A claim needs a pending intent with no live claim (an expired one is taken over).
                if w.state != Status::Pending || w.lease_live || w.generation >= MAX_GENERATION {
                    return None;
                }
                w.generation += 1;
                w.lease_live = true;
                w.workers[i] = Phase::Claimed(w.generation);
                apply(&mut w, EventKind::Begun).then_some(())?;
            }
            Action::Authorize(i) => {
                let Phase::Claimed(g) = w.workers[i] else {
                    return None;
                };
                let fenced_ok = self.flaw == Flaw::NoFence || current(&w, g);
                // The authorization's NOT EXISTS: no live account lease of another holder or fence.
                let leased_elsewhere =
                    w.lease_row_live && w.held[i].is_none_or(|f| w.lease_row != Some((i, f)));
                let lease_ok = self.flaw == Flaw::NoAccountLease || !leased_elsewhere;
                if w.state == Status::Pending && w.lease_live && fenced_ok && lease_ok {
                    w.fenced_out_acted |= !current(&w, g);
                    w.authorized_while_leased_elsewhere |= leased_elsewhere;
                    apply(&mut w, EventKind::Authorized).then_some(())?;
                    w.workers[i] = Phase::Authorized(g);
                } else {
                    // Refused: the worker stops before any byte.
                    w.workers[i] = Phase::Idle;
                }
            }
            Action::FoundBeforeWrite(i) => {
                let Phase::Claimed(g) = w.workers[i] else {
                    return None;
                };
                w.workers[i] = Phase::Idle;
                if w.creates > 0 && current(&w, g) && w.state == Status::Pending {
                    apply(&mut w, EventKind::FoundBeforeWrite).then_some(())?;
                    w.lease_live = false;
                }
            }
            Action::Press(i) => {
                let Phase::Authorized(g) = w.workers[i] else {
                    return None;
                };
                // The press needs no store check: it consumes the authorization the worker holds.
                w.creates = w.creates.saturating_add(1);
                w.workers[i] = Phase::Sent(g);
            }
            Action::SettleNotSent(i)
            | Action::SettlePublished(i)
            | Action::SettleIndeterminate(i) => {
                let (g, event) = match (action, w.workers[i]) {
                    // Only before the press can a worker prove nothing left.
                    (Action::SettleNotSent(_), Phase::Authorized(g)) => (g, EventKind::Failed),
                    // The read-back only finds what the platform holds.
                    (Action::SettlePublished(_), Phase::Sent(g)) if w.creates > 0 => {
                        (g, EventKind::Published)
                    }
                    (Action::SettleIndeterminate(_), Phase::Sent(g)) => {
                        (g, EventKind::Indeterminate)
                    }
                    _ => return None,
                };
                w.workers[i] = Phase::Idle;
                // The settle is guarded by the fence and the state: a stale worker's settle changes nothing.
                if current(&w, g) && w.state == Status::Authorized {
                    apply(&mut w, event).then_some(())?;
                    w.lease_live = false;
                }
            }
            Action::Crash(i) => {
                if w.workers[i] == Phase::Idle && w.held[i].is_none() {
                    return None;
                }
                // Its memory is lost; the lease row stays until it runs out.
                w.workers[i] = Phase::Idle;
                w.held[i] = None;
            }
            Action::LeaseRunsOut => {
                if !w.lease_live {
                    return None;
                }
                w.lease_live = false;
            }
            Action::Sweep => {
                if w.lease_live {
                    return None;
                }
                match w.state {
                    Status::Authorized if self.flaw == Flaw::SweepToPending => {
                        // Broken on purpose: no event of the code's table does this.
                        w.state = Status::Pending;
                    }
                    Status::Authorized => {
                        apply(&mut w, EventKind::LeaseExpired).then_some(())?;
                        w.lookup_spent = false;
                    }
                    _ => return None,
                }
            }
            Action::Reconcile => {
                if w.state != Status::Indeterminate || w.lookup_spent {
                    return None;
                }
                w.lookup_spent = true;
                apply(&mut w, EventKind::ReconcileStarted).then_some(())?;
                if w.creates > 0 {
                    apply(&mut w, EventKind::ReconcileFound).then_some(())?;
                } else {
                    apply(&mut w, EventKind::ReconcileNotFound).then_some(())?;
                    apply(&mut w, EventKind::Parked).then_some(())?;
                }
            }
            Action::OperatorPark => {
                apply(&mut w, EventKind::Parked).then_some(())?;
                w.lease_live = false;
            }
            Action::OperatorRetry => {
                apply(&mut w, EventKind::Retried).then_some(())?;
            }
            Action::OperatorResolve => {
                // A person confirms a post they can see.
                if w.creates == 0 {
                    return None;
                }
                apply(&mut w, EventKind::Resolved).then_some(())?;
            }
        }
        (w != *last).then_some(w)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        let all = vec![
            Property::always("at most one create per delivery key", |_, w: &World| {
                w.creates <= 1
            }),
            Property::always("published is never left", |_, w: &World| {
                !w.was_published || w.state == Status::Published
            }),
            Property::always("indeterminate never returns to pending", |_, w: &World| {
                !(w.was_indeterminate && w.state == Status::Pending)
            }),
            Property::always(
                "a fenced-out worker never authorizes or settles",
                |_, w: &World| !w.fenced_out_acted,
            ),
            Property::always(
                "no host authorizes while another holds the account's lease",
                |_, w: &World| !w.authorized_while_leased_elsewhere,
            ),
            // Not a safety property: shows the model reaches the outcomes it is about.
            Property::sometimes("published after an unknown outcome", |_, w: &World| {
                w.was_indeterminate && w.state == Status::Published
            }),
        ];
        all.into_iter()
            .filter(|p| self.only.is_none_or(|n| p.name == n))
            .collect()
    }
}

/// Breadth first on one thread: a counterexample is a shortest one, and the state count is the same on
/// every run.
fn check(flaw: Flaw, only: Option<&'static str>) -> impl Checker<Protocol> {
    Protocol { flaw, only }
        .checker()
        .threads(1)
        .spawn_bfs()
        .join()
}

#[test]
fn the_protocol_keeps_every_promise_in_every_reachable_state() {
    let checker = check(Flaw::None, None);
    checker.assert_properties();
    let states = checker.unique_state_count();
    eprintln!(
        "model: {states} unique states, {WORKERS} workers + sweeper + reconciler + operator, crashes everywhere"
    );
    assert!(states > 1_000, "the model explores a real space: {states}");
}

/// The code's table is what the model runs: every event the model applies is one [`Status::next`] accepts
/// from the state it is applied in, and the one transition the broken sweep makes is one it refuses.
#[test]
fn the_broken_sweep_is_outside_the_codes_table() {
    assert!(
        Status::Authorized.next(EventKind::LeaseExpired) == Ok(Status::Indeterminate),
        "the sweep's event"
    );
    assert!(
        !Status::allowed_changes().contains(&(Status::Indeterminate, Status::Pending))
            && !Status::allowed_changes().contains(&(Status::Authorized, Status::Pending)),
        "no event moves an unknown outcome back to pending"
    );
}

#[test]
fn a_sweep_back_to_pending_is_caught_with_a_duplicate_trace() {
    let checker = check(
        Flaw::SweepToPending,
        Some("at most one create per delivery key"),
    );
    let trace = checker
        .discovery("at most one create per delivery key")
        .expect("the checker finds the duplicate");
    let actions = trace.into_actions();
    eprintln!("counterexample (sweep to pending): {actions:?}");
    assert!(actions.contains(&Action::Sweep), "{actions:?}");
    assert_eq!(
        actions
            .iter()
            .filter(|a| matches!(a, Action::Press(_)))
            .count(),
        2,
        "a shortest trace presses twice: {actions:?}"
    );
}

#[test]
fn a_missing_fence_is_caught_with_a_trace() {
    let checker = check(
        Flaw::NoFence,
        Some("a fenced-out worker never authorizes or settles"),
    );
    let trace = checker
        .discovery("a fenced-out worker never authorizes or settles")
        .expect("the checker finds the stale authorization");
    let actions = trace.into_actions();
    eprintln!("counterexample (no fence): {actions:?}");
    assert!(
        actions
            .iter()
            .filter(|a| matches!(a, Action::Begin(_)))
            .count()
            >= 2,
        "a second claim after the first one's lease ran out: {actions:?}"
    );
}

#[test]
fn authorizing_without_the_account_lease_is_caught_with_a_trace() {
    let checker = check(
        Flaw::NoAccountLease,
        Some("no host authorizes while another holds the account's lease"),
    );
    let trace = checker
        .discovery("no host authorizes while another holds the account's lease")
        .expect("the checker finds a host authorizing on a lost lease");
    let actions = trace.into_actions();
    eprintln!("counterexample (no account lease): {actions:?}");
    assert!(
        actions.contains(&Action::AccountLeaseRunsOut),
        "the lease ran out (and moved on) before the authorization: {actions:?}"
    );
}
