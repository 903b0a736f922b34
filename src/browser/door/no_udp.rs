//! No UDP out of Chromium, enforced by the kernel: a seccomp filter on every Chromium process.
//!
//! WebRTC carries page data over UDP (an ICE username chosen by the page reaches a STUN port), and nothing
//! in CDP sees or stops it. Chromium's own switch (`--webrtc-ip-handling-policy=disable_non_proxied_udp`)
//! keeps WebRTC to the proxy, but only where the embedder reads it: the full browser does, **Chromium's
//! headless shell ignores it** (measured, Chromium 156 Debian: 3 WebRTC datagrams reached the counting
//! server in the door's probe test with the shell, 0 with the full browser). So the guard installs this
//! filter on itself before it starts Chromium, which inherits it with every process it forks (browser,
//! network service, renderers, GPU; a filter can never be removed): creating an IPv4 or IPv6 datagram or raw socket, or any packet
//! socket, fails with `EPERM`, and so does `io_uring_setup` (an io_uring can open sockets without the
//! `socket` system call). TCP, Unix sockets and everything else are untouched. Chromium needs no UDP here:
//! every HTTP request of the page is answered by oncepost through CDP, everything else goes to the
//! sinkhole proxy by TCP, and QUIC is off.
use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};

/// The compiled filter for this machine's architecture, or why there is none.
pub fn program() -> Result<BpfProgram, String> {
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e| format!("no seccomp filter for this architecture: {e}"))?;
    let cond = |arg: u8, op: SeccompCmpOp, value: u64| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
            .map_err(|e| format!("seccomp condition: {e}"))
    };
    // socket(domain, type, protocol): the type's low four bits are the kind (flags like SOCK_NONBLOCK and
    // SOCK_CLOEXEC sit above them).
    let mut socket = Vec::new();
    for domain in [libc::AF_INET, libc::AF_INET6] {
        for kind in [libc::SOCK_DGRAM, libc::SOCK_RAW] {
            socket.push(
                SeccompRule::new(vec![
                    cond(0, SeccompCmpOp::Eq, domain as u64)?,
                    cond(1, SeccompCmpOp::MaskedEq(0xf), kind as u64)?,
                ])
                .map_err(|e| format!("seccomp rule: {e}"))?,
            );
        }
    }
    socket.push(
        SeccompRule::new(vec![cond(0, SeccompCmpOp::Eq, libc::AF_PACKET as u64)?])
            .map_err(|e| format!("seccomp rule: {e}"))?,
    );
    let rules: BTreeMap<i64, Vec<SeccompRule>> = [
        (libc::SYS_socket, socket),
        // No condition: every call matches.
        (libc::SYS_io_uring_setup, Vec::new()),
    ]
    .into_iter()
    .collect();
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(libc::EPERM as u32),
        arch,
    )
    .map_err(|e| format!("seccomp filter: {e}"))?;
    filter
        .try_into()
        .map_err(|e: seccompiler::BackendError| format!("seccomp filter: {e}"))
}

/// Install the filter on every thread of this process (and so on every process it starts from now on),
/// for good. The guard does this before it starts Chromium; the guard itself needs no UDP (its one
/// listener is TCP on 127.0.0.1, Chromium's DevTools a pipe).
pub fn shut_this_process() -> Result<(), String> {
    let program = program()?;
    seccompiler::apply_filter_all_threads(&program)
        .map_err(|e| format!("cannot install the no-UDP seccomp filter: {e}"))
}
