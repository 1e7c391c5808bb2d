//! OpenSpiel-style game strings: `name`, `name()` or `name(key=value,...)`, where a value is
//! an integer, a float, a boolean (`true`/`false`/`True`/`False`), a nested game string, or
//! any other text (a string).

use super::GameError;
use std::collections::BTreeMap;

/// One parameter value.
#[derive(Clone, Debug, PartialEq)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    Bool(bool),
    Str(String),
    /// A nested game, e.g. `game=goofspiel(num_cards=5)`.
    Game(GameParams),
}

impl ParamValue {
    /// OpenSpiel's rendering of the value inside a game string.
    pub fn render(&self) -> String {
        match self {
            ParamValue::Int(i) => i.to_string(),
            ParamValue::Float(f) => f.to_string(),
            ParamValue::Bool(b) => if *b { "True" } else { "False" }.to_string(),
            ParamValue::Str(s) => s.clone(),
            ParamValue::Game(g) => g.render(),
        }
    }
}

/// A parsed game string: the game's name and its parameters (sorted by key).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct GameParams {
    pub name: String,
    pub params: BTreeMap<String, ParamValue>,
}

impl GameParams {
    /// Parses `name(key=value,...)`.
    pub fn parse(text: &str) -> Result<Self, GameError> {
        let err = |reason: &str| GameError::Parse {
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let mut p = Parser {
            s: text.trim().as_bytes(),
            i: 0,
        };
        let g = p.game().map_err(|r| err(&r))?;
        if p.i != p.s.len() {
            return Err(err(&format!("unexpected text at byte {}", p.i)));
        }
        Ok(g)
    }

    /// A parameter set with no parameters.
    pub fn named(name: &str) -> Self {
        GameParams {
            name: name.to_string(),
            params: BTreeMap::new(),
        }
    }

    /// `name(k=v,...)` with keys in sorted order, `name` alone when there are no parameters.
    pub fn render(&self) -> String {
        if self.params.is_empty() {
            return self.name.clone();
        }
        let inner: Vec<String> = self
            .params
            .iter()
            .map(|(k, v)| format!("{k}={}", v.render()))
            .collect();
        format!("{}({})", self.name, inner.join(","))
    }

    /// Fails with a clear error if a key is not in `allowed`.
    pub fn check_known(&self, allowed: &[&str]) -> Result<(), GameError> {
        for k in self.params.keys() {
            if !allowed.contains(&k.as_str()) {
                return Err(self.bad(k, &format!("unknown parameter; supported: {allowed:?}")));
            }
        }
        Ok(())
    }

    /// An integer parameter, `default` when absent.
    pub fn int(&self, key: &str, default: i64) -> Result<i64, GameError> {
        match self.params.get(key) {
            None => Ok(default),
            Some(ParamValue::Int(i)) => Ok(*i),
            Some(v) => Err(self.bad(key, &format!("expected an integer, got `{}`", v.render()))),
        }
    }

    /// An integer parameter restricted to `lo..=hi`.
    pub fn int_in(&self, key: &str, default: i64, lo: i64, hi: i64) -> Result<i64, GameError> {
        let v = self.int(key, default)?;
        if v < lo || v > hi {
            return Err(self.bad(
                key,
                &format!("{v} is outside the supported range {lo}..={hi}"),
            ));
        }
        Ok(v)
    }

    /// A boolean parameter, `default` when absent.
    pub fn bool(&self, key: &str, default: bool) -> Result<bool, GameError> {
        match self.params.get(key) {
            None => Ok(default),
            Some(ParamValue::Bool(b)) => Ok(*b),
            Some(v) => Err(self.bad(key, &format!("expected a boolean, got `{}`", v.render()))),
        }
    }

    /// A string parameter, `default` when absent.
    pub fn string(&self, key: &str, default: &str) -> Result<String, GameError> {
        match self.params.get(key) {
            None => Ok(default.to_string()),
            Some(ParamValue::Str(s)) => Ok(s.clone()),
            Some(v) => Err(self.bad(key, &format!("expected a string, got `{}`", v.render()))),
        }
    }

    /// A nested game parameter.
    pub fn game(&self, key: &str) -> Result<Option<GameParams>, GameError> {
        match self.params.get(key) {
            None => Ok(None),
            Some(ParamValue::Game(g)) => Ok(Some(g.clone())),
            Some(ParamValue::Str(s)) => Ok(Some(GameParams::named(s))),
            Some(v) => Err(self.bad(key, &format!("expected a game, got `{}`", v.render()))),
        }
    }

    /// A `BadParameter` error for `key`.
    pub fn bad(&self, key: &str, reason: &str) -> GameError {
        GameError::BadParameter {
            game: self.name.clone(),
            param: key.to_string(),
            reason: reason.to_string(),
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn ident(&mut self) -> Result<String, String> {
        let start = self.i;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == b'_' {
                self.i += 1;
            } else {
                break;
            }
        }
        if start == self.i {
            return Err(format!("expected a name at byte {start}"));
        }
        Ok(String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    fn game(&mut self) -> Result<GameParams, String> {
        let name = self.ident()?;
        let mut g = GameParams::named(&name);
        if self.peek() != Some(b'(') {
            return Ok(g);
        }
        self.i += 1;
        if self.peek() == Some(b')') {
            self.i += 1;
            return Ok(g);
        }
        loop {
            let key = self.ident()?;
            if self.peek() != Some(b'=') {
                return Err(format!("expected `=` after `{key}`"));
            }
            self.i += 1;
            let value = self.value()?;
            if g.params.insert(key.clone(), value).is_some() {
                return Err(format!("parameter `{key}` given twice"));
            }
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b')') => {
                    self.i += 1;
                    return Ok(g);
                }
                _ => return Err(format!("expected `,` or `)` at byte {}", self.i)),
            }
        }
    }

    fn value(&mut self) -> Result<ParamValue, String> {
        // A nested game: identifier followed by `(`.
        let start = self.i;
        let mut j = self.i;
        while j < self.s.len() && (self.s[j].is_ascii_alphanumeric() || self.s[j] == b'_') {
            j += 1;
        }
        if j > start && self.s.get(j) == Some(&b'(') && !self.s[start].is_ascii_digit() {
            return Ok(ParamValue::Game(self.game()?));
        }
        while let Some(c) = self.peek() {
            if c == b',' || c == b')' || c == b'(' {
                break;
            }
            self.i += 1;
        }
        let text = String::from_utf8_lossy(&self.s[start..self.i])
            .trim()
            .to_string();
        if text.is_empty() {
            return Err(format!("empty value at byte {start}"));
        }
        Ok(match text.as_str() {
            "true" | "True" => ParamValue::Bool(true),
            "false" | "False" => ParamValue::Bool(false),
            t => {
                if let Ok(i) = t.parse::<i64>() {
                    ParamValue::Int(i)
                } else if let Ok(f) = t.parse::<f64>() {
                    ParamValue::Float(f)
                } else {
                    ParamValue::Str(t.to_string())
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nested_game_strings() {
        let g = GameParams::parse(
            "turn_based_simultaneous_game(game=goofspiel(imp_info=True,num_cards=5,points_order=descending))",
        )
        .unwrap();
        assert_eq!(g.name, "turn_based_simultaneous_game");
        let inner = g.game("game").unwrap().unwrap();
        assert_eq!(inner.int("num_cards", 0).unwrap(), 5);
        assert!(inner.bool("imp_info", false).unwrap());
        assert_eq!(inner.string("points_order", "").unwrap(), "descending");
        assert_eq!(
            inner.render(),
            "goofspiel(imp_info=True,num_cards=5,points_order=descending)"
        );
    }

    #[test]
    fn rejects_malformed_strings() {
        assert!(GameParams::parse("leduc_poker(").is_err());
        assert!(GameParams::parse("leduc_poker(x)").is_err());
        assert!(GameParams::parse("leduc_poker(a=1,a=2)").is_err());
        assert!(GameParams::parse("leduc_poker()junk").is_err());
        assert_eq!(
            GameParams::parse("kuhn_poker()").unwrap().name,
            "kuhn_poker"
        );
    }

    #[test]
    fn typed_getters_name_the_parameter() {
        let g = GameParams::parse("liars_dice(numdice=two)").unwrap();
        let e = g.int("numdice", 1).unwrap_err().to_string();
        assert!(e.contains("numdice") && e.contains("integer"), "{e}");
        assert!(g.check_known(&["players"]).is_err());
    }
}
