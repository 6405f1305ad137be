use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    nastune::time::command_started_unix();
    let cli = nastune::cli::Cli::parse();
    match nastune::cmd::run(cli) {
        Ok(code) => code,
        Err(err) if nastune::output::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            nastune::note!("nastune: error: {err:#}");
            ExitCode::from(2)
        }
    }
}

// Release builds for glibc: the libm functions nastune calls, so that libm.so.6 is
// not loaded at all (its mapping alone was 0.35 MiB of probe's RSS; see
// `static_runtime` in build.rs). The linker takes these before any library.
#[cfg(nastune_own_libm)]
mod own_libm {
    #[unsafe(no_mangle)]
    extern "C" fn exp(x: f64) -> f64 {
        libm::exp(x)
    }

    #[unsafe(no_mangle)]
    extern "C" fn log(x: f64) -> f64 {
        libm::log(x)
    }

    #[unsafe(no_mangle)]
    extern "C" fn log10(x: f64) -> f64 {
        libm::log10(x)
    }
}
