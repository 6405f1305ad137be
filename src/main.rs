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
