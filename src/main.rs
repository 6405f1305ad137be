use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = nastune::cli::Cli::parse();
    match nastune::cmd::run(cli) {
        Ok(code) => code,
        Err(err) if nastune::output::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("nastune: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
