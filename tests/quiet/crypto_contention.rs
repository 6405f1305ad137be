//! Known truth for `bench crypto` on a busy box: two round-robin real-time
//! tasks pinned to one core get half of it each, so a cipher measured beside
//! such a busy loop must keep its speed per CPU-second, lose half its
//! wall-clock speed, and say that its thread got half a core.

use std::process::{Child, Command};

use crate::util::*;

/// The busy loop, ended (by its pid, which we started) when dropped.
struct Hog(Child);

impl Drop for Hog {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Real-time round robin at one priority, pinned to CPU 0: nothing of the
/// normal class (other tests' builds) runs there while these do, and two of
/// them alternate in 100 ms slices (sched_rr_timeslice_ms).
fn on_cpu0_round_robin(program: &str) -> Command {
    let mut c = Command::new("chrt");
    c.args(["--rr", "10", "taskset", "-c", "0", program]);
    c
}

/// Encrypt figures of every user-space point and the guard's thread_cpu condition.
fn bench() -> (Vec<(f64, f64)>, serde_json::Value) {
    let o = on_cpu0_round_robin(env!("CARGO_BIN_EXE_nastune"))
        .env("NO_COLOR", "1")
        .args([
            "bench",
            "crypto",
            "--json",
            "--no-store",
            "--no-kdf",
            "--cipher",
            "aes-xts",
            "--size",
            "65536",
            "--duration",
            "1",
            "--settle",
            "0",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let rates = doc["user_space"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| c["points"].as_array().unwrap().clone())
        .flat_map(|p| [p["encrypt"].clone(), p["decrypt"].clone()])
        .map(|r| {
            let f = |k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
            (f("bytes_per_cpu_sec"), f("bytes_per_sec"))
        })
        .collect();
    let condition = doc["validity"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "thread_cpu")
        .unwrap_or_else(|| panic!("no thread_cpu condition: {}", doc["validity"]))
        .clone();
    (rates, condition)
}

/// "0.48 of a core (...)" → 0.48.
fn share(condition: &serde_json::Value) -> f64 {
    let figure = condition["figure"].as_str().unwrap();
    figure.split_whitespace().next().unwrap().parse().unwrap()
}

#[test]
fn crypto_speed_per_cpu_second_holds_beside_a_busy_loop_on_the_same_core() {
    let _serial = crate::net::heavy();
    let can_rr = || match Command::new("chrt").args(["--rr", "10", "true"]).status() {
        Ok(s) if s.success() => Ok(()),
        _ => Err("chrt --rr failed: real-time scheduling not permitted here".to_string()),
    };
    if !require(&[
        Need::Tool("chrt"),
        Need::Tool("taskset"),
        Need::Feature("SCHED_RR", &can_rr),
    ]) {
        return;
    }
    let (alone, alone_cond) = bench();
    let hog = Hog(on_cpu0_round_robin("sh")
        .args(["-c", "while :; do :; done"])
        .spawn()
        .unwrap());
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (shared, shared_cond) = bench();
    drop(hog);
    println!("alone {alone:?} {alone_cond}\nshared {shared:?} {shared_cond}");
    assert_eq!(alone.len(), shared.len());
    for ((cpu_a, wall_a), (cpu_s, wall_s)) in alone.iter().zip(&shared) {
        let cpu_ratio = cpu_s / cpu_a;
        let wall_ratio = wall_s / wall_a;
        assert!(
            (0.8..1.25).contains(&cpu_ratio),
            "per CPU-second moved by {cpu_ratio:.2} ({cpu_a:.0} -> {cpu_s:.0} B/s)"
        );
        assert!(
            (0.35..0.65).contains(&wall_ratio),
            "wall clock should halve, got {wall_ratio:.2} ({wall_a:.0} -> {wall_s:.0} B/s)"
        );
    }
    // Alone the thread has the core but for the 5 % the kernel keeps from
    // real-time tasks (sched_rt_runtime_us 950000 of 1000000).
    assert!(share(&alone_cond) >= 0.85, "{alone_cond}");
    assert_eq!(alone_cond["verdict"], "clean", "{alone_cond}");
    let half = share(&shared_cond);
    assert!((0.4..0.6).contains(&half), "{shared_cond}");
    assert_eq!(shared_cond["verdict"], "disturbed", "{shared_cond}");
    let reason = shared_cond["reason"].as_str().unwrap();
    assert!(
        reason.starts_with(&format!("the measuring thread got {half:.2} of a core")),
        "{reason}"
    );
}
