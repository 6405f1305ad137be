// Records the build target so `nastune --version` can say which binary this is.
fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=NASTUNE_BUILD_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
}
