// Records the build target so `nastune --version` can say which binary this is,
// and drops the unwind tables from release binaries (see `unwind_tables`).
fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=NASTUNE_BUILD_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
    unwind_tables();
}

/// Release builds abort on panic, so nothing unwinds, yet every function keeps an
/// `.eh_frame` entry (`-C force-unwind-tables=no` changes nothing: the generic code
/// of the precompiled std carries a personality): ~0.75 MiB of the x86_64 binary
/// (issue 22). The linker discards them from release binaries only; `[profile]`
/// cannot take rustflags on stable cargo, and tests (always built to unwind) never
/// get these arguments, which apply to binaries. A panic still prints its message
/// and aborts; only its backtrace is empty. NASTUNE_KEEP_UNWIND_TABLES=1 keeps
/// them (perf --call-graph=dwarf, gdb backtraces).
fn unwind_tables() {
    println!("cargo:rerun-if-env-changed=NASTUNE_KEEP_UNWIND_TABLES");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let release = var("PROFILE") == "release";
    let keep = !var("NASTUNE_KEEP_UNWIND_TABLES").is_empty();
    // GNU ld and lld both take an INSERT script; ARM's EHABI tables are not .eh_frame.
    let elf = var("CARGO_CFG_TARGET_OS") == "linux"
        && matches!(var("CARGO_CFG_TARGET_ARCH").as_str(), "x86_64" | "aarch64");
    if !release || keep || !elf {
        return;
    }
    let script = std::path::Path::new(&var("OUT_DIR")).join("discard-eh-frame.ld");
    // The LSDAs in .gcc_except_table are read only through .eh_frame.
    let text = "SECTIONS { /DISCARD/ : { *(.eh_frame) *(.gcc_except_table .gcc_except_table.*) } } INSERT AFTER .text;\n";
    if std::fs::write(&script, text).is_ok() {
        println!("cargo:rustc-link-arg-bins=-Wl,--no-eh-frame-hdr");
        println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
    }
    // rustc links x86_64-unknown-linux-gnu with its own lld unless told otherwise:
    // lld folds functions whose code came out identical (monomorphised copies).
    let own_lld = var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("RUSTC_LINKER").is_empty()
        && !var("CARGO_ENCODED_RUSTFLAGS").contains("linker");
    if own_lld {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
}
