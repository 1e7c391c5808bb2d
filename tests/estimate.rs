//! The memory estimate that a run is checked against before it starts (printed by
//! `armac-train --estimate`) is within a factor of two of the run's measured peak resident
//! memory, for the full-width, the sampling and the batched tabular solvers and a small
//! Student of Games run, and for ARMAC runs whose largest part is the network, the reservoirs
//! or the replay memory. Each run is small: seconds and under 500 MB. (ARMAC's estimate
//! assumes full memories and every past network it may keep, so its runs here keep two past
//! networks and fill their memories within their few epochs.)

mod common;

use common::train;
use std::process::Stdio;

/// The estimate `armac-train --estimate` prints for `args`, in bytes.
fn estimate(args: &[&str]) -> u64 {
    let out = common::run_ok(train().args(args).arg("--estimate"));
    let text = String::from_utf8_lossy(&out.stdout);
    text.strip_prefix("memory estimate: ")
        .and_then(|t| t.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no estimate in {text:?}"))
}

/// The peak resident memory, in bytes, of the run `args` describes (into a fresh directory),
/// read from the kernel's accounting of that child alone (`wait4`, which also reaps it: the
/// lint cannot see that).
#[allow(clippy::zombie_processes)]
fn peak_rss(args: &[&str], name: &str) -> u64 {
    let dir = common::tmp("estimate", name);
    let child = train()
        .args(args)
        .arg("--out")
        .arg(&dir)
        .arg("--quiet")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: `usage` is a plain C struct that `wait4` fills; the pid is this test's child,
    // which nothing else waits for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as i32, "wait4 failed");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{name}: the run failed ({status})"
    );
    let _ = std::fs::remove_dir_all(&dir);
    // Linux reports ru_maxrss in KiB.
    usage.ru_maxrss as u64 * 1024
}

#[test]
fn the_estimate_is_within_twice_the_measured_peak() {
    let short = ["--set", "solver.iterations=3", "--set", "eval.every=1000"];
    #[rustfmt::skip]
    let cases: [(&str, Vec<&str>); 6] = [
        ("CFR+ on Liar's Dice", vec!["--config", "liars_dice_cfr_plus.toml"]),
        ("outcome-sampling MCCFR on Liar's Dice", vec!["--config", "liars_dice_cfr_plus.toml", "--set", "solver.algorithm=\"os-mccfr\""]),
        ("CFR on Leduc with 6 ranks", vec!["--config", "kuhn_cfr.toml", "--set", "game=\"leduc_poker(num_ranks=6)\""]),
        ("batched CFR+ on Liar's Dice, 16 instances", vec!["--config", "leduc_cfr_batched.toml", "--set", "game=\"liars_dice\"", "--set", "solver.batch=16"]),
        ("batched POS on Leduc with 6 ranks", vec!["--config", "leduc_pos_batched.toml", "--set", "game=\"leduc_poker(num_ranks=6)\""]),
        ("Student of Games on Kuhn poker", vec!["--config", "kuhn_sog.toml", "--set", "sog.rounds=3"]),
    ];
    for (i, (case, args)) in cases.iter().enumerate() {
        let solver = !args.iter().any(|a| a.contains("sog"));
        let extra: &[&str] = if solver { &short } else { &short[2..] };
        let args: Vec<&str> = args.iter().chain(extra).copied().collect();
        assert_within_twice(case, &args, &i.to_string());
    }
}

/// Asserts that the estimate of the run `args` describes is within a factor of two of its
/// measured peak (the run goes into a directory named `name`).
fn assert_within_twice(case: &str, args: &[&str], name: &str) {
    let estimate = estimate(args);
    let peak = peak_rss(args, name);
    println!(
        "{case}: estimate {} MiB, peak {} MiB",
        estimate >> 20,
        peak >> 20
    );
    assert!(
        estimate <= 2 * peak && peak <= 2 * estimate,
        "{case}: estimate {estimate} bytes, measured peak {peak} bytes"
    );
}

#[test]
fn the_armac_estimate_is_within_twice_the_measured_peak() {
    #[rustfmt::skip]
    let cases: [(&str, Vec<&str>); 3] = [
        ("Kuhn poker, a network of 512 units (5.8 M parameters)", vec!["--config", "kuhn_armac.toml", "--set", "armac.hidden=512", "--set", "armac.epochs=4", "--set", "armac.learning_steps_per_epoch=2", "--set", "armac.episodes_per_epoch=64"]),
        ("Leduc, reservoirs of 2^17 decisions", vec!["--config", "leduc_armac.toml", "--set", "armac.memory_capacity=131072", "--set", "armac.episodes_per_epoch=8192", "--set", "armac.epochs=6", "--set", "armac.learning_steps_per_epoch=2"]),
        ("Hold'em, a full replay memory", vec!["--config", "nlhe_fcpa.toml", "--set", "armac.memory_capacity=65536", "--set", "armac.epochs=60", "--set", "armac.learning_steps_per_epoch=1"]),
    ];
    let common = [
        "--set",
        "armac.reservoir_capacity=2",
        "--set",
        "eval.every=1000",
    ];
    for (i, (case, args)) in cases.iter().enumerate() {
        let args: Vec<&str> = args.iter().chain(&common).copied().collect();
        assert_within_twice(case, &args, &format!("armac{i}"));
    }
}

/// Under an address-space limit (`RLIMIT_AS`, 4 GiB) an ARMAC network and a Student of Games
/// network that need more are refused before anything is written, naming their key and the
/// estimate; the same runs with small networks start.
#[test]
fn networks_over_the_address_space_limit_are_refused_by_name() {
    use std::os::unix::process::CommandExt;
    let limited = |args: &[&str], out: &std::path::Path| {
        let mut cmd = train();
        cmd.args(args).arg("--out").arg(out).arg("--quiet");
        // SAFETY: setrlimit is async-signal-safe and touches only the child's own limits.
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: 4 << 30,
                    rlim_max: 4 << 30,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.output().unwrap()
    };
    #[rustfmt::skip]
    let cases: [(&str, &str, u32, &str); 2] = [
        // About 14.8 GB (369 M parameters) and 9.2 GB (12,000² × 2 layers, 32 bytes each).
        ("kuhn_armac.toml", "armac.hidden", 4096, "armac.epochs=1"),
        ("kuhn_sog.toml", "sog.net.hidden", 12000, "sog.rounds=1"),
    ];
    for (i, (config, key, units, short)) in cases.iter().enumerate() {
        let out = common::tmp("estimate", &format!("rlimit{i}"));
        let _ = std::fs::remove_dir_all(&out);
        let wide = format!("{key}={units}");
        let o = limited(&["--config", config, "--set", &wide, "--set", short], &out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{config}: {err}");
        assert!(
            err.contains(&format!("`{key}`"))
                && err.contains("the run would need about")
                && err.contains("RLIMIT_AS"),
            "{config}: {err}"
        );
        assert!(
            !out.exists(),
            "{config}: a refused run wrote {}",
            out.display()
        );
        let narrow = format!("{key}=16");
        let o = limited(
            &["--config", config, "--set", &narrow, "--set", short],
            &out,
        );
        assert!(
            o.status.success(),
            "{config} with 16 units under 4 GiB: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let _ = std::fs::remove_dir_all(&out);
    }
}
