// Records the build target so `nastune --version` can say which binary this is,
// and has rustc's own lld fold identical functions in release binaries (see
// `identical_code_folding`).
fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=NASTUNE_BUILD_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
    identical_code_folding();
}

/// lld folds functions whose code came out identical (monomorphised copies):
/// 47 KB less .text, and `nastune probe` peaks 0.23-0.32 MiB lower, since the
/// kernel maps the 64 KiB around every page of the binary a process touches
/// (fault-around), so less code spread means fewer windows. A linker option:
/// nothing in the tree can make it stop working unnoticed. Release binaries built
/// with rustc's own lld only (x86_64-unknown-linux-gnu; the dist builds link with zig).
fn identical_code_folding() {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let own_lld = var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("RUSTC_LINKER").is_empty()
        && !var("CARGO_ENCODED_RUSTFLAGS").contains("linker");
    if var("PROFILE") == "release" && own_lld {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
}
