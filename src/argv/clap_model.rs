//! The spec as a `clap::Command`, for nastune-gen: clap_mangen and
//! clap_complete write the man pages and completions from it, so they describe
//! exactly what the parser accepts. Only nastune-gen and the tests call this;
//! the `nastune` binary never does, so clap stays out of it (checked by
//! benches/size.sh through `cargo bloat`).

use clap::builder::PossibleValue;
use clap::{ArgAction, ArgGroup};

use super::spec;

/// The whole command tree under `root`.
pub fn command(root: &'static spec::Command) -> clap::Command {
    let mut cmd = clap::Command::new(root.name)
        .about(root.about)
        .hide(root.hide);
    if let Some(long) = root.long_about {
        cmd = cmd.long_about(long);
    }
    if let Some(version) = root.version {
        cmd = cmd.version(version).propagate_version(true);
    }
    group(cmd, root.args)
}

fn group(mut cmd: clap::Command, g: &'static spec::Group) -> clap::Command {
    g.each_arg(&mut |a| cmd = std::mem::take(&mut cmd).arg(arg(a)));
    add_groups(&mut cmd, g);
    for sub in g.subcommands {
        cmd = cmd.subcommand(command(sub));
    }
    if g.subcommand_required {
        cmd = cmd.subcommand_required(true).arg_required_else_help(true);
    }
    cmd
}

/// ArgGroups of `g` and of the groups flattened into it.
fn add_groups(cmd: &mut clap::Command, g: &'static spec::Group) {
    for gr in g.groups {
        *cmd = std::mem::take(cmd).group(ArgGroup::new(gr.id).args(gr.args).required(gr.required));
    }
    for inner in g.flatten {
        add_groups(cmd, inner);
    }
}

fn arg(a: &'static spec::Arg) -> clap::Arg {
    let mut arg = clap::Arg::new(a.id)
        .hide(a.hide)
        .global(a.global)
        .required(a.required);
    if !a.help.is_empty() {
        arg = arg.help(a.help);
    }
    if a.path {
        arg = arg.value_hint(clap::ValueHint::AnyPath);
    }
    if let Some(long) = a.more.long_help {
        arg = arg.long_help(long);
    }
    if let Some(long) = a.long {
        arg = arg.long(long);
    }
    if let Some(short) = a.short {
        arg = arg.short(short);
    }
    arg = match a.kind {
        spec::Kind::Flag => arg.action(ArgAction::SetTrue),
        spec::Kind::One => arg.action(ArgAction::Set),
        spec::Kind::Many => arg.action(ArgAction::Append),
    };
    if a.kind != spec::Kind::Flag {
        arg = arg
            .value_name(a.value_name)
            .num_args(a.num_args.0..=a.num_args.1);
    }
    if let Some(v) = a.default_value {
        arg = arg.default_value(v);
    }
    if let Some(shown) = a.more.default_shown {
        arg = arg.default_value(shown());
    }
    if let Some(v) = a.more.default_missing {
        arg = arg.default_missing_value(v);
    }
    if let Some(d) = a.more.delimiter {
        arg = arg.value_delimiter(d);
    }
    if !a.more.values.is_empty() {
        let values = a.more.values.iter().map(|v| {
            let pv = PossibleValue::new(v.name).hide(v.hide);
            if v.help.is_empty() {
                pv
            } else {
                pv.help(v.help)
            }
        });
        arg = arg.value_parser(values.collect::<Vec<_>>());
    }
    for r in a.more.requires {
        arg = arg.requires(*r);
    }
    for c in a.more.conflicts {
        arg = arg.conflicts_with(*c);
    }
    if !a.more.required_unless.is_empty() {
        arg = arg.required_unless_present_any(a.more.required_unless);
    }
    arg
}
