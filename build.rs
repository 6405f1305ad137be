// Records the build target so `nastune --version` can say which binary this is,
// drops the unwind tables from release binaries (see `unwind_tables`), keeps
// libgcc_s and libm out of them (see `static_runtime`) and packs their start-up
// code together (see `startup_order`).
fn main() {
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".into());
    println!("cargo:rustc-env=NASTUNE_BUILD_TARGET={target}");
    println!("cargo:rerun-if-changed=build.rs");
    unwind_tables();
    static_runtime();
    startup_order();
}

/// Every shared library probe loads costs resident pages far beyond the code it
/// runs: the kernel's fault-around maps the 64 KiB around each page touched, and
/// ld.so touches each library's headers, symbol and hash tables (here
/// libm.so.6 was 0.35-0.4 MiB of probe's 7.3 MiB, libgcc_s.so.1 0.1 MiB plus its
/// relocation work). x86_64 release binaries for glibc therefore
/// - link GCC's unwinder statically (libgcc_eh.a, what `gcc -static-libgcc` does):
///   std references it even when panics abort; 20 KiB of code. A `-l` of the
///   library target lands before std's `-lgcc_s`, which a `link-arg` (placed after
///   it) would not: lld resolves a symbol from the first library that defines it.
/// - define the three libm functions nastune calls (f64::exp, ln, log10) from the
///   pure-Rust libm crate (src/main.rs, cfg `nastune_own_libm`), so `--as-needed`
///   drops libm.so.6. glibc's libm.a cannot stand in: its ifunc resolvers need
///   `_dl_x86_cpu_features`, which only a static libc has.
///
/// Tests (debug) keep the shared libraries. benches/probe.sh says if libm.so.6 or
/// libgcc_s.so.1 came back (a newly used libm function brings libm back).
fn static_runtime() {
    println!("cargo::rustc-check-cfg=cfg(nastune_own_libm)");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let glibc = var("CARGO_CFG_TARGET_OS") == "linux" && var("CARGO_CFG_TARGET_ENV") == "gnu";
    // Linked and measured on x86_64 only: no ARM toolchain here to prove the
    // static libgcc_eh.a links for EHABI targets, so they keep the shared ones.
    let proven = var("CARGO_CFG_TARGET_ARCH") == "x86_64";
    if var("PROFILE") != "release" || !glibc || !proven {
        return;
    }
    println!("cargo:rustc-link-lib=static:-bundle,+verbatim=libgcc_eh.a");
    println!("cargo:rustc-cfg=nastune_own_libm");
}

/// Release builds abort on panic, so nothing unwinds, yet every function keeps an
/// `.eh_frame` entry (`-C force-unwind-tables=no` changes nothing: the generic code
/// of the precompiled std carries a personality): ~0.75 MiB of the x86_64 binary,
/// on disk and in the page cache. The linker discards them from release binaries only; `[profile]`
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
    // lld folds functions whose code came out identical (monomorphised copies).
    if own_lld() {
        println!("cargo:rustc-link-arg-bins=-Wl,--icf=all");
    }
}

/// rustc links x86_64-unknown-linux-gnu with its own lld unless told otherwise.
fn own_lld() -> bool {
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    var("TARGET") == "x86_64-unknown-linux-gnu"
        && var("RUSTC_LINKER").is_empty()
        && !var("CARGO_ENCODED_RUSTFLAGS").contains("linker")
}

/// The kernel maps the 64 KiB around every page of the binary a process touches
/// (fault-around; no madvise advice stops it), so probe's start-up code, spread
/// over 4 MiB of .text, made ~90 % of it resident. lld puts the functions listed
/// in benches/startup-symbols.txt (what probe, advise and check run, written by
/// benches/startup-order.sh) first, in few windows: probe's text RSS 3.9 -> 1.4
/// MiB. Stale names (their hashes change with the toolchain and with edits) are
/// skipped without a warning; they only pack less. Release binaries, lld only.
fn startup_order() {
    let list = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/startup-symbols.txt");
    println!("cargo:rerun-if-changed={}", list.display());
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    if release && own_lld() && list.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
