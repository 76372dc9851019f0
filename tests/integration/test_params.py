"""The parameter model (prdist/params.py): each parameter's constraint is written once, and the
command line, the flows and the parameter dataclasses are built from it."""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import pathlib

import pytest

from prdist import params as P
from prdist.cli import build_parser, main
from prdist.errors import ParameterError

from tests.support.paths import ROOT
CHECKS = {"check_int": "int", "check_float": "float", "check_choice": "choice"}
BOUNDS = ("low", "high", "low_open", "high_open")
#: A bound computed from another argument (``high=n``), as a parameter ``bounded_by`` another declares it.
COMPUTED = "computed"
#: Parameters that share a declared one's name and constraint but are another parameter.
HOMONYMS = {("prdist/history.py", "k"): "the number of releases flagged at once, not the top-k size"}


def _sources():
    """(module name, path, shown path) of every module of the package and the flows but the model."""
    for folder in ("prdist", "flows"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            if module != "prdist.params":
                yield module, path, str(path.relative_to(ROOT))


def _constraint(call: ast.Call, kind: str, module: str):
    """The constraint a ``check_*`` call writes as literals (None when it spells none itself, e.g.
    ``**CONFIDENCE.bounds``): the range as (low, high, low_open, high_open), or the choices; a
    bound computed from another argument (``high=2**62 - n``) is :data:`COMPUTED`."""
    given = {k.arg: k.value for k in call.keywords if k.arg}
    if kind == "choice":
        if "choices" not in given:
            return None
        return tuple(eval(ast.unparse(given["choices"]), vars(importlib.import_module(module))))  # noqa: S307
    if not any(b in given for b in BOUNDS):
        return None
    values = {b: _value(given[b], module) for b in BOUNDS if b in given}
    return tuple(values.get(b, False if b.endswith("open") else None) for b in BOUNDS)


def _value(node: ast.expr, module: str):
    """A bound as the module's globals give it (``high=MAX_PLAN_SIZE``), or :data:`COMPUTED` from a local."""
    try:
        return eval(ast.unparse(node), vars(importlib.import_module(module)))  # noqa: S307
    except NameError:
        return COMPUTED


def _declared(param: P.Param):
    if param.kind == "choice":
        return param.choices
    return (param.low, COMPUTED if param.upper else param.high, param.low_open, param.high_open)


def second_literals(sources) -> list[str]:
    """Every place outside the model that writes a declared parameter's constraint again: a
    ``check_int/check_float/check_choice`` of that name (or its flag) with the same range or
    choices, or a message naming its flag with its range written out."""
    by_name = {}
    for param in P.DECLARED:
        for name in (param.name, param.flag):
            by_name.setdefault((name, param.kind), []).append(param)
    found = []
    for module, path, shown in sources:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                name = next((k.value for k in node.keywords if k.arg == "name"), None)
                if func not in CHECKS or not isinstance(name, ast.Constant):
                    continue
                written = _constraint(node, CHECKS[func], module)
                if (shown, name.value) in HOMONYMS:
                    continue
                if any(written == _declared(p) for p in by_name.get((name.value, CHECKS[func]), ())):
                    found.append(f"{shown}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                for param in P.DECLARED:
                    if param.kind in ("int", "float") and param.flag in node.value and param.range_text in node.value:
                        found.append(f"{shown}:{node.lineno}: {node.value!r}")
    return found


def test_each_declared_constraint_is_written_once():
    assert second_literals(_sources()) == []


def test_the_scan_finds_a_second_literal(tmp_path):
    """The scan fails on the code before the model: a hand-written range of a declared parameter
    (with a bound named by a constant or computed from another argument, for one ``bounded_by``
    it) and a flag-named message with the range written out."""
    module = tmp_path / "written_twice.py"
    module.write_text(
        "from prdist._validation import check_float, check_int\n"
        "def f(eps, text, budget, n, k):\n"
        "    check_float(eps, name='eps', owner='f', low=0.0, high=1.0, low_open=True)\n"
        "    check_float(eps, name='eps', owner='f', low=0.0, high=2.0)\n"  # another constraint: not a copy
        "    raise ValueError(f'--confidence must be a number in (0, 1). Got {text!r}.')\n"
        "    check_int(budget, name='budget', owner='f', low=2, high=MAX_PLAN_SIZE)\n"
        "    check_int(budget, name='--budget', owner='f', low=1)\n"  # another constraint: not a copy
        "    check_int(k, name='--key-offset', owner='f', low=0, high=2**62 - n)\n"
        "    check_int(k, name='partitions', owner='f', low=1, high=n)\n"
        "    check_int(k, name='partitions', owner='f', low=1, high=100)\n"  # a constant: not its bound
    )
    # the globals of a module that imports MAX_PLAN_SIZE name the constants
    found = second_literals([("prdist.paula.plan", module, "written_twice.py")])
    assert sorted(int(line.split(": ")[0].rsplit(":", 1)[1]) for line in found) == [3, 5, 6, 8, 9]


def _options(parser, words=("prdist",)):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _options(child, (*words, name))
        else:
            yield " ".join(words), action


def test_each_flag_of_a_declared_parameter_is_built_from_the_model():
    flags = {p.flag: p for p in P.DECLARED}
    seen = set()
    for command, action in _options(build_parser()):
        for option in action.option_strings:
            if option in flags:
                seen.add(option)
                declared = P.BY_COMMAND.get((command.split()[-1], option), flags[option])
                assert getattr(action, "param", None) is declared, f"{command} {option} is not built from prdist.params"
                assert action.dest == declared.name
                assert action.choices in (None, declared.choices)
    # every declared parameter the command line takes is an option of some command
    assert seen == {p.flag for p in P.DECLARED} - {"--sample-size", "--band-sample", "--replicates", "--targets"}


@pytest.mark.parametrize(
    ("argv", "param", "value"),
    [
        (["run", "--eps", "0"], P.EPS, 0.0),
        (["run", "--window", "0"], P.WINDOW, 0),
        (["run", "--r-tilde", "0"], P.R_TILDE, 0),
        (["run", "--seed", "-1"], P.SEED, -1),
        (["run", "--demo-n", "0"], P.DEMO_N, 0),
        (["run", "--gold-budget", "0"], P.GOLD_BUDGET, 0),
        (["budget", "--n", "100", "--delta", "1"], P.DELTA, 1.0),
        (["budget", "--n", "100", "--p-min", "0"], P.P_MIN, 0.0),
        (["budget", "--n", "100", "--alpha", "0"], P.ALPHA, 0.0),
        (["synth", "--n", "100", "--seed", "1", "--judge-accuracy", "0", "--out", "x"], P.JUDGE_ACCURACY, 0.0),
        (["synth", "--n", "100", "--seed", "1", "--partitions", "0", "--out", "x"], P.PARTITIONS, 0),
        (["synth", "--n", "100", "--seed", "1", "--partitions", "101", "--out", "x"], P.PARTITIONS, 101),
        (["synth", "--n", "100", "--seed", "1", "--key-offset", "-1", "--out", "x"], P.KEY_OFFSET, -1),
        (["synth", "--n", "100", "--seed", "1", "--key-offset", str(2**62 - 99), "--out", "x"], P.KEY_OFFSET, 2**62 - 99),
        (["compare", "--system", "a=sys", "--budget", "1", "--seed", "0", "--out", "x"], P.BUDGET, 1),
        (["compare", "--system", "a=sys", "--budget", str(2**25 + 1), "--seed", "0", "--out", "x"], P.BUDGET, 2**25 + 1),
        (["compare", "--system", "a=sys", "--budget", "2", "--seed", "0", "--out", "x", "--gold-budget", "1"], P.COMPARE_GOLD_BUDGET, 1),
    ],
)
def test_a_flag_message_is_the_models_under_the_flag(argv, param, value, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    command = f"prdist {argv[0]}"
    with pytest.raises(ParameterError) as expected:  # the synth cases' --n 100 bounds --partitions and --key-offset
        param.check(value, owner=command, name=param.flag, bound=100)
    assert main(argv) == 2
    assert capsys.readouterr().err == f"prdist: error: {expected.value}\n"


def test_the_library_calls_take_the_command_lines_rule(tmp_path):
    """write_synthetic refused only a judge accuracy outside [0, 1] and allocate_budget a budget
    below 1, where prdist synth and CompareParams refuse 0 and a budget outside [2, 2**25]."""
    from prdist import population
    from prdist.dataflow.compare.params import CompareParams, allocate_budget
    from prdist.dataflow.synth import write_synthetic

    model = population.binormal(neg=(0, 1), pos=(1, 1), prevalence=0.5)
    with pytest.raises(ParameterError, match=r"^The 'judge_accuracy' parameter of write_synthetic must be a float in \(0, 1\]"):
        write_synthetic(model, n=10, out=str(tmp_path / "r"), seed=1, judge_accuracy=0.0)
    with pytest.raises(ParameterError, match=r"^The 'partitions' parameter of write_synthetic must be an int in \[1, 10\]"):
        write_synthetic(model, n=10, out=str(tmp_path / "r"), seed=1, partitions=11)
    for call, owner in ((lambda b: allocate_budget([5], b), "allocate_budget"), (lambda b: CompareParams(budget=b), "CompareParams")):
        for budget in (1, P.MAX_PLAN_SIZE + 1):
            with pytest.raises(ParameterError, match=rf"^The 'budget' parameter of {owner} must be an int in \[2, 33554432\]"):
                call(budget)
    assert not (tmp_path / "r").exists()


def test_history_table_takes_the_rule_of_the_ranks_option():
    """prdist history refused a rank outside [1, 2^63 - 1]; history_table took any int64."""
    from prdist.dataflow.history import history_table

    with pytest.raises(ParameterError, match=r"^The 'ranks' parameter of history_table must be an int in \[1, 9223372036854775807\]. Got 0"):
        history_table([], ranks=[10, 0])


def test_the_confidence_message_takes_the_models_range(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["run", "--confidence", "1"]) == 2
    assert capsys.readouterr().err == (
        "prdist: error: --confidence must be a number in (0, 1) such as 0.95, or 'none'. Got '1'.\n")


def test_the_flows_and_dataclasses_take_the_models_defaults():
    from flows._compare_systems import compare_systems
    from flows._evaluate_release import evaluate_release
    from prdist.dataflow.compare.params import CompareParams
    from prdist.dataflow.run.evaluate import EvaluationParams

    declared = {p.name: p for p in P.DECLARED}
    for body in (evaluate_release, compare_systems):
        for name, parameter in inspect.signature(body).parameters.items():
            if name in declared and parameter.default not in (None, parameter.empty) and not isinstance(parameter.default, bool):
                assert parameter.default == declared[name].default, (body.__name__, name)
    for cls in (EvaluationParams, CompareParams):
        for field in cls.__dataclass_fields__.values():
            if field.name in declared and isinstance(field.default, (int, float, str)) and field.name != "confidence":
                assert field.default == declared[field.name].default, (cls.__name__, field.name)


def test_evaluation_params_of_takes_the_arguments_that_decide_the_numbers():
    from prdist.dataflow.run.evaluate import EvaluationParams

    given = dict(resource="r", out="o", method="random", eps=0.1, confidence=0.9, seed=3, scheduler=None)
    assert EvaluationParams.of(given) == EvaluationParams(method="random", eps=0.1, confidence=0.9, seed=3)
    with pytest.raises(ParameterError, match="'eps' parameter of EvaluationParams must be a float in"):
        EvaluationParams.of({**given, "eps": 2.0})


def test_a_public_function_checks_at_its_edge_through_the_declaration():
    from prdist import plan_paula
    from prdist.paula.bounds import paula_bounds

    plan = plan_paula(1000, eps=0.1, window=10)
    with pytest.raises(ParameterError, match=r"^The 'confidence' parameter of paula_bounds must be a float in \(0, 1\)"):
        paula_bounds(plan, [1.0] * plan.size, confidence=1.0)
    with pytest.raises(ParameterError, match=r"^The 'window' parameter of plan_paula must be an int >= 1"):
        plan_paula(1000, window=0)
