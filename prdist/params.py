"""The parameters of prdist's commands and flows, each declared once.

A :class:`Param` holds one parameter's constraint (an int or float range, a set of choices),
its default and its help. Everything else is built from it, in the spirit of scikit-learn's
``utils/_param_validation``:

- the command line's option (``Param.add_to``: flag, type, choices, default, help with the
  range and default filled in) and its flag-named message (``Param.check(value, owner=
  "prdist run", name=param.flag)``);
- the checks of the parameter dataclasses the flows build (``EvaluationParams``,
  ``CompareParams``), which are the dataflow's edge: inside it the values are trusted;
- the checks of the public functions that take the same parameter (``paula_bounds``,
  ``confidence_margins``, ``plan_paula``, ...), which validate at their own edge.

The messages follow one form so users can grep them: "The 'eps' parameter of plan_paula must be
a float in (0, 1]. Got 1.5 instead." Standard library only: the command line builds its options
from here without importing NumPy (``prdist --help`` stays cheap).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

from prdist.errors import ParameterError
from prdist.verdicts.choices import AGGREGATIONS

__all__ = [
    "Param",
    "check_choice",
    "check_float",
    "check_int",
    "DECLARED",
    "LARGEST_COUNT",
    "MAX_PLAN_SIZE",
]


# --------------------------------------------------------------------------------------------
# The checks (one message form)
# --------------------------------------------------------------------------------------------


def _fail(name: str, owner: str, expectation: str, value: object) -> ParameterError:
    return ParameterError(
        f"The {name!r} parameter of {owner} must be {expectation}. Got {value!r} instead."
    )


def _int_range_text(low, high) -> str:
    if low is None and high is None:
        return ""
    if high is None:
        return f" >= {low}"
    if low is None:
        return f" <= {high}"
    return f" in [{low}, {high}]"


def _float_range_text(low, high, low_open: bool, high_open: bool) -> str:
    """``(0, 1]``: an unbounded end is always open, "(0, inf)", never "(0, inf]"."""
    lo_b = "(" if low is None or low_open else "["
    hi_b = ")" if high is None or high_open else "]"
    lo_s = "-inf" if low is None else f"{low:g}"
    hi_s = "inf" if high is None else f"{high:g}"
    return f"{lo_b}{lo_s}, {hi_s}{hi_b}"


def check_int(value, *, name: str, owner: str, low: int | None = None, high: int | None = None) -> int:
    """Return ``value`` as an int after checking it is an integer in [low, high]."""
    expectation = "an int" + _int_range_text(low, high)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and float(value).is_integer() and not isinstance(value, bool):
            value = int(value)
        else:
            raise _fail(name, owner, expectation, value)
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        raise _fail(name, owner, expectation, value)
    return value


def check_float(
    value,
    *,
    name: str,
    owner: str,
    low: float | None = None,
    high: float | None = None,
    low_open: bool = False,
    high_open: bool = False,
) -> float:
    """Return ``value`` as a float after checking it is finite and within the interval."""
    if low is None and high is None:
        expectation = "a finite float"
    else:
        expectation = "a float in " + _float_range_text(low, high, low_open, high_open)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _fail(name, owner, expectation, value)
    x = float(value)
    if not math.isfinite(x):
        raise _fail(name, owner, expectation, value)
    if low is not None and (x < low or (low_open and x == low)):
        raise _fail(name, owner, expectation, value)
    if high is not None and (x > high or (high_open and x == high)):
        raise _fail(name, owner, expectation, value)
    return x


def check_choice(value, *, name: str, owner: str, choices) -> str:
    """Return ``value`` after checking it is one of ``choices``."""
    if value not in choices:
        options = ", ".join(repr(c) for c in choices)
        raise ParameterError(
            f"The {name!r} parameter of {owner} must be one of {options}. Got {value!r} instead."
        )
    return value


# --------------------------------------------------------------------------------------------
# The declaration
# --------------------------------------------------------------------------------------------

_TYPES = {"int": int, "float": float, "choice": None, "text": None, "flag": None}


@dataclass(frozen=True)
class Param:
    """One parameter: its constraint, default and help, declared once.

    Parameters
    ----------
    name : str
        The Python name (``r_tilde``); the command line's flag is ``--r-tilde``.
    kind : {"int", "float", "choice", "text", "flag"}
        An integer or a finite float (in [``low``, ``high``], either end open with
        ``low_open``/``high_open``), one of ``choices``, free text, or an on/off switch.
    bounded_by, upper : str and callable, optional
        An int's upper bound computed from another parameter: as the messages write it
        (``"n"``: ``--partitions`` in [1, n]) and as a function of that parameter's value, which
        :meth:`check` takes as ``bound``.
    optional : bool
        None is a valid value (it means "not given"; the constraint holds for every other value).
    help : str
        The command line's help; ``{range}`` and ``{default}`` are filled in from the declaration.

    Examples
    --------
    >>> EPS.range_text
    '(0, 1]'
    >>> EPS.check(0.05, owner="plan_paula")
    0.05
    >>> EPS.check(1.5, owner="prdist run", name=EPS.flag)
    Traceback (most recent call last):
    ...
    prdist.errors.ParameterError: The '--eps' parameter of prdist run must be a float in (0, 1]. Got 1.5 instead.
    """

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple = ()
    bounded_by: str | None = None
    upper: Callable[[int], int] | None = None
    default: object = None
    optional: bool = False
    help: str = ""
    metavar: str | None = None

    @property
    def flag(self) -> str:
        """The command line's option: ``--`` and the name with dashes."""
        return "--" + self.name.replace("_", "-")

    @property
    def range_text(self) -> str:
        """The constraint as the messages write it: "(0, 1]", ">= 1", "one of 'a', 'b'"."""
        if self.kind == "float":
            return _float_range_text(self.low, self.high, self.low_open, self.high_open)
        if self.kind == "int":
            return _int_range_text(self.low, self.high if self.bounded_by is None else self.bounded_by).strip()
        return ", ".join(map(repr, self.choices))

    @property
    def bounds(self) -> dict:
        """The range as :func:`check_float` keywords (``check_float(x, name=, owner=, **P.bounds)``)."""
        return {"low": self.low, "high": self.high, "low_open": self.low_open, "high_open": self.high_open}

    def contains(self, value) -> bool:
        """Whether ``value`` meets the constraint (no message: for callers that word their own)."""
        try:
            self.check(value, owner="")
        except ParameterError:
            return False
        return True

    def check(self, value, *, owner: str, name: str | None = None, bound: int | None = None):
        """``value`` after checking it meets the constraint (an int as int, a float as float).

        ``owner`` is what the user called (a function, ``prdist run``); ``name`` is how the
        message names the parameter (default: its Python name; the command line passes its flag);
        ``bound`` is the value of the parameter an int's upper bound is computed from (``upper``).
        """
        if value is None and self.optional:
            return None
        name = self.name if name is None else name
        if self.kind == "int":
            high = self.high if self.upper is None else self.upper(bound)
            return check_int(value, name=name, owner=owner, low=self.low, high=high)
        if self.kind == "float":
            return check_float(value, name=name, owner=owner, **self.bounds)
        if self.kind == "choice":
            return check_choice(value, name=name, owner=owner, choices=self.choices)
        return value

    def add_to(self, add, *, help: str | None = None, **overrides):
        """Add this parameter's option with ``add`` (an ``ArgumentParser.add_argument``).

        ``help`` (default: the declaration's) may hold ``{range}`` and ``{default}``;
        ``overrides`` are further ``add_argument`` keywords (``required=True``, a command's own
        ``default``). The returned action remembers its declaration (``action.param``).
        """
        options = {"dest": self.name, "default": self.default}
        if self.kind == "flag":
            options = {"dest": self.name, "action": "store_true"}
        elif self.kind == "choice":
            options["choices"] = self.choices
        elif _TYPES[self.kind] is not None:
            options["type"] = _TYPES[self.kind]
        if self.metavar is not None:
            options["metavar"] = self.metavar
        options.update(overrides)
        text = self.help if help is None else help
        options["help"] = text.format(range=self.range_text, default=options.get("default"))
        action = add(self.flag, **options)
        action.param = self
        return action


