//! `armac-train --config <file or name in configs/> [--set key=value]... [--out dir]
//! [--max-seconds S] [--max-cpu-seconds S] [--resume dir] [--overwrite] [--role learner --broker URL]`: runs the
//! algorithm a config names.

use anyhow::Result;
use armac::run::{TrainOptions, train};
use clap::Parser;
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "armac-train",
    version,
    about = "Train a strategy from a config (see configs/)"
)]
struct Args {
    /// Config file, or a bare name looked up in configs/ (e.g. leduc_cfr.toml).
    #[arg(long, required_unless_present = "resume")]
    config: Option<String>,
    /// Override a config key, e.g. --set solver.iterations=500 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Run directory (default: runs/<config>-<unix time>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Stop cleanly after this many seconds, still writing policy, metrics and checkpoint.
    #[arg(long, value_name = "S", value_parser = parse_seconds, allow_hyphen_values = true)]
    max_seconds: Option<f64>,
    /// Stop cleanly once this process has used this many CPU seconds (all threads together),
    /// still writing policy, metrics and checkpoint: a budget that does not depend on what else
    /// the machine runs.
    #[arg(long, value_name = "S", value_parser = parse_seconds, allow_hyphen_values = true)]
    max_cpu_seconds: Option<f64>,
    /// Continue the run in this directory from its last checkpoint.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["config", "out"])]
    resume: Option<PathBuf>,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
    /// Replace the run in --out: only a run directory of armac-train (it holds a .armac-run
    /// marker), never a symbolic link; the old run stays until the new one has committed its
    /// first checkpoint.
    #[arg(long, conflicts_with = "resume")]
    overwrite: bool,
    /// ARMAC: `learner` trains with `armac-actor` processes connected through the broker
    /// instead of actor threads (same as --set cluster.role="learner").
    #[arg(long, value_parser = ["embedded", "learner"])]
    role: Option<String>,
    /// The broker, redis://[:password@]host:port/db, or rediss://... for TLS (same as --set
    /// cluster.broker=...; the password is kept out of every file and log;
    /// ARMAC_REDIS_PASSWORD also supplies it).
    #[arg(long, value_name = "URL")]
    broker: Option<String>,
    /// Print the run's memory estimate (what is compared with the memory available before a
    /// run starts) in bytes, and exit without writing anything.
    #[arg(long, conflicts_with_all = ["resume", "out", "overwrite"])]
    estimate: bool,
}

/// `s` as a TOML string literal.
fn toml_string(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    use armac::util::check::{MAX_SECONDS, seconds};
    s.parse::<f64>()
        .ok()
        .and_then(|v| seconds("", v).ok())
        .ok_or_else(|| {
            format!("`{s}` is not a non-negative number of seconds up to {MAX_SECONDS:e}")
        })
}

fn main() {
    armac::util::tune_allocator();
    let args = Args::parse();
    if let Err(e) = run(args) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<()> {
    let opts = TrainOptions {
        out: args.resume.clone().or(args.out),
        max_seconds: args.max_seconds,
        max_cpu_seconds: args.max_cpu_seconds,
        resume: args.resume.is_some(),
        quiet: args.quiet,
        overwrite: args.overwrite,
    };
    let mut set = args.set.clone();
    if let Some(url) = &args.broker {
        let url = armac::cluster::remember_password(url);
        set.push(format!("cluster.broker={}", toml_string(&url)));
    }
    if let Some(role) = &args.role {
        set.push(format!("cluster.role={}", toml_string(role)));
    }
    if args.estimate {
        let name = args
            .config
            .as_deref()
            .expect("clap requires --config without --resume");
        let (config, _) = armac::run::config::Config::load(name, &set)?;
        let (bytes, largest) = armac::run::memory_estimate(&config)?;
        println!(
            "memory estimate: {bytes} bytes ({} MiB); largest part: {largest}",
            bytes >> 20
        );
        return Ok(());
    }
    let summary = train(args.config.as_deref(), &set, &opts)?;
    let why = if armac::run::interrupt_signal().is_some() {
        " (signal)"
    } else if summary.stopped_early {
        " (time limit)"
    } else {
        ""
    };
    // Games too large for an exact best response (Hold'em) have no NashConv: say so and how
    // such a run is scored, instead of printing NaN.
    let score = if summary.nash_conv.is_nan() && summary.stopped_early {
        "no NashConv evaluated yet".to_string()
    } else if summary.nash_conv.is_nan() {
        "no exact NashConv for this game (score it with `armac-eval scorecard --policy RUN`)"
            .to_string()
    } else {
        format!("nash_conv {:.6e}", summary.nash_conv)
    };
    println!(
        "{}{why} {} on {}: {} iterations in {:.2}s, {score}; outputs in {}",
        if summary.stopped_early {
            "stopped"
        } else {
            "finished"
        },
        summary.algorithm,
        summary.game,
        summary.iterations,
        summary.seconds,
        summary.run_dir.display()
    );
    // The step a stopped run resumes from is its last checkpoint's (the summary's count).
    let unit = match summary.algorithm.as_str() {
        "armac" => "epoch",
        "sog" => "round",
        _ => "iteration",
    };
    let resume = format!(
        "continue from {unit} {} with: armac-train --resume {}",
        summary.iterations,
        shell_word(&summary.run_dir.display().to_string())
    );
    if let Some(sig) = armac::run::interrupt_signal() {
        eprintln!("stopped by signal {sig}; {resume}");
        std::process::exit(128 + sig);
    }
    if summary.stopped_early {
        eprintln!("stopped at the time limit; {resume}");
    }
    if summary.algorithm == "armac" {
        print_next_steps(&summary);
    }
    Ok(())
}

/// After an ARMAC run: its final exact NashConv (small games) and the two commands that look
/// at the run next.
fn print_next_steps(summary: &armac::run::RunSummary) {
    let dir = shell_word(&summary.run_dir.display().to_string());
    let game = shell_word(&summary.game);
    if summary.nash_conv.is_finite() {
        println!(
            "final NashConv of the average policy: {:.4}",
            summary.nash_conv
        );
    }
    println!("next:");
    println!("  tensorboard --logdir {dir}");
    if summary.nash_conv.is_finite() {
        println!("  cargo run --release --bin armac-eval -- nashconv --game {game} --policy {dir}");
    } else {
        // `armac-eval lbr` plays FCPA unless told otherwise.
        let fcpa = armac::games::load_game("hunl_fcpa").map(|g| g.load_string());
        let game_arg = if fcpa.is_ok_and(|s| s == summary.game) {
            String::new()
        } else {
            format!(" --game {game}")
        };
        println!(
            "  cargo run --release --bin armac-eval -- lbr{game_arg} --policy {dir} --variant fc --hands 2000 --reference uniform"
        );
    }
}

/// `s` as one shell word: as it is when it holds no character a shell treats specially,
/// otherwise in single quotes.
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./:=+,".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
