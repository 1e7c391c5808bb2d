//! Play against a served policy: matches of heads-up hands kept on the server.
//!
//! A session is one match between the person and one head of one model, keyed by a random
//! 128-bit id. The server deals (chance outcomes drawn from the session's seeded generator),
//! the model acts by sampling its policy with the same generator, and the person's actions
//! arrive as requests that name the hand and the step they answer, so a stale or repeated
//! click is refused rather than applied to a later decision. Seats alternate from hand to
//! hand. The table holds at most [`MAX_SESSIONS`] sessions; one idle for [`MAX_IDLE`] is
//! dropped, and when the table is full the least recently used one makes room.
//!
//! What the person sees of a hand: their own private deals (the chance outcomes before the
//! first decision, split in halves: player 0's, then player 1's, as every dealt game here
//! deals them), the public chance outcomes, every action, and at the end the model's cards.

use super::model::{App, Model};
use super::table::{small_poker_card, strip_move};
use super::{ApiError, Incoming};
use crate::eval::phh::{PhhTable, PhhWriter};
use crate::game::{Action, State, Turn};
use crate::games::universal_poker::UniversalPokerGame;
use crate::util::SplitMix64;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The most sessions kept at once.
pub const MAX_SESSIONS: usize = 256;

/// A session unused this long is dropped.
pub const MAX_IDLE: Duration = Duration::from_secs(2 * 3600);

/// The most hands of one match (its transcript stays bounded).
pub const MAX_HANDS: u64 = 100_000;

/// The session table.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Entry>>,
    created: AtomicU64,
}

struct Entry {
    session: Arc<Mutex<Session>>,
    used: Instant,
}

impl Sessions {
    /// Adds `session` under a fresh id (evicting idle or, when full, least recently used ones).
    fn insert(&self, session: Session) -> String {
        let id = format!("{:032x}", rand::random::<u128>());
        let mut map = self.map.lock().expect("session table poisoned");
        map.retain(|_, e| e.used.elapsed() < MAX_IDLE);
        while map.len() >= MAX_SESSIONS {
            let oldest = map
                .iter()
                .min_by_key(|(_, e)| e.used)
                .map(|(k, _)| k.clone())
                .expect("a full table has entries");
            map.remove(&oldest);
        }
        map.insert(
            id.clone(),
            Entry {
                session: Arc::new(Mutex::new(session)),
                used: Instant::now(),
            },
        );
        id
    }

    /// The session `id`, or a 404.
    fn get(&self, id: &str) -> Result<Arc<Mutex<Session>>, ApiError> {
        let mut map = self.map.lock().expect("session table poisoned");
        match map.get_mut(id) {
            Some(e) if e.used.elapsed() < MAX_IDLE => {
                e.used = Instant::now();
                Ok(Arc::clone(&e.session))
            }
            _ => Err(ApiError::not_found(format!(
                "no play session `{id}` (unknown, or dropped after {} minutes idle)",
                MAX_IDLE.as_secs() / 60
            ))),
        }
    }

    /// The number of live sessions.
    pub fn len(&self) -> usize {
        self.map.lock().expect("session table poisoned").len()
    }

    /// `true` when no session is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One match.
struct Session {
    model: usize,
    head: usize,
    rng: SplitMix64,
    seed: u64,
    /// The person's seat in hand 1.
    first_seat: usize,
    /// The current hand, from 1.
    hand: u64,
    /// The person's seat in the current hand.
    seat: usize,
    state: Box<dyn State>,
    /// For each action of the history: dealt by chance.
    chance: Vec<bool>,
    /// The person's winnings of every finished hand, in chips.
    results: Vec<f64>,
    over: bool,
    /// The text of every finished hand.
    transcript: String,
    /// Every finished hand: its whole history and the person's seat.
    finished: Vec<(Vec<Action>, usize)>,
}

impl Session {
    fn new(model: &Model, id: usize, head: usize, seat: usize, seed: u64) -> Session {
        Session {
            model: id,
            head,
            rng: SplitMix64::new(seed),
            seed,
            first_seat: seat,
            hand: 1,
            seat,
            state: model.game.new_initial_state(),
            chance: Vec::new(),
            results: Vec::new(),
            over: false,
            transcript: String::new(),
            finished: Vec::new(),
        }
    }

