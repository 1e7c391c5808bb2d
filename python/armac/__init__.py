"""armac from Python: games, CFR-family solvers, NashConv, Local Best Response, matches, ARMAC
models and training runs, over the Rust library (the extension ``armac._armac``).

Games and states have pyspiel's method names and values. Policies cross over to OpenSpiel:
``TabularPolicy.to_openspiel`` / ``policy_from_openspiel`` convert tables, ``load_model``
returns an ``open_spiel.python.policy.Policy`` subclass (when open_spiel is installed), and
every evaluator accepts OpenSpiel policies and plain Python callables ``f(state) -> probs``.
See docs/python.md for the manual.
"""

from __future__ import annotations

import json as _json
import os as _os
from typing import Any, Callable, Mapping, Sequence

import numpy as _np

from . import _armac
from ._armac import ConfigError, Game, GameError, PolicyError, State, __version__, algorithms, load_game

__all__ = [
    "ConfigError",
    "Game",
    "GameError",
    "Model",
    "PolicyError",
    "State",
    "TabularPolicy",
    "algorithms",
    "best_response_values",
    "export_onnx",
    "lbr",
    "load_game",
    "load_model",
    "match",
    "nash_conv",
    "policy_from_openspiel",
    "solve",
    "train",
]


def __dir__() -> list[str]:
    """The public API (``__all__``) and ``__version__``: no imported helper modules."""
    return sorted([*__all__, "__version__"])

try:  # OpenSpiel is optional: only the conversions and the Model base class need it.
    import pyspiel as _pyspiel
    from open_spiel.python import policy as _os_policy

    _PolicyBase: type = _os_policy.Policy
except ImportError:  # pragma: no cover - exercised only without open_spiel
    _pyspiel = None
    _os_policy = None
    _PolicyBase = object


def _need_openspiel(what: str) -> None:
    if _pyspiel is None:
        raise ImportError(f"{what} needs open_spiel (python3 -m pip install open_spiel)")


def _game_string(game: Any) -> str:
    """The game string of an armac.Game, a pyspiel game or a string."""
    if isinstance(game, Game):
        return game.load_string()
    if isinstance(game, str):
        return game
    if _pyspiel is not None and isinstance(game, _pyspiel.Game):
        return str(game)
    raise GameError(f"{game!r} is not a game: pass an armac.Game, a pyspiel game or a game string")


def _armac_game(game: Any) -> Game:
    return game if isinstance(game, Game) else load_game(_game_string(game))


def _same_game(a: str, b: str) -> bool:
    return load_game(a).load_string() == load_game(b).load_string()


class TabularPolicy:
    """A table of action probabilities per information-state string, for one game (what
    ``solve`` returns and OpenSpiel's policy JSON holds)."""

    def __init__(self, inner: Any):
        self._inner = inner
        self._game: Game | None = None
        self._checked: set[str] = set()

    @classmethod
    def from_table(cls, game: Any, table: Mapping[str, Sequence[tuple[int, float]]]) -> "TabularPolicy":
        """A table ``{infostate: [(action, prob), ...]}`` for ``game`` (validated)."""
        entries = {k: [(int(a), float(p)) for a, p in v] for k, v in table.items()}
        return cls(_armac.tabular_policy(_armac_game(game).load_string(), entries))

    @classmethod
    def load(cls, path: str | _os.PathLike) -> "TabularPolicy":
        """Reads an OpenSpiel-format policy JSON file (``policy.json`` of a solver run)."""
        return cls(_armac.TabularPolicy.load(_os.fspath(path)))

    @property
    def game(self) -> str:
        """The OpenSpiel load string of the game the table is for."""
        return self._inner.game

    def table(self) -> dict[str, list[tuple[int, float]]]:
        """``{infostate: [(action, prob), ...]}``."""
        return self._inner.table()

    def to_json(self) -> str:
        """OpenSpiel's policy JSON, as ``armac-eval export-policy`` writes it."""
        return self._inner.to_json()

    def save(self, path: str | _os.PathLike) -> None:
        """Writes ``to_json()`` to ``path``."""
        with open(path, "w") as f:
            f.write(self.to_json())

    def action_probabilities(self, state: Any, player_id: int | None = None) -> dict[int, float]:
        """``{action: probability}`` over the legal actions of the player to move, as
        OpenSpiel's policies answer; ``state`` is an armac state or a pyspiel state of the
        table's game (replayed from its history)."""
        if not isinstance(state, State):
            key = str(state.get_game())
            if key not in self._checked:
                if not _same_game(self.game, key):
                    raise PolicyError(f"policy is for game `{self.game}` but the state is of `{key}`")
                self._checked.add(key)
            if self._game is None:
                self._game = load_game(self.game)
            state = self._game.state_from_history([int(a) for a in state.history()])
        return dict(zip(state.legal_actions(), self._inner.action_probabilities(state)))

    def to_openspiel(self, pyspiel_game: Any) -> Any:
        """This table as an ``open_spiel.python.policy.TabularPolicy`` of ``pyspiel_game``."""
        _need_openspiel("to_openspiel")
        if not _same_game(self.game, str(pyspiel_game)):
            raise PolicyError(f"policy is for game `{self.game}` but the game is `{pyspiel_game}`")
        out = _os_policy.TabularPolicy(pyspiel_game)
        table = self._inner.table()
        for key, row in out.state_lookup.items():
            entry = table.get(key)
            if entry is None:
                raise PolicyError(f"policy has no entry for information state {key!r}")
            probs = _np.zeros(out.action_probability_array.shape[1])
            for a, p in entry:
                probs[a] = p
            out.action_probability_array[row] = probs
        return out

    def __len__(self) -> int:
        return len(self._inner)

    def __repr__(self) -> str:
        return repr(self._inner)


