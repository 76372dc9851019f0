"""Several systems (or releases) sharing one pool of labels (Chaganty et al., EMNLP 2017).

Systems i = 1..m each output a set X_i of keyed items and carry a sampling distribution p_i over
it. Every system j has n_j items drawn i.i.d. from p_j; one label per key serves every system and
every release that contains the item. The estimators of the paper's appendix then give, for every
system at once:

- **precision** π_i = E_{x~p_i}[f(x)] (the ordinary precision when p_i is uniform, the precision
  at k for a top-k distribution, a score-weighted precision otherwise) by the joint importance
  sampling estimator

      π̂_i = Σ_j (w_ij / n_j) Σ_{x ∈ X̂_j} p_i(x) f(x) / q_i(x),   q_i = Σ_j w_ij p_j,

  unbiased with the variance of Theorem 1, beside the simple estimator (mean label of system i's
  own draws) — :func:`estimate_precision`;
- **recall** r_i = θ ν_i: the self-normalised pooled recall ν̂_i times the pool recall θ̂ from an
  exhaustive sample of correct items, with the product variance of Lemma 1 —
  :func:`estimate_recall`;
- **precision as gold says it** from verdicts on every drawn item and a gold audit of some: the
  two-phase, prediction-powered (PPI++) estimate of :func:`estimate_precision_two_phase`;
- **the sample size a new system (or release) needs** for a target confidence-interval half-width,
  by bisection on the conservative variance of appendix B.4 — :func:`required_sample_size`.

The universe is kept compact: a :class:`JointSample` holds only the drawn items, with p_j(x) of
every system j for each of them, the draw counts, the labels, and two small summaries of the full
outputs (the overlaps <p_i, p_j> and the distinct support patterns) that the default weights and
the check "q_i > 0 wherever p_i > 0" need.

Mixture weights. Appendix B.3 ("Picking heuristic w_ij") is empty in the published text; the
default here is the authors' own (``compute_weights(method="heuristic")`` in
github.com/arunchaganty/kbp-online, src/kbpo/evaluation.py): w_ij ∝ n_j <p_i, p_j>, which gives no
weight to systems that share nothing with system i. ``"balance"`` is Veach's balance heuristic
w_ij ∝ n_j; any matrix with rows summing to one that keeps q_i > 0 on X_i is accepted.

Variances. Theorem 1 writes Var π̂_i as Σ_j (w_ij² / n_j) Var_{p_j}[p_i f / q_i]; every per-system
variance is estimated with the unbiased sample variance (ddof = 1) of that system's draws, so the
variance estimate is **unbiased** too (it needs n_j >= 2 for every system that carries weight).
Recall variances are delta-method and plug-in estimates (ν̂ is a ratio, hence only consistent).

One module per idea, behind these names: ``systems`` (outputs and sampling distributions),
``joint_sample`` (the draws and labels), ``weights``, ``moments`` (per-system moments and normal
intervals), ``precision``, ``recall``, ``two_phase`` and ``sample_size``.
"""

from prdist.importance.joint_sample import JointSample, draw_joint_sample, missing_labels
from prdist.importance.precision import PrecisionEstimate, estimate_precision
from prdist.importance.recall import RecallEstimate, estimate_recall, pool_membership
from prdist.importance.sample_size import SampleSizePlan, required_sample_size
from prdist.importance.systems import SamplingDistribution, SystemOutput
from prdist.importance.two_phase import TwoPhaseEstimate, estimate_precision_two_phase
from prdist.importance.weights import mixture_weights

__all__ = [
    "SamplingDistribution",
    "SystemOutput",
    "JointSample",
    "draw_joint_sample",
    "missing_labels",
    "mixture_weights",
    "PrecisionEstimate",
    "estimate_precision",
    "pool_membership",
    "RecallEstimate",
    "estimate_recall",
    "TwoPhaseEstimate",
    "estimate_precision_two_phase",
    "SampleSizePlan",
    "required_sample_size",
]