def check_all(values, params, *, owner: str, flags: bool = False) -> None:
    """Check every parameter of ``params`` on ``values`` (an object with them as attributes), in
    order; ``flags``: messages name the options (``--eps``), as the command line shows them."""
    for param in params:
        param.check(getattr(values, param.name), owner=owner, name=param.flag if flags else None)


# --------------------------------------------------------------------------------------------
# The parameters of an evaluation run (prdist run, evaluate_release, EvaluationParams)
# --------------------------------------------------------------------------------------------

METHOD = Param("method", "choice", choices=("paula", "random", "stratified"), default="paula",
               help="annotation plan (default {default})")
EPS = Param("eps", "float", low=0.0, high=1.0, low_open=True, default=0.03, metavar="E",
            help="grid spacing eps in {range} (default {default})")
WINDOW = Param("window", "int", low=1, default=100, metavar="D", help="local-precision window (default {default})")
R_TILDE = Param("r_tilde", "int", low=1, optional=True, metavar="R",
                help="fully labeled prefix target (default ceil((D+2)/E))")
#: The one confidence level of every interval (None: the paper's deterministic PAULA bounds).
CONFIDENCE = Param("confidence", "float", low=0.0, high=1.0, low_open=True, high_open=True, default=0.95,
                   optional=True, metavar="C", help="level of the intervals, in {range} (default {default})")