def policy_from_openspiel(tabular_policy: Any) -> TabularPolicy:
    """An armac table from an ``open_spiel.python.policy.TabularPolicy`` (its legal actions'
    probabilities at every information state it lists)."""
    _need_openspiel("policy_from_openspiel")
    if not hasattr(tabular_policy, "state_lookup"):
        raise PolicyError(f"{tabular_policy!r} is not an OpenSpiel TabularPolicy (no state_lookup)")
    probs = tabular_policy.action_probability_array
    mask = tabular_policy.legal_actions_mask
    table = {}
    for key, row in tabular_policy.state_lookup.items():
        legal = _np.flatnonzero(mask[row])
        table[key] = [(int(a), float(probs[row][a])) for a in legal]
    return TabularPolicy(_armac.tabular_policy(str(tabular_policy.game), table))


class Model(_PolicyBase):
    """An ARMAC network's average policy (a shipped model, a run or checkpoint directory).

    An ``open_spiel.python.policy.Policy`` when open_spiel is installed: ``action_probabilities``
    takes pyspiel's own states (``universal_poker``, ``leduc_poker``, ...) as well as armac's
    and returns ``{action: probability}`` over the legal actions. ``action_probabilities_batch``
    answers many information-state tensors in one call."""

    def __init__(self, inner: Any):
        self._model = inner
        self._checked: set[str] = set()
        game = inner.game
        if _pyspiel is not None:
            super().__init__(_pyspiel.load_game(game.load_string()), [0, 1])
        else:
            self.game = game
            self.player_ids = [0, 1]

    @property
    def armac_game(self) -> Game:
        """The model's game as an armac.Game."""
        return self._model.game

    @property
    def name(self) -> str:
        return self._model.name

    def action_probabilities(self, state: Any, player_id: int | None = None) -> dict[int, float]:
        """``{action: probability}`` over the legal actions of the player to move."""
        if isinstance(state, State):
            probs = self._model.action_probabilities(state)
            return dict(zip(state.legal_actions(), probs))
        key = str(state.get_game())
        if key not in self._checked:
            self._model.require_game(key)
            self._checked.add(key)
        legal, probs = self._model.history_probabilities(list(state.history()))
        return dict(zip(legal, probs))

    def action_probabilities_batch(self, tensors: Any, legal_mask: Any) -> _np.ndarray:
        """Probabilities for many information states at once: ``tensors`` is
        ``[N, information_state_tensor_size]``, ``legal_mask`` ``[N, num_distinct_actions]``
        (nonzero where legal); returns float32 ``[N, num_distinct_actions]``, 0 at illegal
        actions. Feed-forward networks only."""
        x = _np.ascontiguousarray(tensors, dtype=_np.float32)
        m = _np.ascontiguousarray(legal_mask).astype(_np.uint8)
        game = self._model.game
        if x.ndim != 2 or x.shape[1] != game.information_state_tensor_size():
            raise ValueError(
                f"tensors must have shape [N, {game.information_state_tensor_size()}], not {x.shape}"
            )
        if m.shape != (x.shape[0], game.num_distinct_actions()):
            raise ValueError(f"legal_mask must have shape [{x.shape[0]}, {game.num_distinct_actions()}], not {m.shape}")
        out = self._model.tensor_probabilities(x.tobytes(), m.tobytes(), x.shape[0])
        return out.reshape(x.shape[0], game.num_distinct_actions())

    def to_onnx(self) -> bytes:
        """The policy this model plays as an ONNX model (bytes): inputs ``info_state`` float
        ``[N, information_state_tensor_size]`` and ``legal_mask`` float ``[N,
        num_distinct_actions]`` (1 legal, 0 illegal), output ``probabilities`` float ``[N,
        num_distinct_actions]``, the numbers ``action_probabilities_batch`` gives. Feed-forward
        networks only."""
        return self._model.to_onnx()

    def __repr__(self) -> str:
        return repr(self._model)


