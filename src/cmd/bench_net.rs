//! `nastune bench net`: run one client test (against a remote server or our own
//! loopback server), print intervals and the summary, save the document.

use std::net::TcpListener;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

use crate::cli::{BenchNetArgs, GlobalArgs};
use crate::net::client::{self, ClientConfig};
use crate::net::engine::{Interval, ReceiveMethod, SendMethod};
use crate::net::params::{Caps, RrMode, RrParams};
use crate::net::{allow, auth, doc, handshake, server};
use crate::report::net_text;
use crate::root::Root;

pub fn run(args: &BenchNetArgs, global: &GlobalArgs) -> anyhow::Result<ExitCode> {
    if !(args.interval == 0.0 || (0.1..=60.0).contains(&args.interval)) {
        anyhow::bail!(
            "--interval '{}' must be 0 or between 0.1 and 60 seconds",
            args.interval
        );
    }
    let store = super::open_store(global)?;
    let json = args.json;
    let mut bar = crate::progress::Progress::stderr();
    let mut print_interval = |i: &Interval| {
        // Off the line first, so the interval does not print over the bar.
        bar.clear();
        if !json {
            let _ = crate::output::write_stdout(net_text::interval(i).as_bytes());
        }
        bar.draw("bench net", done_fraction(i, args));
    };
    let (cfg, outcome) = measure(args, &mut print_interval)?;
    drop(bar);
    let report = match outcome {
        Ok(r) => r,
        Err(e) => {
            if let Some(store) = &store {
                let run = store.begin_run(
                    crate::store::RunKind::BenchNet,
                    &host_id(),
                    &super::command_line(),
                )?;
                store.finish_run(run, "failed")?;
            }
            return Err(e).context(format!("network test against '{}:{}'", cfg.host, cfg.port));
        }
    };
    if let Some(store) = &store {
        let run = store.begin_run(
            crate::store::RunKind::BenchNet,
            &host_id(),
            &super::command_line(),
        )?;
        store.save(run, &report)?;
        store.finish_run(run, "ok")?;
    }
    let out = if json {
        let mut s = serde_json::to_string_pretty(&report)?;
        s.push('\n');
        s
    } else {
        net_text::summary(&report)
    };
    crate::output::write_stdout(out.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

/// How far the test is after interval `i`: its end over warm-up plus test time.
pub fn done_fraction(i: &Interval, args: &BenchNetArgs) -> f64 {
    let end = i.streams.iter().map(|s| s.end).fold(0.0, f64::max);
    end / f64::from(args.omit + args.time).max(1.0)
}

/// Runs the test the arguments describe (starting the loopback server when asked);
/// returns the configuration used and the client's outcome. Collection only.
pub fn measure(
    args: &BenchNetArgs,
    on_interval: &mut dyn FnMut(&Interval),
) -> anyhow::Result<(ClientConfig, anyhow::Result<doc::NetReport>)> {
    let psk = match &args.psk_file {
        Some(p) => Some(auth::load_psk(p)?),
        None => None,
    };
    let (host, port) = if args.loopback {
        (
            String::from("127.0.0.1"),
            start_loopback_server(psk.clone())?,
        )
    } else {
        (args.host.clone().unwrap_or_default(), args.port)
    };
    let rr = (args.rr || args.crr).then_some(RrParams {
        mode: if args.crr { RrMode::Crr } else { RrMode::Rr },
        request_bytes: args.request_size,
        response_bytes: args.response_size,
    });
    let cfg = ClientConfig {
        host,
        port,
        udp: args.udp,
        streams: args.parallel,
        duration_secs: args.time,
        omit_secs: args.omit,
        interval: Duration::from_secs_f64(args.interval),
        block_bytes: args.length,
        rate_bits_per_sec: args.bitrate,
        window_bytes: args.window.unwrap_or(0),
        mss_bytes: args.mss.unwrap_or(0),
        nodelay: args.no_delay,
        reverse: args.reverse,
        bidir: args.bidir,
        udp_counters_64bit: args.udp_counters_64bit,
        send: if args.copy || args.udp {
            SendMethod::Copy
        } else {
            SendMethod::Sendfile
        },
        receive: if args.copy || args.udp {
            ReceiveMethod::Copy
        } else {
            ReceiveMethod::MsgTrunc
        },
        psk,
        rr,
        connect_timeout: Duration::from_secs(5),
    };
    if !args.json {
        eprintln!("{}", net_text::header(&cfg));
    }
    let outcome = client::run(&cfg, on_interval).map_err(anyhow::Error::from);
    Ok((cfg, outcome))
}

fn host_id() -> String {
    crate::probe::host::read_host_id(&Root::live())
}

/// `--loopback`: our own server on an ephemeral 127.0.0.1 port in this process.
fn start_loopback_server(psk: Option<Vec<u8>>) -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("cannot listen on 127.0.0.1")?;
    let port = listener.local_addr()?.port();
    let cfg = server::ServeConfig {
        caps: Caps {
            max_duration_secs: 86_400,
            max_streams: 128,
            max_bitrate: 0,
        },
        max_sessions: 1,
        allow: allow::default_allow(),
        psk,
        timeouts: server::Timeouts::default(),
        max_pending: handshake::MAX_PENDING,
        max_pending_per_addr: handshake::MAX_PENDING_PER_ADDR,
    };
    std::thread::Builder::new()
        .name("loopback-server".into())
        .spawn(move || server::serve(listener, cfg, Box::new(|_| {})))?;
    Ok(port)
}