SEED = Param("seed", "int", low=0, default=0, metavar="S", help="seed of every random draw (default {default})")
ORACLE_COLUMN = Param("oracle_column", "text", optional=True, metavar="COL",
                      help="simulation: take labels from this column of the resource")
BANDS = Param("bands", "flag", default=False, help="also draw a random arm and compute bootstrap confidence bands")
AGGREGATE = Param("aggregate", "choice", choices=AGGREGATIONS, default="majority")
JUDGE_COLUMN = Param("judge_column", "text", optional=True, metavar="COL")
GOLD_BUDGET = Param("gold_budget", "int", low=1, optional=True, metavar="N")
#: A comparison's audit certifies gold from its variance, which needs two keys with gold.
COMPARE_GOLD_BUDGET = Param("gold_budget", "int", low=2, optional=True, metavar="N")
SAMPLE_SIZE = Param("sample_size", "int", low=1, optional=True)
BAND_SAMPLE = Param("band_sample", "int", low=10, default=2000)
BAND_REPLICATES = Param("replicates", "int", low=10, default=1000)
#: One precision target of the deepest guaranteed cut-offs (``targets`` holds several).
TARGET = Param("targets", "float", low=0.0, high=1.0, low_open=True)
DEMO_N = Param("demo_n", "int", low=1, default=2_000_000, metavar="N",
               help="items of the demo's synthetic resource (default 2,000,000)")

#: What decides an evaluation's numbers, checked in this order (``EvaluationParams``).
EVALUATION = (METHOD, EPS, WINDOW, R_TILDE, CONFIDENCE, SAMPLE_SIZE, SEED, BAND_SAMPLE, BAND_REPLICATES,
              AGGREGATE, GOLD_BUDGET)

# --------------------------------------------------------------------------------------------
# prdist budget
# --------------------------------------------------------------------------------------------

ALPHA = Param("alpha", "float", low=0.0, low_open=True, optional=True, metavar="A")
P_MIN = Param("p_min", "float", low=0.0, high=1.0, low_open=True, default=0.5, metavar="P",
              help="assumed minimum precision, for the sampling baselines (default {default})")
