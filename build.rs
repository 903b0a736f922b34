// The migrations are embedded by `sqlx::migrate!`; a new or changed file there must rebuild the crate (sqlx's
// own advice: cargo does not see files a macro reads).
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
