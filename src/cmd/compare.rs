//! `nastune compare A B`: the same benchmarks in two stored runs side by side,
//! with a verdict per metric, and the settings that differed.

use std::io::IsTerminal;
use std::process::ExitCode;

use crate::cli::GlobalArgs;
use crate::cli::compare::CompareArgs;
use crate::runs::RunDocs;
use crate::store::{RunId, Store};
use anyhow::bail;

pub fn run(args: &CompareArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    let Some(store) = super::open_store_to_read(global)? else {
        bail!("'compare' reads the store; drop --no-store");
    };
    let docs_a = load_documents(&store, args.a)?;
    let docs_b = load_documents(&store, args.b)?;
    let cmp = crate::compare::compare(args.a, &docs_a, args.b, &docs_b)?;
    let colour = color_stdout();
    let out = if args.json {
        crate::output::json_line(&cmp)?
    } else {
        crate::report::compare_text::render(&cmp, colour)
    };
    if args.json {
        crate::output::write_stdout(out.as_bytes())?;
    } else {
        crate::output::write_coloured(&out, colour)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A run's documents, decoded; fails when the run does not exist.
pub fn load_documents(store: &Store, id: RunId) -> anyhow::Result<RunDocs> {
    store.run(id)?;
    Ok(crate::runs::load(store, id)?)
}

/// Colour only on a terminal, and never when NO_COLOR is set (no-color.org).
pub fn color_stdout() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty()) && std::io::stdout().is_terminal()
}