    /// Plays chance and the model until the person is to act or the hand ends.
    fn advance(&mut self, model: &Model) -> Result<(), ApiError> {
        loop {
            match self.state.turn() {
                Turn::Terminal => {
                    if !self.over {
                        self.over = true;
                        self.results.push(self.state.returns()[self.seat]);
                        let text = hand_text(model, self);
                        self.transcript.push_str(&text);
                        self.finished
                            .push((self.state.history().to_vec(), self.seat));
                    }
                    return Ok(());
                }
                Turn::Chance => {
                    let outcomes = self.state.chance_outcomes();
                    let (k, _) = self.rng.weighted_by(outcomes.len(), |i| outcomes[i].1);
                    self.state.apply_action(outcomes[k].0);
                    self.chance.push(true);
                }
                Turn::Player(p) if p == self.seat => return Ok(()),
                Turn::Player(_) => {
                    let policy = model.heads[self.head].1.policy();
                    let probs = policy
                        .action_probabilities(self.state.as_ref())
                        .map_err(|e| ApiError {
                            status: 500,
                            message: format!("the model's policy failed: {e}"),
                        })?;
                    let legal = self.state.legal_actions();
                    let (k, _) = self.rng.weighted_by(legal.len(), |i| probs[i].max(0.0));
                    self.state.apply_action(legal[k]);
                    self.chance.push(false);
                }
            }
        }
    }

    /// Starts the next hand (seats swapped).
    fn next_hand(&mut self, model: &Model) {
        self.hand += 1;
        self.seat = 1 - self.seat;
        self.state = model.game.new_initial_state();
        self.chance.clear();
        self.over = false;
    }

    /// The number of private deals at the start of the hand (chance before the first decision).
    fn private_deals(&self) -> usize {
        self.chance.iter().take_while(|&&c| c).count()
    }

    /// The private deals of `player`.
    fn private_of(&self, player: usize) -> std::ops::Range<usize> {
        let n = self.private_deals();
        let half = n / 2;
        if player == 0 { 0..half } else { half..n }
    }
}

/// The name of chance outcome `a` of `model`'s game as a card, die or plain outcome.
fn outcome_name(model: &Model, state_before: &dyn State, a: Action) -> String {
    if let Some(card) = small_poker_card(model.game.short_name(), a) {
        return card.to_string();
    }
    match model.game.short_name() {
        "liars_dice" => format!("die {}", a + 1),
        _ => {
            let s = strip_move(state_before.action_to_string(None, a));
            s.strip_prefix("Deal ").map(str::to_string).unwrap_or(s)
        }
    }
}

/// The name of player `p`'s action `a` at `state`: FCPA poker's fold / call / pot / all-in,
/// otherwise the game's own name without OpenSpiel's `player=.. move=` prefix.
fn player_label(model: &Model, state: &dyn State, p: usize, a: Action) -> String {
    let fcpa =
        model.game.short_name() == "universal_poker" && model.game.num_distinct_actions() <= 4;
    if let Some(name) = ["Fold", "Call", "Pot", "All-in"].get(a).filter(|_| fcpa) {
        // Nothing to call: the call is a check.
        let nothing_to_call = poker_pot(model, state.history()).is_some_and(|(_, c)| c[0] == c[1]);
        if a == 1 && nothing_to_call {
            return "Check".to_string();
        }
        return name.to_string();
    }
    strip_move(state.action_to_string(Some(p), a))
}

/// Each history action of `s` with the state it was taken in.
fn replay(model: &Model, s: &Session) -> Vec<(Box<dyn State>, Action, bool)> {
    let mut st = model.game.new_initial_state();
    let mut out = Vec::new();
    for (&a, &c) in s.state.history().iter().zip(&s.chance) {
        out.push((st.clone_box(), a, c));
        st.apply_action(a);
    }
    out
}

fn who(s: &Session, p: usize) -> &'static str {
    if p == s.seat { "you" } else { "model" }
}

