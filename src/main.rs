//! The `oncepost` binary: parse arguments, then make one call into the library.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    oncepost::cli::main()
}
