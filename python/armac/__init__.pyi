"""Type stubs of the armac Python module (see docs/python.md)."""

import os
from typing import Any, Callable, Mapping, Sequence

import numpy as np

__version__: str
"""The package's version (the crate's, e.g. "0.1.0")."""

class ConfigError(ValueError):
    """A bad config, `[solver]` key or override (the message names the key)."""

class GameError(ValueError):
    """An unknown game, a bad game parameter or an illegal action."""

class PolicyError(ValueError):
    """A malformed policy, a policy for another game, or a policy that fails."""

class Game:
    """A game: static facts and a factory of states (pyspiel's names)."""
    def new_initial_state(self) -> State: ...
    def state_from_history(self, actions: Sequence[int]) -> State:
        """The state after replaying `actions` (chance outcomes included)."""
    def short_name(self) -> str: ...
    def load_string(self) -> str:
        """The string that loads this exact game in OpenSpiel."""
    def num_players(self) -> int: ...
    def num_distinct_actions(self) -> int: ...
    def max_chance_outcomes(self) -> int: ...
    def max_game_length(self) -> int: ...
    def min_utility(self) -> float: ...
    def max_utility(self) -> float: ...
    def information_state_tensor_size(self) -> int: ...
    def observation_tensor_size(self) -> int: ...

class State:
    """One history of play; every value equals pyspiel's."""
    def current_player(self) -> int:
        """0 or 1; -1 at chance nodes, -4 at terminals."""
    def is_terminal(self) -> bool: ...
    def is_chance_node(self) -> bool: ...
    def legal_actions(self, player: int | None = None) -> list[int]: ...
    def chance_outcomes(self) -> list[tuple[int, float]]: ...
    def apply_action(self, action: int) -> None:
        """Applies a legal action; raises GameError otherwise."""
    def child(self, action: int) -> State: ...
    def history(self) -> list[int]: ...
    def returns(self) -> list[float]: ...
    def information_state_string(self, player: int | None = None) -> str: ...
    def information_state_tensor(self, player: int | None = None) -> np.ndarray:
        """float32 array of `information_state_tensor_size()` entries."""
    def observation_string(self, player: int | None = None) -> str: ...
    def observation_tensor(self, player: int | None = None) -> np.ndarray: ...
    def action_to_string(self, player: int | None, action: int) -> str: ...
    def public_state_string(self) -> str: ...
    def get_game(self) -> Game: ...
    def clone(self) -> State: ...

class TabularPolicy:
    """Action probabilities per information-state string, for one game."""
    @classmethod
    def from_table(cls, game: Any, table: Mapping[str, Sequence[tuple[int, float]]]) -> TabularPolicy: ...
    @classmethod
    def load(cls, path: str | os.PathLike) -> TabularPolicy:
        """Reads OpenSpiel-format policy JSON."""
    @property
    def game(self) -> str: ...
    def table(self) -> dict[str, list[tuple[int, float]]]: ...
    def to_json(self) -> str: ...
    def save(self, path: str | os.PathLike) -> None: ...
    def action_probabilities(self, state: Any, player_id: int | None = None) -> dict[int, float]:
        """`{action: probability}` over the legal actions (an armac or pyspiel state)."""
    def to_openspiel(self, pyspiel_game: Any) -> Any:
        """An open_spiel.python.policy.TabularPolicy of `pyspiel_game`."""
    def __len__(self) -> int: ...

class Model:
    """An ARMAC network's policy; an open_spiel.python.policy.Policy when open_spiel is installed."""
    game: Any
    player_ids: list[int]
    @property
    def armac_game(self) -> Game: ...
    @property
    def name(self) -> str: ...
    def action_probabilities(self, state: Any, player_id: int | None = None) -> dict[int, float]:
        """`{action: probability}` at a pyspiel or armac state of the model's game."""
    def action_probabilities_batch(self, tensors: Any, legal_mask: Any) -> np.ndarray:
        """`[N, tensor size]` tensors and `[N, actions]` masks to float32 `[N, actions]`."""
    def to_onnx(self) -> bytes:
        """The policy as an ONNX model: `info_state`, `legal_mask` in, `probabilities` out."""

Policy = str | os.PathLike | TabularPolicy | Model | Callable[[State], Any] | Any

def load_game(name: str) -> Game:
    """An OpenSpiel game string or armac alias (`hunl_fcpa`)."""

def algorithms() -> list[str]:
    """Every `[solver]` algorithm name."""

def solve(game: Any, algorithm: str = "cfr+", iterations: int = 1000, seed: int = 0, **keys: Any) -> TabularPolicy:
    """Runs a `[solver]` algorithm in memory; returns its average policy."""

def policy_from_openspiel(tabular_policy: Any) -> TabularPolicy:
    """An armac table from an open_spiel.python.policy.TabularPolicy."""

def nash_conv(game: Any, policy: Policy) -> float:
    """Exact NashConv."""

def best_response_values(game: Any, policy: Policy) -> list[float]:
    """Each player's exact best-response value against `policy`."""

def load_model(path: str | os.PathLike, current: bool = False, play_threshold: float | None = None) -> Model:
    """An ARMAC model or run directory, verified against its manifest."""

def export_onnx(
    policy: Model | str | os.PathLike,
    out: str | os.PathLike,
    head: str | None = None,
    play_threshold: float | None = None,
) -> None:
    """Writes the policy an ARMAC network plays as an ONNX model (`armac-eval export-onnx`)."""

def lbr(
    policy: Policy,
    variant: str = "fcpa",
    hands: int = 10000,
    seed: int = 0,
    threads: int | None = None,
    game: Any = "hunl_fcpa",
    preflop_samples: int = 10000,
    rule: str = "standard",
) -> dict[str, Any]:
    """Local Best Response against `policy` (mbb/hand with 95% interval), as `armac-eval lbr`
    (`rule="sharp"`: `armac-eval lbr --rule sharp`)."""

def match(
    a: Policy,
    b: Policy,
    hands: int = 10000,
    seed: int = 0,
    game: Any = "hunl_fcpa",
    sampled: bool = False,
    hands_out: str | os.PathLike | None = None,
) -> dict[str, Any]:
    """`a` against `b` in both seats, as `armac-eval match`; `hands_out`: every hand in PHH."""

def train(
    config: str | os.PathLike | None,
    out: str | os.PathLike | None = None,
    max_seconds: float | None = None,
    overrides: Mapping[str, Any] | None = None,
    max_cpu_seconds: float | None = None,
    resume: bool = False,
    overwrite: bool = False,
    quiet: bool = True,
) -> dict[str, Any]:
    """Runs a config as `armac-train`; Ctrl-C stops it at a safe point, then KeyboardInterrupt."""