/// The finished hand as text (the downloaded history).
fn hand_text(model: &Model, s: &Session) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "Hand {} (game {}; you are player {}, the model `{}` {} is player {})",
        s.hand,
        model.game.load_string(),
        s.seat,
        model.name,
        model.heads[s.head].0,
        1 - s.seat
    );
    let private = s.private_deals();
    for (i, (before, a, c)) in replay(model, s).into_iter().enumerate() {
        if c {
            let to = if i < private {
                let p = usize::from(i >= private / 2);
                format!(" to player {p} ({})", who(s, p))
            } else {
                String::new()
            };
            let _ = writeln!(t, "  deal{to}: {}", outcome_name(model, before.as_ref(), a));
        } else if let Turn::Player(p) = before.turn() {
            let label = player_label(model, before.as_ref(), p, a);
            let _ = writeln!(t, "  player {p} ({}): {label}", who(s, p));
        }
    }
    let r = s.state.returns();
    let _ = writeln!(
        t,
        "  final state: {}",
        s.state.to_string().replace('\n', " | ")
    );
    let _ = writeln!(
        t,
        "  result: you {:+} chips, the model {:+}\n",
        r[s.seat],
        r[1 - s.seat]
    );
    t
}

/// The match's result: hands, mean and 95% interval per hand in `unit`.
fn result_json(model: &Model, s: &Session) -> Value {
    let scale = model.big_blind.map_or(1.0, |bb| 1000.0 / bb);
    let n = s.results.len();
    // `+ 0.0`: an empty sum is -0.0.
    let mean = s.results.iter().sum::<f64>() / n.max(1) as f64 + 0.0;
    let ci95 = (n >= 2).then(|| {
        let var = s.results.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        1.96 * (var / n as f64).sqrt() * scale
    });
    json!({
        "hands": n,
        "total_chips": s.results.iter().sum::<f64>() + 0.0,
        "mean": mean * scale,
        "ci95": ci95,
        "unit": if model.big_blind.is_some() { "mbb/hand" } else { "chips/hand" },
    })
}

/// The hand as the person sees it.
fn view(model: &Model, id: &str, s: &Session) -> Value {
    let steps = replay(model, s);
    let mine = s.private_of(s.seat);
    let theirs = s.private_of(1 - s.seat);
    let private = s.private_deals();
    let mut your_cards = Vec::new();
    let mut model_cards = Vec::new();
    let mut board = Vec::new();
    let mut events = Vec::new();
    for (i, (before, a, c)) in steps.iter().enumerate() {
        if *c {
            let name = outcome_name(model, before.as_ref(), *a);
            if mine.contains(&i) {
                your_cards.push(name);
            } else if theirs.contains(&i) {
                if s.over {
                    model_cards.push(name);
                }
            } else if i >= private {
                events.push(json!({"who": "chance", "label": format!("deal {name}")}));
                board.push(name);
            }
        } else if let Turn::Player(p) = before.turn() {
            let label = player_label(model, before.as_ref(), p, *a);
            events.push(json!({"who": who(s, p), "player": p, "label": label}));
        }
    }
    let to_act = !s.over && s.state.turn() == Turn::Player(s.seat);
    let legal: Vec<Value> = if to_act {
        let p = s.seat;
        s.state
            .legal_actions()
            .iter()
            .map(|&a| json!({"action": a, "label": player_label(model, s.state.as_ref(), p, a)}))
            .collect()
    } else {
        Vec::new()
    };
    let pot = poker_pot(model, s.state.history());
    json!({
        "session": id,
        "model": s.model,
        "policy": model.heads[s.head].0,
        "seed": s.seed,
        "hand": s.hand,
        "step": s.state.history().len(),
        "seat": s.seat,
        "to_act": if to_act { "you" } else { "over" },
        "legal": legal,
        "your_cards": your_cards,
        "board": board,
        "events": events,
        "infostate": s.state.information_state_string(s.seat),
        "pot": pot.map(|(c, _)| c),
        "contributions": pot.map(|(_, c)| c),
        "over": s.over,
        "hand_result": s.over.then(|| s.state.returns()[s.seat]),
        "model_cards": model_cards,
        "final_state": s.over.then(|| s.state.to_string()),
        "result": result_json(model, s),
    })
}