def load_model(path: str | _os.PathLike, current: bool = False, play_threshold: float | None = None) -> Model:
    """Loads an ARMAC model or run directory (verified against its manifest); ``current=True``
    plays the checkpoint's current policy instead of its average policy; ``play_threshold``
    replaces the checkpoint's ``armac.play_threshold`` (0 plays the network's probabilities as
    they are)."""
    return Model(_armac.load_model(_os.fspath(path), current, play_threshold))


def export_onnx(
    policy: Model | str | _os.PathLike,
    out: str | _os.PathLike,
    head: str | None = None,
    play_threshold: float | None = None,
) -> None:
    """Writes the policy an ARMAC network plays to ``out`` as an ONNX model, as ``armac-eval
    export-onnx`` (see ``Model.to_onnx``). ``policy`` is a model, run or checkpoint directory
    (then ``head`` is ``"average"``, the default, or ``"current"``, and ``play_threshold``
    replaces the checkpoint's) or a loaded ``Model``, exported as it plays."""
    if isinstance(policy, Model):
        if head is not None or play_threshold is not None:
            raise ValueError(
                "export_onnx exports a loaded Model as it plays: choose the head and threshold "
                "in load_model(path, current=..., play_threshold=...), or pass the path"
            )
        model = policy
    else:
        if head not in (None, "average", "current"):
            raise ValueError(f"head must be 'average' or 'current', not {head!r}")
        model = load_model(policy, current=head == "current", play_threshold=play_threshold)
    data = model.to_onnx()
    with open(out, "wb") as f:
        f.write(data)


def solve(game: Any, algorithm: str = "cfr+", iterations: int = 1000, seed: int = 0, **keys: Any) -> TabularPolicy:
    """Runs any ``[solver]`` algorithm (``algorithms()``) for ``iterations`` iterations and
    returns its average policy; ``keys`` are the algorithm's ``[solver]`` keys (e.g.
    ``epsilon=0.6`` for ``os-mccfr``). Ctrl-C stops it between iterations."""
    return TabularPolicy(_armac.solve(_armac_game(game), algorithm, iterations, seed, keys))


def _openspiel_callable(policy: Any, game_string: str) -> Callable[[State], Any]:
    """An OpenSpiel policy as a callable on armac states (the state is replayed in pyspiel)."""
    _need_openspiel("an OpenSpiel policy")
    pgame = _pyspiel.load_game(game_string)

    def openspiel_policy(state: State) -> dict[int, float]:
        s = pgame.new_initial_state()
        for a in state.history():
            s.apply_action(a)
        return dict(policy.action_probabilities(s))

    openspiel_policy.__name__ = f"openspiel:{type(policy).__name__}"
    return openspiel_policy


def _policy_arg(policy: Any, game_string: str) -> Any:
    """What the extension takes for a policy argument."""
    if isinstance(policy, TabularPolicy):
        return policy._inner
    if isinstance(policy, Model):
        return policy._model
    if isinstance(policy, (str, _os.PathLike)):
        return _os.fspath(policy)
    if hasattr(policy, "state_lookup") and hasattr(policy, "action_probability_array"):
        return policy_from_openspiel(policy)._inner
    if _os_policy is not None and isinstance(policy, _os_policy.Policy):
        return _openspiel_callable(policy, game_string)
    if callable(policy):
        return policy
    raise PolicyError(
        f"{policy!r} is not a policy: pass 'uniform', a model or run directory, a policy file, "
        "an armac or OpenSpiel policy, or a callable f(state) -> probabilities"
    )


