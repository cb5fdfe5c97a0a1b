"""Optuna's samplers and pruners over a sweep's rows.

The study lives in memory for one advance of the sweep: rebuilt from the trials in order (so
Optuna's trial numbers are ours), asked for new points, asked whether a running trial should
stop, then dropped. What Optuna keeps per trial (the grid point, halving rungs) is copied back
into the trial's row, so the next rebuild sees it.
"""

from __future__ import annotations

from typing import Any

import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.pruners import BasePruner, MedianPruner, NopPruner, SuccessiveHalvingPruner
from optuna.samplers import BaseSampler, GridSampler, RandomSampler, TPESampler
from optuna.trial import FrozenTrial, TrialState

from deeprepo_web.sweeps.models import Method, Pruner, Sweep, Trial, TrialStatus
from deeprepo_web.sweeps.space import grid_values

optuna.logging.set_verbosity(optuna.logging.WARNING)

_STATES = {
    TrialStatus.QUEUED: TrialState.RUNNING,
    TrialStatus.RUNNING: TrialState.RUNNING,
    TrialStatus.COMPLETE: TrialState.COMPLETE,
    TrialStatus.PRUNED: TrialState.PRUNED,
    TrialStatus.FAILED: TrialState.FAIL,
    TrialStatus.CANCELLED: TrialState.FAIL,
}


def distributions(sweep: Sweep) -> dict[str, BaseDistribution]:
    out: dict[str, BaseDistribution] = {}
    for name, entry in sweep.space.items():
        if sweep.method == Method.GRID:
            out[name] = CategoricalDistribution(grid_values(entry, name))
        elif "values" in entry:
            out[name] = CategoricalDistribution(entry["values"])
        elif entry["int"]:
            out[name] = IntDistribution(int(entry["low"]), int(entry["high"]), log=bool(entry["log"]))
        else:
            out[name] = FloatDistribution(float(entry["low"]), float(entry["high"]), log=bool(entry["log"]))
    return out


def _sampler(sweep: Sweep, asked: int) -> BaseSampler:
    # A fresh sampler per rebuild: seeding it with the trials already asked keeps a rebuilt random
    # or TPE sampler from proposing the same first point again.
    seed = sweep.seed + asked
    if sweep.method == Method.GRID:
        return GridSampler({n: grid_values(e, n) for n, e in sweep.space.items()}, seed=seed)
    if sweep.method == Method.RANDOM:
        return RandomSampler(seed=seed)
    # constant_liar: trials still running count as bad guesses, so parallel asks spread out.
    return TPESampler(seed=seed, constant_liar=True, n_startup_trials=min(10, max(2, sweep.max_trials // 4)))


def _pruner(sweep: Sweep) -> BasePruner:
    if sweep.pruner == Pruner.MEDIAN:
        return MedianPruner(n_startup_trials=sweep.startup_trials, n_warmup_steps=sweep.warmup_steps)
    if sweep.pruner == Pruner.HALVING:
        return SuccessiveHalvingPruner(min_resource=sweep.warmup_steps or "auto")
    return NopPruner()


def intermediate_values(trial: Trial) -> dict[int, float]:
    return {int(k): float(v) for k, v in trial.intermediate.items() if v is not None}


def _frozen(trial: Trial, dists: dict[str, BaseDistribution]) -> FrozenTrial:
    state = _STATES[TrialStatus(trial.status)]
    params = {k: v for k, v in trial.params.items() if k in dists}
    return optuna.trial.create_trial(
        state=state, value=trial.value if state == TrialState.COMPLETE else None,
        params=params, distributions={k: dists[k] for k in params},
        system_attrs=dict(trial.system_attrs), intermediate_values=intermediate_values(trial),
    )


def study_load(sweep: Sweep, trials: list[Trial]) -> optuna.Study:
    """The sweep as an in-memory Optuna study; trials in number order."""
    study = optuna.create_study(
        storage=optuna.storages.InMemoryStorage(),
        direction="minimize" if sweep.direction == "minimize" else "maximize",
        sampler=_sampler(sweep, len(trials)), pruner=_pruner(sweep),
    )
    dists = distributions(sweep)
    study.add_trials([_frozen(t, dists) for t in trials])
    return study


def study_ask(study: optuna.Study, dists: dict[str, BaseDistribution]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A new point: its parameters and the system attributes the sampler left on it."""
    asked = study.ask(fixed_distributions=dists)
    return dict(asked.params), _attrs(study, asked.number)


def study_should_prune(study: optuna.Study, number: int) -> tuple[bool, dict[str, Any]]:
    """The pruner's verdict on a running trial at its last reported step, and its attributes after."""
    frozen = study.get_trials(deepcopy=False)[number]
    if frozen.last_step is None:
        return False, dict(frozen.system_attrs)
    verdict = study.pruner.prune(study, frozen)
    return bool(verdict), _attrs(study, number)


def _attrs(study: optuna.Study, number: int) -> dict[str, Any]:
    return dict(study.get_trials(deepcopy=False)[number].system_attrs)
