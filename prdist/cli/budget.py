"""``prdist budget``: how many labels PAULA and the sampling baselines need."""

from __future__ import annotations

from prdist import params as P
from prdist.cli._common import EXIT_OK, _print_json


def _add_budget(sub) -> None:
    parser = sub.add_parser(
        "budget",
        help="how many labels PAULA and the sampling baselines need",
        description=(
            "Print the size of the PAULA annotation plan for a resource of N items and, for the "
            "same guaranteed approximation factor, the labels uniform random sampling (PAULA "
            "paper Eq. 5) and logarithmic stratified sampling (Theorem 2) would need. Nothing is "
            "read or written."
        ),
    )
    add = parser.add_argument
    add("--n", type=int, required=True, metavar="N", help="number of items in the resource")
    P.EPS.add_to(add, help="grid spacing in {range} (default {default})")
    P.WINDOW.add_to(add)
    P.R_TILDE.add_to(add, help="rank beyond which precision is assumed monotone (default ceil((D+2)/E))")
    P.ALPHA.add_to(add, help="relative error of random sampling (default: PAULA's factor - 1, the same guarantee)")
    P.P_MIN.add_to(add)
    P.DELTA.add_to(add)
    add("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(handler=_cmd_budget)


def _cmd_budget(args) -> int:
    # Imported here so that other sub-commands do not pay for SciPy at start-up.
    import math

    from prdist._validation import check_int
    from prdist.paula.plan import plan_paula
    from prdist.sampling import random_sampling_budget, random_sampling_reliable_from, stratified_budget

    # Checked under the option names, so that a message names what the user typed.
    owner = "prdist budget"
    n = check_int(args.n, name="--n", owner=owner, low=1)
    P.check_all(args, (P.EPS, P.WINDOW, P.R_TILDE, P.ALPHA, P.P_MIN, P.DELTA), owner=owner, flags=True)
    window, p_min, delta = args.window, args.p_min, args.delta

    plan = plan_paula(n, eps=args.eps, window=window, r_tilde=args.r_tilde)
    notes = list(plan.notes)
    finite = math.isfinite(plan.factor)
    alpha = args.alpha if args.alpha is not None else (plan.factor - 1.0 if finite else None)
    random_annotations = reliable_from = stratified = None
    if alpha is not None:
        random_annotations = random_sampling_budget(n, alpha=alpha, p=p_min, delta=delta)
        if not plan.exhaustive:
            reliable_from = random_sampling_reliable_from(
                n, size=plan.size, alpha=alpha, p=p_min, delta=delta
            )
    if plan.exhaustive:
        notes.append(f"n <= g_l = {plan.g_l}: every item is labeled and the precision is exact.")
    if finite:
        stratified = stratified_budget(
            n, eps=args.eps, window=window, r_tilde=args.r_tilde, delta=delta, p_min=p_min
        )
    else:
        notes.append(
            f"gamma is infinite (m={plan.m} <= 0): there is no finite guarantee for the sampling "
            "baselines to match" + ("." if alpha is None else "; random sampling uses --alpha.")
        )
    result = {
        "n": n,
        "eps": plan.eps,
        "window": window,
        "r_tilde": plan.r_tilde,
        "l": plan.l,
        "L": plan.L,
        "g_l": plan.g_l,
        "m": plan.m,
        "gamma": plan.gamma if finite else None,  # JSON has no Infinity
        "factor": plan.factor if finite else None,
        "annotations": plan.size,
        "alpha": alpha,
        "p_min": p_min,
        "delta": delta,
        "random_sampling_annotations": random_annotations,
        "random_sampling_reliable_from": reliable_from,
        "stratified_annotations": None if stratified is None else stratified.annotations,
        "stratified_samples_per_point": None if stratified is None else stratified.samples_per_point,
        "stratified_expected_distinct": (
            None if stratified is None else round(stratified.expected_distinct, 1)
        ),
        "precondition_met": plan.precondition_met,
        "notes": notes,
    }
    if args.json:
        _print_json(result)
    else:
        _print_budget_table(result, plan)
    return EXIT_OK


def _print_budget_table(result: dict, plan) -> None:
    """``prdist budget``'s table: every figure with what it means."""

    def text(key, fmt="{}"):
        return "n/a" if result[key] is None else fmt.format(result[key])

    n, window = result["n"], result["window"]
    baseline = f"p_min {result['p_min']:g}, delta {result['delta']:g}"
    rows = [
        ("r_tilde", text("r_tilde"), "rank beyond which precision is assumed monotone"),
        ("l, L", f"{plan.l}, {plan.L}", "first and last grid index; g_j = ceil((1+eps)^j)"),
        ("g_l", text("g_l"), "ranks 1..g_l are all labeled"),
        ("m", text("m"), "monotonicity spacing, floor(eps (1+eps)^l - 1)"),
        ("gamma", text("gamma", "{:.4f}"), "PAULA's factor at grid points, 1 + eps + (2+eps)/m"),
        ("factor", text("factor", "{:.4f}"), "guaranteed approximation at every rank, gamma (1+eps)"),
        ("annotations", text("annotations"), "PAULA: g_l + window (L - l) chosen ranks"),
        (
            "random_sampling_annotations",
            text("random_sampling_annotations"),
            f"uniform sampling, paper Eq. 5 (alpha {text('alpha', '{:.4g}')}, {baseline})",
        ),
        (
            "random_sampling_reliable_from",
            text("random_sampling_reliable_from"),
            "first rank a uniform sample of PAULA's size covers (Eq. 4; above n: none)",
        ),
        (
            "stratified_annotations",
            text("stratified_annotations"),
            f"stratified sampling, Theorem 2 (beta = gamma, {baseline})",
        ),
        (
            "stratified_expected_distinct",
            text("stratified_expected_distinct", "{:.0f}"),
            "expected distinct ranks a stratified plan labels",
        ),
    ]
    name_width = max(len(name) for name, _, _ in rows)
    value_width = max(len(value) for _, value, _ in rows)
    print(f"prdist budget: n = {n:,}, eps = {plan.eps:g}, window = {window}")
    for name, value, meaning in rows:
        print(f"  {name:<{name_width}}  {value:>{value_width}}  {meaning}")
    print(f"precondition met: {'yes' if plan.precondition_met else 'no'}")
    for note in result["notes"]:
        print(f"note: {note}")
