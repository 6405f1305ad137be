//! `nastune history list|show|rm|export|import`: what the store holds, and
//! runs that travel between boxes.

use std::process::ExitCode;

use anyhow::{Context, bail};
use serde::Serialize;

use crate::cli::{GlobalArgs, HistoryCommand};
use crate::store::{RunRecord, Store};

pub fn run(cmd: &HistoryCommand, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    // Only `rm` writes; listing and showing work on a read-only store.
    let store = match cmd {
        HistoryCommand::Rm(_) | HistoryCommand::Import(_) => super::open_store(global)?,
        _ => super::open_store_to_read(global)?,
    };
    let Some(store) = store else {
        bail!("'history' reads the store; drop --no-store");
    };
    if let HistoryCommand::Export(a) = cmd {
        let file = store.export(&a.runs)?;
        return match crate::output::write_json(&file) {
            Ok(()) => Ok(ExitCode::SUCCESS),
            // A run that could not be read stops the file midway: say which.
            Err(e) => Err(file.take_failure().map_or_else(|| e.into(), Into::into)),
        };
    }
    // Every --json answer is JSON; the rest is text.
    let json = match cmd {
        HistoryCommand::List(a) => a.json,
        HistoryCommand::Show(a) => a.json,
        HistoryCommand::Export(_) | HistoryCommand::Import(_) | HistoryCommand::Rm(_) => false,
    };
    let out = match cmd {
        HistoryCommand::List(a) => {
            let runs = store.runs_of(a.kind, a.limit)?;
            if a.json {
                crate::output::json_line(&ListDoc {
                    schema_version: 1,
                    runs: &runs,
                })?
            } else {
                crate::report::history_text::render_list(&runs)
            }
        }
        HistoryCommand::Show(a) => show(&store, a.run, a.json)?,
        HistoryCommand::Export(_) => unreachable!("written above, run by run"),
        HistoryCommand::Import(a) => {
            let name = a.file.display().to_string();
            // Its errors name the file and say why ("cannot read 'F': …").
            let file = crate::root::open_regular(&a.file)?;
            let bytes = crate::store::export::read_capped(&name, &file)?;
            let ids = store.import(&name, &bytes, crate::runs::check_decodes)?;
            let list: Vec<String> = ids.iter().map(i64::to_string).collect();
            if ids.is_empty() {
                let name = crate::report::format::shown(&name);
                format!("no runs in '{name}'; nothing was imported\n")
            } else {
                format!(
                    "imported {} run(s) as {}; 'nastune report {} --html FILE' shows them\n",
                    ids.len(),
                    list.join(", "),
                    list.join(" ")
                )
            }
        }
        HistoryCommand::Rm(a) => {
            let mut out = String::new();
            for id in &a.runs {
                if !store.delete_run(*id)? {
                    bail!(
                        "run {id} not found; nothing after it was removed ('nastune history list' shows the ids)"
                    );
                }
                out.push_str(&format!("removed run {id}\n"));
            }
            out
        }
    };
    crate::output::write_result(&out, json)?;
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct ListDoc<'a> {
    schema_version: u32,
    runs: &'a [RunRecord],
}

#[derive(Serialize)]
struct ShowDoc {
    schema_version: u32,
    run: RunRecord,
    documents: Vec<StoredDoc>,
}

#[derive(Serialize)]
struct StoredDoc {
    kind: String,
    schema_version: u32,
    body: serde_json::Value,
}

fn show(store: &Store, id: i64, json: bool) -> anyhow::Result<String> {
    let run = store.run(id)?;
    if !json {
        return show_text(store, run);
    }
    let mut documents = Vec::new();
    for (kind, schema_version, body) in store.documents(id)? {
        let body = serde_json::from_str(&body)
            .with_context(|| format!("run {id}: stored '{kind}' document is not valid JSON"))?;
        documents.push(StoredDoc {
            kind,
            schema_version,
            body,
        });
    }
    Ok(crate::output::json_line(&ShowDoc {
        schema_version: 1,
        run,
        documents,
    })?)
}

/// The run's record, then its results as its command printed them (what
/// `check` sends the user here for). A document this version cannot read
/// (a newer schema) costs the results' text, not the record.
fn show_text(store: &Store, run: RunRecord) -> anyhow::Result<String> {
    Ok(match crate::runs::load(store, run.id) {
        Ok(docs) => {
            let kinds: Vec<&str> = docs.0.iter().map(|d| d.kind().as_str()).collect();
            let mut out = crate::report::history_text::render_run(&run, &kinds);
            out.push('\n');
            out.push_str(&crate::report::history_text::render_documents(&run, &docs));
            out
        }
        Err(e) => {
            let kinds: Vec<String> = store.documents(run.id)?.into_iter().map(|d| d.0).collect();
            let kinds: Vec<&str> = kinds.iter().map(String::as_str).collect();
            let mut out = crate::report::history_text::render_run(&run, &kinds);
            out.push_str(&format!(
                "\nresults not shown: {e}; '--json' shows the documents as stored\n"
            ));
            out
        }
    })
}
