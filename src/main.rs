//! The `oncepost` binary: parse arguments, then make one call into the library.
fn main() -> std::process::ExitCode {
    oncepost::cli::main()
}