/// For poker, the pot as OpenSpiel's information state prints it (`[Pot: X]`: the largest
/// contribution times the number of players who have not folded) and each player's
/// contribution after `history`.
fn poker_pot(model: &Model, history: &[Action]) -> Option<(i32, [i32; 2])> {
    model.big_blind?;
    let game = UniversalPokerGame::from_string(&model.game.load_string()).ok()?;
    let mut st = game.initial_state();
    for &a in history {
        st.apply(a);
    }
    let c = st.contributions();
    let in_hand = st.betting().folded.iter().filter(|&&f| !f).count() as i32;
    Some((c[0].max(c[1]) * in_hand, c))
}

/// The session named by the request: `session` in the JSON body or the query.
fn session_id(
    req: &Incoming,
    body: Option<&serde_json::Map<String, Value>>,
) -> Result<String, ApiError> {
    let v = match body {
        Some(b) => b.get("session").and_then(Value::as_str).map(str::to_string),
        None => req.param("session").map(str::to_string),
    };
    v.filter(|s| !s.is_empty())
        .ok_or_else(|| ApiError::bad("`session` is missing (the id /api/play/new returned)"))
}

/// A non-negative integer field of a JSON body.
fn body_u64(body: &serde_json::Map<String, Value>, name: &str) -> Result<Option<u64>, ApiError> {
    match body.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| ApiError::bad(format!("`{name}` {v} is not a non-negative integer"))),
    }
}

/// The play endpoints: each answers from the served models of `app`.
impl Sessions {
    /// `POST /api/play/new`: `{"model": id, "policy": head, "seat": 0|1, "seed": n}` (all but
    /// `model` optional).
    pub fn play_new(&self, app: &App, req: &Incoming) -> Result<Value, ApiError> {
        let body = req.json_body()?;
        let (id, model) = app.model(body.get("model"))?;
        let head_name = match body.get("policy") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(v) => return Err(ApiError::bad(format!("`policy` {v} is not a name"))),
        };
        let (head, _) = model.head(head_name)?;
        let seat = match body_u64(&body, "seat")? {
            None => 0,
            Some(s @ (0 | 1)) => s as usize,
            Some(s) => return Err(ApiError::bad(format!("`seat` {s} is not 0 or 1"))),
        };
        let n = self.created.fetch_add(1, Ordering::Relaxed);
        let seed = body_u64(&body, "seed")?
            .unwrap_or_else(|| app.seed ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut session = Session::new(model, id, head, seat, seed);
        session.advance(model)?;
        let v = view(model, "", &session);
        let sid = self.insert(session);
        let mut v = v;
        v["session"] = json!(sid);
        Ok(v)
    }

    /// `POST /api/play/act`: `{"session", "hand", "step", "action"}`; `hand` and `step` are
    /// the ones of the view being answered.
    pub fn play_act(&self, app: &App, req: &Incoming) -> Result<Value, ApiError> {
        let body = req.json_body()?;
        let sid = session_id(req, Some(&body))?;
        let field = |name: &str| {
            body_u64(&body, name)?.ok_or_else(|| ApiError::bad(format!("`{name}` is missing")))
        };
        let (hand, step, action) = (field("hand")?, field("step")?, field("action")?);
        let cell = self.get(&sid)?;
        let mut s = cell.lock().expect("session poisoned");
        let model = &app.models[s.model];
        if hand != s.hand {
            return Err(ApiError::conflict(format!(
                "out of turn: the action is for hand {hand}, the match is at hand {}",
                s.hand
            )));
        }
        if s.over {
            return Err(ApiError::conflict(format!(
                "hand {hand} is over; POST /api/play/next deals the next one"
            )));
        }
        let now = s.state.history().len() as u64;
        if step != now || s.state.turn() != Turn::Player(s.seat) {
            return Err(ApiError::conflict(format!(
                "out of turn: the action answers step {step} of hand {hand}, the hand is at \
                 step {now}"
            )));
        }
        let legal = s.state.legal_actions();
        let action = action as Action;
        if !legal.contains(&action) {
            return Err(ApiError::bad(format!(
                "action {action} is not legal here; legal actions: {legal:?}"
            )));
        }
        s.state.apply_action(action);
        s.chance.push(false);
        s.advance(model)?;
        Ok(view(model, &sid, &s))
    }