DELTA = Param("delta", "float", low=0.0, high=1.0, low_open=True, high_open=True, default=0.05, metavar="D",
              help="failure probability of the sampling baselines (default {default})")

# --------------------------------------------------------------------------------------------
# prdist compare (compare_systems, CompareParams)
# --------------------------------------------------------------------------------------------

#: The most ranks a plan may hold: 256 MiB per int64 array (a plan's arrays and their sort
#: need a few of them); a resource of 10^12 items at eps=0.03, window=100 plans 78,658.
MAX_PLAN_SIZE = 2**25
#: Total draws over all systems: a system's variance needs two draws, so one system needs 2 (with
#: m systems, 2 m: checked where m is known); a budget of draws is held as a plan is.
BUDGET = Param("budget", "int", low=2, high=MAX_PLAN_SIZE, metavar="N",
               help="total draws over all systems, at least 2 per system")
ALLOCATION = Param("allocation", "choice", choices=("even", "proportional"), default="even")
WEIGHTS = Param("weights", "choice", choices=("overlap", "balance"), default="overlap")
DISTRIBUTION = Param("distribution", "choice", choices=("uniform", "top-k", "score-power"), default="uniform")
K = Param("k", "int", low=1, optional=True, metavar="K", help="size of the top, for --distribution top-k")
POWER = Param("power", "float", low=0.0, low_open=True, optional=True, metavar="A",
              help="exponent, for --distribution score-power (default 1)")

# --------------------------------------------------------------------------------------------
# prdist synth
# --------------------------------------------------------------------------------------------

PREVALENCE = Param("prevalence", "float", low=0.0, high=1.0, low_open=True, high_open=True, default=0.5,
                   metavar="P", help="share of positives, in {range} (default {default})")
PARTITIONS = Param("partitions", "int", low=1, bounded_by="n", upper=lambda n: n, optional=True, metavar="K",
                   help="number of Parquet files (default: one per 2^22 items)")
#: The generation positions key_offset .. key_offset + n - 1 stay below 2^62, as n does.
KEY_OFFSET = Param("key_offset", "int", low=0, bounded_by="2**62 - n", upper=lambda n: 2**62 - n, default=0, metavar="K",
                   help="keys of generation positions K..K+N-1 (default 0): releases given disjoint ranges share no key")
JUDGE_ACCURACY = Param("judge_accuracy", "float", low=0.0, high=1.0, low_open=True, optional=True, metavar="A")

# --------------------------------------------------------------------------------------------
# prdist history (write_history, history_table)
# --------------------------------------------------------------------------------------------

#: The largest whole number an option may take: prdist counts ranks, items and draws in int64.
LARGEST_COUNT = 2**63 - 1
#: One rank of ``ranks`` (the option holds several, comma-separated).
RANK = Param("ranks", "int", low=1, high=LARGEST_COUNT, optional=True, metavar="R,R,...",
             help="ranks to follow (default: the latest run's guaranteed cut-offs and the powers of ten)")

#: Every declared parameter (tests/integration/test_params.py checks none is constrained a second time).
#: A command's own declaration of a flag that others declare otherwise.
BY_COMMAND = {("compare", "--gold-budget"): COMPARE_GOLD_BUDGET}

DECLARED = (
    METHOD, EPS, WINDOW, R_TILDE, CONFIDENCE, SEED, ORACLE_COLUMN, BANDS, AGGREGATE, JUDGE_COLUMN, GOLD_BUDGET,
    SAMPLE_SIZE, BAND_SAMPLE, BAND_REPLICATES, TARGET, DEMO_N, ALPHA, P_MIN, DELTA, ALLOCATION, WEIGHTS,
    DISTRIBUTION, K, POWER, BUDGET, PREVALENCE, PARTITIONS, KEY_OFFSET, JUDGE_ACCURACY,
    RANK,
)
