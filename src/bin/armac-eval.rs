//! `armac-eval`: evaluation and debugging tools.
//! * `replay --game G --actions a,b,c [--json]`: every prefix of an action sequence.
//! * `nashconv --game G --policy <uniform|first-legal|file.json> [--json]`: exact NashConv.

use anyhow::{Context, Result, bail};
use armac::eval::{nash_conv, tree_policy};
use armac::game::{Action, load_game};
use armac::policy::{FirstLegalPolicy, Policy, TabularPolicy, UniformPolicy};
use armac::tree::PublicTree;
use clap::{Parser, Subcommand};
use serde_json::json;
use std::path::Path;

#[derive(Parser, Debug)]
#[command(
    name = "armac-eval",
    version,
    about = "Evaluate policies and inspect games"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print, for every prefix of an action sequence, the player to move, the legal actions and
    /// both information-state strings (and the returns at the end).
    Replay {
        /// Game name or OpenSpiel game string.
        #[arg(long)]
        game: String,
        /// Comma-separated actions, chance outcomes included (e.g. 0,1,1,0).
        #[arg(long, allow_hyphen_values = true)]
        actions: String,
        /// One JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Exact NashConv of a policy.
    Nashconv {
        /// Game name or OpenSpiel game string.
        #[arg(long)]
        game: String,
        /// `uniform`, `first-legal`, or an OpenSpiel-format policy JSON file.
        #[arg(long)]
        policy: String,
        /// One JSON object with per-player values.
        #[arg(long)]
        json: bool,
    },
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(args) {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn parse_actions(text: &str) -> Result<Vec<Action>> {
    text.split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(|t| {
            t.parse::<Action>()
                .with_context(|| format!("`{t}` in --actions is not an action number"))
        })
        .collect()
}

fn run(args: Args) -> Result<()> {
    match args.command {
        Command::Replay {
            game,
            actions,
            json,
        } => replay(&game, &actions, json),
        Command::Nashconv { game, policy, json } => nashconv(&game, &policy, json),
    }
}

fn replay(game_name: &str, actions: &str, as_json: bool) -> Result<()> {
    let game = load_game(game_name)?;
    let actions = parse_actions(actions)?;
    let mut state = game.new_initial_state();
    let mut steps = Vec::new();
    for k in 0..=actions.len() {
        let turn = state.turn();
        let step = json!({
            "history": state.history(),
            "current_player": turn.openspiel_id(),
            "legal_actions": state.legal_actions(),
            "information_state_string": [state.information_state_string(0), state.information_state_string(1)],
        });
        if !as_json {
            println!(
                "history [{}] player {} legal {:?}",
                armac::game::history_string(state.history()),
                turn.openspiel_id(),
                state.legal_actions()
            );
            for p in 0..2 {
                println!("  infostate p{p}: {:?}", state.information_state_string(p));
            }
        }
        steps.push(step);
        if k < actions.len() {
            let a = actions[k];
            state
                .try_apply(a)
                .with_context(|| format!("action #{k} of --actions"))?;
        }
    }
    let returns = state.is_terminal().then(|| state.returns());
    if as_json {
        println!(
            "{}",
            json!({"game": game.load_string(), "steps": steps, "terminal": state.is_terminal(), "returns": returns})
        );
    } else if let Some(r) = returns {
        println!("returns {} {}", r[0], r[1]);
    }
    Ok(())
}

fn nashconv(game_name: &str, policy: &str, as_json: bool) -> Result<()> {
    let game = load_game(game_name)?;
    let policy: Box<dyn Policy> = match policy {
        "uniform" => Box::new(UniformPolicy),
        "first-legal" => Box::new(FirstLegalPolicy),
        path => {
            if !Path::new(path).is_file() {
                bail!("--policy `{path}` is neither `uniform`, `first-legal` nor an existing file");
            }
            let p = TabularPolicy::load(Path::new(path))?;
            p.check_game(&game.load_string())
                .with_context(|| format!("policy file {path}"))?;
            Box::new(p)
        }
    };
    let tree = PublicTree::build(game.as_ref())?;
    let flat = tree_policy(&tree, game.as_ref(), policy.as_ref())
        .with_context(|| format!("policy {}", policy.name()))?;
    let r = nash_conv(&tree, &flat);
    if as_json {
        println!(
            "{}",
            json!({
                "game": game.load_string(),
                "policy": policy.name(),
                "nash_conv": r.nash_conv,
                "exploitability": r.nash_conv / 2.0,
                "best_response_values": r.best_response_values,
                "on_policy_values": r.on_policy_values,
            })
        );
    } else {
        println!("nash_conv {}", r.nash_conv);
    }
    Ok(())
}