    /// `POST /api/play/next`: `{"session"}`; the current hand must be over.
    pub fn play_next(&self, app: &App, req: &Incoming) -> Result<Value, ApiError> {
        let body = req.json_body()?;
        let sid = session_id(req, Some(&body))?;
        let cell = self.get(&sid)?;
        let mut s = cell.lock().expect("session poisoned");
        let model = &app.models[s.model];
        if !s.over {
            return Err(ApiError::conflict(format!(
                "hand {} is still being played",
                s.hand
            )));
        }
        if s.hand >= MAX_HANDS {
            return Err(ApiError::conflict(format!(
                "the match has reached {MAX_HANDS} hands; start a new one"
            )));
        }
        s.next_hand(model);
        s.advance(model)?;
        Ok(view(model, &sid, &s))
    }

    /// `GET /api/play/state?session=S`.
    pub fn play_state(&self, app: &App, req: &Incoming) -> Result<Value, ApiError> {
        let sid = session_id(req, None)?;
        let cell = self.get(&sid)?;
        let s = cell.lock().expect("session poisoned");
        Ok(view(&app.models[s.model], &sid, &s))
    }

    /// `GET /api/play/history?session=S`: every finished hand, in the Poker Hand History format
    /// (a `.phhs` file) for heads-up no-limit Hold'em, else as text followed by the result.
    pub fn play_history(&self, app: &App, req: &Incoming) -> Result<super::Reply, ApiError> {
        let sid = session_id(req, None)?;
        let cell = self.get(&sid)?;
        let s = cell.lock().expect("session poisoned");
        let model = &app.models[s.model];
        let short = &sid[..8.min(sid.len())];
        if let Ok(table) = PhhTable::new(&model.game.load_string()) {
            let opponent = format!("{} ({})", model.name, model.heads[s.head].0);
            let mut out = PhhWriter::new(table, Vec::new());
            for (history, seat) in &s.finished {
                let mut names = [opponent.as_str(); 2];
                names[*seat] = "you";
                out.write_hand(names, history).map_err(|e| ApiError {
                    status: 500,
                    message: format!("writing the hand history: {e}"),
                })?;
            }
            let bytes = out.finish().expect("writing to memory cannot fail");
            return Ok(super::Reply::download(
                String::from_utf8(bytes).expect("hand histories are text"),
                format!("armac-hands-{short}.phhs"),
            ));
        }
        let r = result_json(model, &s);
        let mut text = format!(
            "armac-eval serve: match against `{}` ({}), seed {}, you started in seat {}\n\n",
            model.name, model.heads[s.head].0, s.seed, s.first_seat
        );
        text.push_str(&s.transcript);
        let _ = writeln!(
            text,
            "{} finished hands: {:.1} {} (95% interval ± {})",
            r["hands"],
            r["mean"].as_f64().unwrap_or(0.0),
            r["unit"].as_str().unwrap_or(""),
            r["ci95"]
                .as_f64()
                .map_or("n/a (fewer than 2 hands)".to_string(), |c| format!(
                    "{c:.1}"
                ))
        );
        Ok(super::Reply::download(
            text,
            format!("armac-hands-{short}.txt"),
        ))
    }
}