def nash_conv(game: Any, policy: Any) -> float:
    """Exact NashConv (the sum of both best-response gains) of ``policy`` on ``game``; the
    policy may be an armac or OpenSpiel table, a model, a name or a callable."""
    g = _armac_game(game)
    return _armac.nash_conv_report(g, _policy_arg(policy, g.load_string()))[0]


def best_response_values(game: Any, policy: Any) -> list[float]:
    """Each player's best-response value against ``policy`` (as OpenSpiel's
    ``exploitability.best_response`` values)."""
    g = _armac_game(game)
    return list(_armac.nash_conv_report(g, _policy_arg(policy, g.load_string()))[1])


def lbr(
    policy: Any,
    variant: str = "fcpa",
    hands: int = 10000,
    seed: int = 0,
    threads: int | None = None,
    game: Any = "hunl_fcpa",
    preflop_samples: int = 10000,
    rule: str = "standard",
) -> dict[str, Any]:
    """Local Best Response's winnings against ``policy`` in heads-up no-limit Hold'em (mbb and
    chips per hand with 95% intervals), as ``armac-eval lbr``. Python callables and OpenSpiel
    policies are asked hand by hand (1326 calls per opponent decision) on one thread unless
    ``threads`` says otherwise. ``rule="sharp"`` values LBR's raises against the hands that
    call or re-raise them instead of Lisý & Bowling's whole range (``armac-eval lbr --rule``)."""
    gs = load_game(_game_string(game)).load_string()
    return _armac.lbr(
        _policy_arg(policy, gs), variant, hands, seed, threads, gs, preflop_samples, rule
    )


def match(
    a: Any,
    b: Any,
    hands: int = 10000,
    seed: int = 0,
    game: Any = "hunl_fcpa",
    sampled: bool = False,
    hands_out: str | _os.PathLike | None = None,
    aivat: bool = False,
) -> dict[str, Any]:
    """``a`` against ``b`` in both seats, as ``armac-eval match``: exact on games whose tree
    compiles, otherwise ``hands`` hands of duplicate deals; figures from ``a``'s side. With
    ``hands_out``, every hand is written to that file in the Poker Hand History format
    (heads-up no-limit Hold'em). ``aivat=True`` (sampled matches where ``a`` or ``b`` is an
    ARMAC network) adds the AIVAT estimate of the same mean on the same hands, as
    ``armac-eval match --aivat``: ``aivat`` (``mean``, ``ci95`` in chips, ``values``) and, in
    poker, ``aivat_mean_mbb`` and ``aivat_ci95_mbb``."""
    g = _armac_game(game)
    gs = g.load_string()
    out = None if hands_out is None else _os.fspath(hands_out)
    return _armac.play_match(
        _policy_arg(a, gs), _policy_arg(b, gs), g, hands, seed, sampled, hands_out=out, aivat=aivat
    )


def _toml_literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return _json.dumps(value)
    raise ConfigError(f"override value {value!r} is not a bool, number or string")


def train(
    config: str | _os.PathLike,
    out: str | _os.PathLike | None = None,
    max_seconds: float | None = None,
    overrides: Mapping[str, Any] | None = None,
    max_cpu_seconds: float | None = None,
    resume: bool = False,
    overwrite: bool = False,
    quiet: bool = True,
) -> dict[str, Any]:
    """Runs a config (a path, or a name in configs/) as ``armac-train`` does, into the same
    run directory layout; ``overrides`` are ``--set`` keys (``{"solver.iterations": 500}``).
    Releases the GIL while it runs; Ctrl-C stops it at the next safe point with a checkpoint
    and then raises ``KeyboardInterrupt``. With ``resume=True``, ``out`` is the run to
    continue and ``config`` may be None. ``overwrite=True`` replaces only a run directory
    (never a symbolic link), keeping the old run until the new one has a checkpoint."""
    sets = [f"{k}={_toml_literal(v)}" for k, v in (overrides or {}).items()]
    return _armac.train(
        None if config is None else _os.fspath(config),
        None if out is None else _os.fspath(out),
        max_seconds,
        max_cpu_seconds,
        sets,
        resume,
        overwrite,
        quiet,
    )
