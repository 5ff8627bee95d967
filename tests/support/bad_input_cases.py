"""Issue 30's bad-input corpus over the newer families: small shared data, and the cases as
(family, name, call, expected). ``expected`` is ("error", type, pattern): a clear refusal whose
message names the column or argument (and the fix); or ("warning", type, pattern): fitted but
flagged. Every call builds small data, so the corpus runs in seconds; a new family adds its
lines to CASES (tests/engine/test_bad_input_families.py runs them)."""
from __future__ import annotations

import io

import numpy as np
import pandas as pd

import engine
from engine import SccsData

RNG = np.random.default_rng(30)
N = 40
DF = pd.DataFrame({"t": RNG.integers(1, 30, N).astype(float), "e": RNG.integers(0, 2, N),
                   "c": RNG.choice([0, 1, 2], N), "x": RNG.normal(size=N),
                   "z": RNG.integers(0, 2, N).astype(float)})
COX = engine.Cohort.from_frame(DF, "t", "e", covariates=["x", "z"])
CR = engine.Cohort.from_frame(DF, "t", "c", covariates=["x", "z"], competing_risks=True)
BIN = engine.Cohort.from_frame(DF.drop(columns="t"), time=None, event="e",
                               covariates=["x", "z"])
HISTORY = pd.DataFrame({"id": [1, 1, 2, 3], "a": [0, 0, 0, 10], "b": [99, 99, 80, 120],
                        "t": [12, 50, 30, 60], "d": [10, 40, 20, 55], "de": [20, 45, 25, 70]})
ERA_FRAME = pd.DataFrame({"c": [1, 1, 2, 2], "l": [1.0, 2, 3, 1], "y": [1, 0, 0, 2],
                          "x": [0.0, 1, 1, 0]})

E, W = "error", "warning"
CE = engine.CohortError


def eras(**changes):
    """SccsData.from_cases on HISTORY with ``changes`` to its arguments (df= its data)."""
    kwargs = dict(case="id", obs_start="a", obs_end="b", event_times="t", exposure_start="d",
                  risk_windows={"d": [(0, 14)]})
    df = changes.pop("df", HISTORY)
    kwargs.update(changes)
    return SccsData.from_cases(df, **kwargs)


ERAS = eras()


def _cohort(df=DF, **kwargs):
    kwargs.setdefault("covariates", ["x"])
    return engine.Cohort.from_frame(df, "t", "e", **kwargs)


def _parquet_bytes(frame):
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    return buffer.getvalue()


BAD_VALUES = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "text": "7", "huge": 2**40,
              "fraction": 0.5}

CASES = [
    # -- Cox: fit's options, one refusal each, naming the argument and what it accepts
    ("cox", "ties typo", lambda: engine.fit(COX, ties="exact"), (E, ValueError,
     r"ties must be one of \('breslow', 'efron'\), got 'exact'")),
    ("cox", "solver typo", lambda: engine.fit(COX, solver="lbfgs"), (E, ValueError,
     r"solver must be one of .*'lbfgs'")),
    ("cox", "backend typo", lambda: engine.fit(COX, backend="tpu"), (E, ValueError,
     r"backend must be one of .*'tpu'")),
    ("cox", "precision float16", lambda: engine.fit(COX, precision="float16"), (E, ValueError,
     r"precision must be one of")),
    ("cox", "tv_route typo", lambda: engine.fit(COX, tv_route="x"), (E, ValueError,
     r"tv_route must be one of")),
    ("cox", "model typo", lambda: engine.fit(COX, model="weibull"), (E, ValueError,
     r"model must be one of .*'weibull'")),
    ("cox", "init too short", lambda: engine.fit(COX, init=[0.0]), (E, ValueError,
     r"init must have 2 values")),
    ("cox", "unpenalized unknown", lambda: engine.fit(COX, penalty=engine.L1(0.1),
                                                      unpenalized=["w"]),
     (E, ValueError, r"unpenalized names \['w'\] are not covariates")),
    ("cox", "cut_points unknown", lambda: engine.fit(COX, cut_points={"w": [5.0]}), (E, CE,
     r"cut_points names 'w'")),
    ("cox", "cut_points negative", lambda: engine.fit(COX, cut_points={"x": [-5.0]}), (E, CE,
     r"cut points of 'x' must be finite, positive")),
    ("cox", "penalty a number", lambda: engine.fit(COX, penalty=0.1), (E, ValueError,
     r"penalty must be None, engine.L1\(lam\) or engine.L2\(lam\), got 0.1")),
    ("cox", "constant covariate", lambda: engine.fit(_cohort(DF.assign(k=1.0),
                                                             covariates=["k", "x"])),
     (W, engine.DataWarning, r"'k' \(constant\)")),
    ("cox", "time column absent", lambda: engine.Cohort.from_frame(DF, "tt", "e"), (E, CE,
     r"column 'tt' \(time\) is not in the data. Did you mean 't'")),
    ("cox", "negative times", lambda: _cohort(DF.assign(t=-DF["t"])), (E, CE,
     r"'t' \(time\).*time <= 0")),
    ("cox", "zero times", lambda: _cohort(DF.assign(t=0.0)), (E, CE, r"'t' \(time\).*<= 0")),
    ("cox", "event code 2 without competing_risks", lambda: engine.Cohort.from_frame(
        DF, "t", "c"), (E, CE, r"'c' \(event\).*codes other than 0/1.*competing_risks=True")),
    ("cox", "no events", lambda: _cohort(DF.assign(e=0)), (E, CE, r"'e' \(event\) has no "
                                                           r"events")),
    ("cox", "text events", lambda: _cohort(DF.assign(e="yes")), (E, CE,
     r"'e' \(event\).*text that is not a number")),
    ("cox", "no rows", lambda: _cohort(DF.iloc[:0]), (E, CE, r"the data has no rows")),
    ("cox", "start after stop", lambda: _cohort(DF.assign(s=DF["t"] + 1), start="s"), (E, CE,
     r"'s' \(start\).*start >= stop")),
    ("cox", "negative weights", lambda: _cohort(DF.assign(w=-1.0), weights="w"), (E, CE,
     r"'w' \(weights\).*negative weights")),
    ("cox", "column in two roles", lambda: _cohort(covariates=["t"]), (E, CE,
     r"column 't' is named both as time and as covariate")),
    ("cox", "ragged arrays", lambda: engine.Cohort.from_arrays(np.ones(5), np.ones(4),
                                                               np.ones((5, 1))),
     (E, CE, r"event array 'event' has shape \(4,\), but the cohort has 5 rows")),
    ("cox", "1-d X", lambda: engine.Cohort.from_arrays(np.ones(5), np.ones(5), np.ones(5)),
     (E, CE, r"X must be a scipy.sparse matrix or a 2-d numeric array")),
    ("cox", "logrank labels of another length", lambda: engine.logrank_test(COX, np.ones(3)),
     (E, CE, r"group labels have shape \(3,\).*40 rows")),
    ("cox", "cv one fold", lambda: engine.cross_validate(COX, penalty="l2", folds=1), (E,
     ValueError, r"folds must be an integer from 2 to the number of subjects \(40\)")),
    ("cox", "cv more folds than subjects", lambda: engine.cross_validate(
        COX, penalty="l2", folds=1000), (E, ValueError, r"folds must be an integer from 2")),
    ("cox", "cv penalty typo", lambda: engine.cross_validate(COX, penalty="l3"), (E,
     ValueError, r"penalty must be 'l1' or 'l2', got 'l3'")),
    ("cox", "bootstrap no replicates", lambda: engine.bootstrap(COX, replicates=0), (E,
     ValueError, r"replicates must be an integer >= 2, got 0")),
    # -- Fine-Gray
    ("fine_gray", "cause absent", lambda: engine.fit(CR, model="fine_gray", cause=5), (E, CE,
     r"'c': cause=5 is not an event code of this cohort; its causes are \[1, 2\]")),
    ("fine_gray", "cause as text", lambda: engine.fit(CR, model="fine_gray", cause="1"), (E,
     CE, r"cause='1' is not an event code")),
    ("fine_gray", "efron ties", lambda: engine.fit(CR, model="fine_gray", ties="efron"), (E,
     ValueError, r"Fine-Gray uses Breslow ties")),
    ("fine_gray", "censoring_ties typo", lambda: engine.fit(CR, model="fine_gray",
                                                            censoring_ties="R"),
     (E, ValueError, r"censoring_ties must be one of \('crr', 'finegray'\), got 'R'")),
    ("fine_gray", "binary cohort", lambda: engine.fit(BIN, model="fine_gray"), (E, ValueError,
     r"model='fine_gray' needs follow-up times")),
    ("fine_gray", "cut_points", lambda: engine.fit(CR, model="fine_gray",
                                                   cut_points={"x": [5.0]}),
     (E, ValueError, r"Fine-Gray \(one row per subject\) takes no counting-process")),
    ("fine_gray", "entry times without id", lambda: engine.Cohort.from_frame(
        DF.assign(s=0.0), "t", "c", start="s", covariates=["x"], competing_risks=True),
     (E, CE, r"start \('s'\) is given without id")),
    ("fine_gray", "Gray's test labels of another length", lambda: engine.gray_test(
        CR, np.ones(3)), (E, CE, r"by labels have shape \(3,\).*\(40 rows\)")),
    ("fine_gray", "Gray's test one group", lambda: engine.gray_test(CR, np.ones(N)), (E, CE,
     r"single group; Gray's test needs at least two")),
    ("fine_gray", "Gray's test absent cause", lambda: engine.gray_test(CR, DF["z"].to_numpy(),
                                                                       cause=7),
     (E, CE, r"cause \[7\] has no events")),
    ("fine_gray", "Gray's test text rho", lambda: engine.gray_test(CR, DF["z"].to_numpy(),
                                                                   rho="1"),
     (E, ValueError, r"rho must be a finite number")),
    ("fine_gray", "cif of eras", lambda: engine.cumulative_incidence(ERAS), (E, TypeError,
     r"data must be an engine.Cohort or a pandas DataFrame, got SccsData")),
    ("logistic", "cut_points", lambda: engine.fit(BIN, model="logistic",
                                                  cut_points={"x": [1.0]}),
     (E, ValueError, r"logistic regression has none")),
    ("logistic", "competing causes", lambda: engine.fit(CR, model="logistic"), (E, CE,
     r"'c': logistic regression needs a 0/1 response")),
    # -- SCCS
    ("sccs", "from_cases of an array", lambda: SccsData.from_cases(HISTORY.to_numpy(), "id",
                                                                   "a", "b", "t"),
     (E, CE, r"from_cases needs a pandas DataFrame, got ndarray")),
    ("sccs", "column absent", lambda: eras(obs_start="aa"), (E, CE,
     r"column 'aa' \(obs_start\) is not in the data. Did you mean 'a'")),
    ("sccs", "start after end", lambda: eras(df=HISTORY.assign(a=200)), (E, CE,
     r"'a' \(obs_start\).*a start after 'b'")),
    ("sccs", "event outside observation", lambda: eras(df=HISTORY.assign(t=500)), (E, CE,
     r"'t' \(event_times\).*events outside the observation period")),
    ("sccs", "observation differs within a case", lambda: eras(
        df=HISTORY.assign(b=[99, 98, 80, 120])), (E, CE,
     r"'b' \(obs_end\).*values that differ between rows of one case: row 1 = 98")),
    ("sccs", "window offset text", lambda: eras(risk_windows={"d": [(0, "forever")]}), (E, CE,
     r"risk window offset 'forever' of 'd' is not understood")),
    ("sccs", "window offset fraction", lambda: eras(risk_windows={"d": [(0, 1.5)]}), (E, CE,
     r"risk window offset 1.5 of 'd' is not a whole number")),
    ("sccs", "window of an unknown drug", lambda: eras(risk_windows={"q": [(0, 1)]}), (E, CE,
     r"risk_windows names \['q'\], which have no exposures")),
    ("sccs", "window at an end that is not there", lambda: eras(
        risk_windows={"d": [(0, "end")]}), (E, CE, r"anchored at the exposure end, but 'd' has "
                                                   r"no end")),
    ("sccs", "windows out of order", lambda: eras(risk_windows={"d": [(5, 9), (0, 4)]}),
     (E, CE, r"risk windows of 'd' must be given in increasing order")),
    ("sccs", "no window and no end", lambda: eras(risk_windows=None), (E, CE,
     r"drug 'd' has no risk window and no exposure end")),
    ("sccs", "exposure_end of an unknown drug", lambda: eras(exposure_end={"q": "de"}), (E, CE,
     r"exposure_end names \['q'\]")),
    ("sccs", "exposure ends before it starts", lambda: eras(
        exposure_end={"d": "de"}, risk_windows=None, df=HISTORY.assign(de=0)), (E, CE,
     r"'de' \(exposure_end\).*an end before the start")),
    ("sccs", "exposure end missing", lambda: eras(exposure_end={"d": "de"}, risk_windows=None,
                                                  df=HISTORY.assign(de=np.nan)),
     (E, CE, r"'de' \(exposure_end\).*a missing end")),
    ("sccs", "exposure end a fraction", lambda: eras(
        exposure_end={"d": "de"}, risk_windows=None, df=HISTORY.assign(de=HISTORY["de"] + .5)),
     (E, CE, r"'de' \(exposure_end\).*fractions of a day")),
    ("sccs", "age cuts decreasing", lambda: eras(age_cuts=[50, 20]), (E, CE,
     r"age_cuts must be increasing whole days")),
    ("sccs", "age cut a fraction", lambda: eras(age_cuts=[20.5]), (E, CE, r"age_cuts")),
    ("sccs", "naive period a fraction", lambda: eras(naive_period=1.5), (E, CE,
     r"naive_period=1.5: give a whole number of days")),
    ("sccs", "min_age beyond the day range", lambda: eras(min_age=2**40), (E, CE,
     r"min_age=1099511627776 is beyond \+/-2,147,483,647 days")),
    ("sccs", "study window holds no event", lambda: eras(min_age=1000), (E, CE,
     r"no event falls inside the study window")),
    ("sccs", "no rows", lambda: eras(df=HISTORY.iloc[:0]), (E, CE, r"the data has no rows")),
    ("sccs", "exposures not a table", lambda: eras(exposures=[1, 2]), (E, CE,
     r"exposures must be a DataFrame with columns case, drug, start")),
    ("sccs", "exposures of a non-case", lambda: eras(
        exposures=pd.DataFrame({"case": [9], "drug": ["q"], "start": [1]}),
        risk_windows={"d": [(0, 14)], "q": [(0, 3)]}), (E, CE,
     r"'case' \(exposures\).*cases without events")),
    ("sccs", "long exposure ends before it starts", lambda: eras(
        exposures=pd.DataFrame({"case": [1], "drug": ["q"], "start": [5], "end": [1]}),
        risk_windows={"d": [(0, 14)], "q": [(0, 3)]}), (E, CE,
     r"'end' \(exposures\).*an end before the start")),
    ("sccs", "long exposure end beyond the day range", lambda: eras(
        exposures=pd.DataFrame({"case": [1], "drug": ["q"], "start": [5], "end": [2**40]}),
        risk_windows={"d": [(0, 14)], "q": [(0, 3)]}), (E, CE,
     r"'end' \(exposures\).*beyond \+/-2,147,483,647")),
    ("sccs", "era length negative", lambda: SccsData.from_frame(
        ERA_FRAME.assign(l=-1.0), "c", "l", "y"), (E, CE, r"'l' \(length\).*length <= 0")),
    ("sccs", "era events a fraction", lambda: SccsData.from_frame(
        ERA_FRAME.assign(y=0.5), "c", "l", "y"), (E, CE,
     r"'y' \(events\).*counts that are not whole numbers")),
    ("sccs", "era events all zero", lambda: SccsData.from_frame(
        ERA_FRAME.assign(y=0), "c", "l", "y"), (E, CE, r"'y' \(events\) is 0 in every era")),
    ("sccs", "era covariate text", lambda: SccsData.from_frame(
        ERA_FRAME.assign(x="a"), "c", "l", "y"), (E, CE, r"'x' \(covariate\) is not numeric")),
    ("sccs", "era column in two roles", lambda: SccsData.from_frame(
        ERA_FRAME, "c", "l", "y", covariates=["l"]), (E, CE,
     r"column\(s\) \['l'\] are named both as covariates and as case")),
    ("sccs", "eras from an array", lambda: SccsData.from_frame(np.ones((2, 4)), "c", "l", "y"),
     (E, CE, r"from_frame needs a pandas DataFrame, got ndarray")),
    ("sccs", "era arrays of two lengths", lambda: SccsData.from_arrays(
        [1, 1], [1.0], [1, 0], np.ones((2, 1))), (E, CE, r"length has shape \(1,\) but case "
                                                         r"has 2 rows")),
    ("sccs", "X rows differ", lambda: SccsData.from_arrays([1, 1], [1.0, 2], [1, 0],
                                                           np.ones((3, 1))),
     (E, CE, r"X has 3 rows but case has 2")),
    ("sccs", "names of another length", lambda: SccsData.from_arrays(
        [1, 1], [1.0, 2], [1, 0], np.ones((2, 1)), names=["a", "b"]), (E, CE,
     r"names has 2 entries but X has 1 columns")),
    ("sccs", "no eras", lambda: SccsData.from_arrays([], [], [], np.ones((0, 1))), (E, CE,
     r"case must be a non-empty 1-d array")),
    ("sccs", "text X", lambda: SccsData.from_arrays([1, 1], [1.0, 2], [1, 0],
                                                    np.array([["a"], ["b"]])),
     (E, CE, r"X must be a scipy.sparse matrix or a 2-d numeric array")),
    ("sccs", "cut_points on eras", lambda: engine.fit(ERAS, model="sccs",
                                                      cut_points={"x": [1]}),
     (E, ValueError, r"SCCS eras are cut by SccsData.from_cases")),
    ("sccs", "a Cohort as eras", lambda: engine.fit(COX, model="sccs"), (E, CE,
     r"model='sccs' fits an engine.SccsData, not a Cohort")),
    ("sccs", "Kaplan-Meier of eras", lambda: engine.kaplan_meier(ERAS), (E, TypeError,
     r"kaplan_meier needs an engine.Cohort, got SccsData")),
    ("sccs", "logrank of eras", lambda: engine.logrank_test(ERAS, np.ones(ERAS.n)), (E,
     TypeError, r"logrank_test needs an engine.Cohort, got SccsData")),
    ("sccs", "bootstrap of eras as Cox", lambda: engine.bootstrap(ERAS, model="cox",
                                                                  replicates=2),
     (E, CE, r"model='cox' cannot fit an engine.SccsData")),
    ("sccs", "path of eras as Cox", lambda: engine.path(ERAS, model="cox"), (E, CE,
     r"model='cox' cannot fit an engine.SccsData")),
    ("sccs", "time to event without drugs", lambda: engine.sccs_time_to_event(
        HISTORY, "id", "t", []), (E, CE, r"name at least one exposure start column")),
    ("sccs", "time to event text starts", lambda: engine.sccs_time_to_event(
        HISTORY.assign(d="x"), "id", "t", "d"), (E, CE, r"'d' \(exposure_start\) is not "
                                                        r"numeric")),
    ("sccs", "time to event starts beyond the range", lambda: engine.sccs_time_to_event(
        HISTORY.assign(d=2**40), "id", "t", "d"), (E, CE, r"'d' \(exposure_start\).*beyond")),
    ("sccs", "time to event fractional starts", lambda: engine.sccs_time_to_event(
        HISTORY.assign(d=HISTORY["d"] + 0.5), "id", "t", "d"), (E, CE,
     r"'d' \(exposure_start\).*fractions of a day")),
    # -- Bayes
    ("bayes", "model typo", lambda: engine.sample(BIN, model="logit"), (E, ValueError,
     r"model='logit' is not available; engine.sample draws")),
    ("bayes", "backend typo", lambda: engine.sample(BIN, backend="tpu"), (E, ValueError,
     r"backend='tpu' is not available for engine.sample")),
    ("bayes", "competing causes", lambda: engine.sample(CR, draws=5), (E, CE,
     r"'c' \(event\) holds causes \(1, 2\).*needs a 0/1 outcome")),
    ("bayes", "case weights", lambda: engine.sample(engine.Cohort.from_frame(
        DF.drop(columns="t").assign(w=1.0), time=None, event="e", covariates=["x"],
        weights="w"), draws=5), (E, ValueError, r"the Gibbs sampler has no case weights")),
    ("bayes", "a DataFrame", lambda: engine.sample(DF, draws=5), (E, TypeError,
     r"needs an engine.Cohort with a 0/1 event.*got DataFrame")),
    ("bayes", "parallel typo", lambda: engine.sample(BIN, draws=5, parallel="thread"), (E,
     ValueError, r"unknown parallel='thread'")),
    ("bayes", "probit MLE of a DataFrame", lambda: engine.probit_mle(DF), (E, TypeError,
     r"the probit MLE needs an engine.Cohort")),
    ("bayes", "probit MLE of causes", lambda: engine.probit_mle(CR), (E, CE,
     r"holds causes \(1, 2\); the probit MLE needs a 0/1 outcome")),
    ("bayes", "outcome always 1", lambda: engine.probit_mle(engine.Cohort.from_frame(
        DF.drop(columns="t").assign(e=1), time=None, event="e", covariates=["x"])), (E, CE,
     r"'e' \(outcome\) is 1 in every row")),
    ("bayes", "fewer rows than coefficients", lambda: engine.probit_mle(
        engine.Cohort.from_frame(pd.DataFrame({"e": [0, 1, 0], "x": [1.0, 2, 3],
                                               "w": [3.0, 1, 2], "v": [0.0, 5, 1]}),
                                 time=None, event="e")),
     (E, CE, r"too few rows for the probit MLE: 3 rows for 4 coefficients")),
]

# grids: every bad value of every day column of SCCS, every option of the sampler and the fit
for column, role in (("a", "obs_start"), ("b", "obs_end"), ("t", "event_times")):
    for kind, value in BAD_VALUES.items():
        pattern = {"nan": r"missing or infinite", "inf": r"missing or infinite",
                   "-inf": r"missing or infinite", "text": r"is not numeric",
                   "huge": r"beyond \+/-2,147,483,647",
                   "fraction": r"fractions of a day"}[kind]
        bad = HISTORY.astype({column: object if kind == "text" else float})
        bad.loc[0, column] = HISTORY.loc[0, column] + 0.5 if kind == "fraction" else value
        CASES.append(("sccs", f"{role} {kind}", lambda bad=bad: eras(df=bad),
                      (E, CE, rf"'{column}' \({role}\).*{pattern}")))
for kind, value in BAD_VALUES.items():
    if kind == "nan":
        continue                                    # a missing start is no exposure
    pattern = {"inf": r"beyond", "-inf": r"beyond", "text": r"is not numeric",
               "huge": r"beyond \+/-2,147,483,647", "fraction": r"fractions of a day"}[kind]
    bad = HISTORY.astype({"d": object if kind == "text" else float})
    bad.loc[0, "d"] = value if kind != "fraction" else 10.5
    CASES.append(("sccs", f"exposure_start {kind}", lambda bad=bad: eras(df=bad),
                  (E, CE, rf"'d' \(exposure_start\).*{pattern}")))
for name in ("draws", "chains", "thin", "burn_in"):
    least = 0 if name == "burn_in" else 1
    for value in (least - 1, 2.5, "10", None, True if name == "burn_in" else 0.0):
        CASES.append(("bayes", f"{name}={value!r}",
                      lambda name=name, value=value: engine.sample(BIN, **{name: value}),
                      (E, ValueError, rf"{name} must be an integer >= {least}")))
for value in (-1, 2**64, 1.5, "0", None, True):
    CASES.append(("bayes", f"seed={value!r}", lambda value=value: engine.sample(BIN, seed=value),
                  (E, ValueError, r"seed must be an integer in \[0, 2\*\*64\)")))
for option in ("ties", "solver", "backend", "precision", "tv_route", "censoring_ties"):
    for value in ("typo", None, 1, ""):
        CASES.append(("cox", f"{option}={value!r}",
                      lambda option=option, value=value: engine.fit(COX, **{option: value}),
                      (E, ValueError, rf"{option} must be one of")))
for value in (0, 1, -1e-9, np.nan, "1e-9", None, True):
    CASES.append(("cox", f"tol={value!r}", lambda value=value: engine.fit(COX, tol=value),
                  (E, ValueError, r"tol must be in \(0, 1\)")))
for value in (0, -3, 2.5, "100", None, True):
    CASES.append(("cox", f"max_iter={value!r}",
                  lambda value=value: engine.fit(COX, max_iter=value),
                  (E, ValueError, r"max_iter must be a whole number >= 1")))
for penalty in (engine.L1, engine.L2):
    for value in (-1.0, np.nan, np.inf, "0.1", None):
        CASES.append(("cox", f"{penalty.__name__}({value!r})",
                      lambda penalty=penalty, value=value: penalty(value),
                      (E, ValueError, rf"{penalty.__name__} penalty strength must be a finite "
                                      r"number >= 0")))
for role, column in (("time", "t"), ("weights", "w"), ("covariate", "x")):
    for kind, value in (("nan", np.nan), ("inf", np.inf), ("-inf", -np.inf)):
        bad = DF.assign(w=1.0)
        bad.loc[2, column] = value
        kwargs = {"weights": "w"} if role == "weights" else {}
        CASES.append(("cox", f"{role} {kind}",
                      lambda bad=bad, kwargs=kwargs: _cohort(bad, **kwargs),
                      (E, CE, rf"(?=.*'{column}')(?=.*missing or infinite)"
                              rf"(?=.*row 2 = {kind})")))


def _omop():
    from engine import cdm

    return cdm, cdm.open_eunomia()


def omop(call):
    """A case on the bundled Eunomia CDM (opened once, on first use)."""
    def run():
        if "con" not in _OMOP:
            _OMOP["cdm"], _OMOP["con"] = _omop()
        return call(_OMOP["cdm"], _OMOP["con"])
    return run


_OMOP = {}
T, C, O = 1118084, 1124300, 192671      # celecoxib, diclofenac, GI haemorrhage
CASES += [
    ("omop", "target as text", omop(lambda cdm, con: cdm.new_user_cohort(con, "celecoxib", C, O)),
     (E, ValueError, r"target must be a concept id or a list of concept ids, got 'celecoxib'")),
    ("omop", "target empty", omop(lambda cdm, con: cdm.new_user_cohort(con, [], C, O)),
     (E, ValueError, r"target must be a concept id")),
    ("omop", "target a fraction", omop(lambda cdm, con: cdm.new_user_cohort(con, 1.5, C, O)),
     (E, ValueError, r"target must be a concept id.*got 1.5")),
    ("omop", "target True", omop(lambda cdm, con: cdm.new_user_cohort(con, True, C, O)),
     (E, ValueError, r"target must be a concept id")),
    ("omop", "same target and comparator", omop(
        lambda cdm, con: cdm.new_user_cohort(con, T, T, O)),
     (E, ValueError, r"both target and comparator")),
    ("omop", "negative prior observation", omop(
        lambda cdm, con: cdm.new_user_cohort(con, T, C, O, prior_observation=-5)),
     (E, ValueError, r"prior_observation must be a whole number of days >= 0, got -5")),
    ("omop", "negative min days at risk", omop(
        lambda cdm, con: cdm.new_user_cohort(con, T, C, O, min_days_at_risk=-1)),
     (E, ValueError, r"min_days_at_risk must be a whole number of days >= 0")),
    ("omop", "risk window reversed", omop(
        lambda cdm, con: cdm.new_user_cohort(con, T, C, O, risk_window_start=30,
                                             risk_window_end=0, end_anchor="cohort start")),
     (E, ValueError, r"the risk window ends \(day 0 after the cohort start\) before it starts")),
    ("omop", "duplicate rule typo", omop(
        lambda cdm, con: cdm.new_user_cohort(con, T, C, O, remove_duplicate_subjects="some")),
     (E, ValueError, r"remove_duplicate_subjects must be one of")),
    ("omop", "end anchor typo", omop(
        lambda cdm, con: cdm.new_user_cohort(con, T, C, O, end_anchor="end")),
     (E, ValueError, r"end_anchor must be 'cohort end' or 'cohort start'")),
    ("omop", "study ps_strata 0", omop(lambda cdm, con: cdm.run_study(con, T, C, O,
                                                                      ps_strata=0)),
     (E, ValueError, r"ps_strata must be a positive integer, got 0")),
    ("omop", "study match ratio 0", omop(lambda cdm, con: cdm.run_study(con, T, C, O,
                                                                        match_ratio=0)),
     (E, ValueError, r"match_ratio must be a positive integer, got 0")),
    ("omop", "study negative caliper", omop(lambda cdm, con: cdm.run_study(con, T, C, O,
                                                                           caliper=-1)),
     (E, ValueError, r"caliper must be a positive number of standard deviations")),
    ("omop", "study one fold", omop(lambda cdm, con: cdm.run_study(con, T, C, O, folds=1)),
     (E, ValueError, r"folds must be an integer from 2")),
    ("omop", "study PS penalty typo", omop(
        lambda cdm, con: cdm.run_study(con, T, C, O, ps_penalty="lasso")),
     (E, ValueError, r"penalty must be 'cv', engine.L1\(lam\), engine.L2\(lam\) or None")),
    ("omop", "study unknown cohort rule", omop(
        lambda cdm, con: cdm.run_study(con, T, C, O, bogus=1)),
     (E, TypeError, r"unexpected keyword argument 'bogus'")),
    ("omop", "SCCS risk window reversed", omop(
        lambda cdm, con: cdm.sccs_study(con, T, O, risk_window=(30, 0))),
     (E, CE, r"risk window \(30, 0\) of 'exposure' ends before it starts")),
    ("omop", "SCCS exposure as text", omop(lambda cdm, con: cdm.sccs_study(con, "x", O)),
     (E, ValueError, r"exposure must be a concept id")),
    ("omop", "SCCS pre-window overlaps exposure", omop(
        lambda cdm, con: cdm.sccs_study(con, T, O, pre_window=(-5, 5))),
     (E, CE, r"pre_window=\(-5, 5\) must end before the exposure starts")),
    ("omop", "CDM path absent", omop(lambda cdm, con: cdm.open_cdm("/nonexistent/x.duckdb")),
     (E, CE, r"no OMOP CDM at '/nonexistent/x.duckdb'")),
]


# -- robust variance, propensity scores, predictions, formulas, sensitivity, prediction metrics
FORMULA_DF = DF.assign(s=np.where(np.arange(N) % 3 == 0, "a", "b"), tr=np.arange(N) % 2)
CLUSTERS = np.arange(N) % 4


def _formula(formula, df=FORMULA_DF, event="e", **kwargs):
    return engine.Cohort.from_frame(df, "t", event, formula=formula, **kwargs)


def _fitted(formula="x + s + tr", **kwargs):
    """A fit of a formula cohort (fitted on first use and kept: predictions do not change it)."""
    key = (formula, tuple(sorted(kwargs.items())))
    if key not in _FITS:
        if kwargs.get("model") == "fine_gray":
            _FITS[key] = engine.fit(_formula(formula, event="c", competing_risks=True),
                                    model="fine_gray")
        elif kwargs.get("start"):
            _FITS[key] = engine.fit(_formula(formula, FORMULA_DF.assign(st=0.0, id=np.arange(N)),
                                             start="st", id="id"))
        else:
            _FITS[key] = engine.fit(_formula(formula))
    return _FITS[key]


_FITS = {}
NEW = FORMULA_DF.head(3)
PS_DF = FORMULA_DF.assign(tr=(DF["x"] + np.random.default_rng(31).normal(size=N) > 0).astype(int))


def _ps(**changes):
    """engine.propensity_weights of PS_DF's 'tr' on x and z, with ``changes`` (df= its data)."""
    kwargs = dict(treatment="tr", covariates=["x", "z"])
    df = changes.pop("df", PS_DF)
    kwargs.update(changes)
    return engine.propensity_weights(df, **kwargs)


T_, E_, RISK = DF["t"].to_numpy(), DF["e"].to_numpy(), DF["x"].to_numpy()
WIDE = pd.concat([DF, pd.DataFrame(np.random.default_rng(32).normal(size=(N, 45)),
                                   columns=[f"v{j}" for j in range(45)])], axis=1)
CASES += [
    # robust variance and clusters
    ("robust", "variance typo", lambda: engine.fit(COX, variance="sandwich"), (E, ValueError,
     r"variance must be one of \('auto', 'model', 'robust'\), got 'sandwich'")),
    ("robust", "variance None", lambda: engine.fit(COX, variance=None), (E, ValueError,
     r"variance must be one of .*got None")),
    ("robust", "cluster a column name", lambda: engine.fit(COX, cluster="c"), (E, ValueError,
     r"cluster must be one value per row of the cohort \(e.g. df\['c'\]\), not a column name")),
    ("robust", "cluster missing", lambda: engine.fit(
        COX, cluster=np.where(np.arange(N) == 3, np.nan, CLUSTERS)), (E, CE,
     r"'cluster' \(cluster\) has 1 row\(s\) with a missing cluster: row 3 = nan")),
    ("robust", "cluster of another length", lambda: engine.fit(COX, cluster=CLUSTERS[:5]),
     (E, ValueError, r"cluster has 5 values but the cohort has 40 rows")),
    ("robust", "cluster 2-d", lambda: engine.fit(COX, cluster=np.ones((N, 2))), (E, ValueError,
     r"cluster must be one-dimensional \(one value per row\), got shape \(40, 2\)")),
    ("robust", "a single cluster", lambda: engine.fit(COX, cluster=np.zeros(N)).se, (E, CE,
     r"the robust variance needs at least 2 clusters with positive weight; there is 1")),
    ("robust", "weight on one cluster", lambda: engine.fit(
        _cohort(DF.assign(w=np.where(np.arange(N) == 0, 1000.0, 1.0)), weights="w"),
        variance="robust").se, (W, engine.DataWarning,
     r"one cluster carries 96% of the total weight")),
    ("robust", "fewer clusters than coefficients", lambda: engine.fit(
        COX, cluster=np.arange(N) % 2).se, (W, engine.DataWarning,
     r"the robust variance has 2 clusters for 2 coefficients")),
    ("robust", "logistic single cluster", lambda: engine.fit(
        BIN, model="logistic", variance="robust", cluster=np.zeros(N)).se, (E, CE,
     r"at least 2 clusters with positive weight")),
    ("robust", "clusters of zero weight", lambda: engine.fit(
        _cohort(DF.assign(w=np.where(np.arange(N) < 20, 1.0, 0.0)), weights="w"),
        cluster=np.arange(N) // 20).se, (E, CE, r"at least 2 clusters with positive weight; "
                                                r"there is 1")),
    ("robust", "Fine-Gray with clusters", lambda: engine.fit(CR, model="fine_gray",
                                                             cluster=CLUSTERS),
     (E, ValueError, r"cluster= is not available for model='fine_gray'")),
    ("robust", "more covariates than rows", lambda: engine.fit(engine.Cohort.from_frame(
        WIDE, "t", "e", covariates=[f"v{j}" for j in range(45)])),
     (W, UserWarning, r"is a linear combination of v0, v1|monotone likelihood: the "
                      r"coefficient\(s\) of")),    # aliased columns, then separation
    # propensity scores
    ("propensity", "treatment coded 0/1/2", lambda: _ps(treatment="c"), (E, CE,
     r"'c' \(treatment\) has 13 row\(s\) with values other than 0/1: row 0 = 2.*"
     r"Code the treatment 1 \(treated\) / 0")),
    ("propensity", "text treatment", lambda: _ps(df=PS_DF.assign(
        tr=np.where(PS_DF["tr"] == 1, "drug", "placebo"))), (E, CE,
     r"'tr' \(treatment\).*values other than 0/1: row 0 = '(drug|placebo)'")),
    ("propensity", "treatment column absent", lambda: _ps(treatment="treat"), (E, CE,
     r"column 'treat' \(treatment\) is not in the data")),
    ("propensity", "covariate absent", lambda: _ps(covariates=["x", "age"]), (E, CE,
     r"column 'age' \(covariate\) is not in the data")),
    ("propensity", "stabilize as text", lambda: _ps(stabilize="no"), (E, ValueError,
     r"stabilize must be True or False, got 'no'")),
    ("propensity", "no covariates", lambda: _ps(covariates=[]), (E, ValueError,
     r"the propensity model has no covariates.*covariates=\[\.\.\.\]")),
    ("propensity", "covariates not named", lambda: _ps(covariates=None), (E, ValueError,
     r"name the PS model's covariates \(covariates=\[\.\.\.\]\)")),
    ("propensity", "estimand typo", lambda: _ps(estimand="ate"), (E, ValueError,
     r"estimand must be one of \['ATE', 'ATT', 'ATC', 'ATO', 'ATM'\], got 'ate'")),
    ("propensity", "trim above 0.5", lambda: _ps(trim=0.6), (E, ValueError,
     r"trim must be a PS bound between 0 and 0.5 .*got 0.6")),
    ("propensity", "trim 0", lambda: _ps(trim=0.0), (E, ValueError, r"trim must be a PS bound")),
    ("propensity", "trim as text", lambda: _ps(trim="0.1"), (E, ValueError,
     r"trim must be a PS bound between 0 and 0.5 .*got '0.1'")),
    ("propensity", "truncate below 0.5", lambda: _ps(truncate=0.4), (E, ValueError,
     r"truncate must be a quantile between 0.5 and 1 \(e.g. 0.99\), got 0.4")),
    ("propensity", "truncate 1", lambda: _ps(truncate=1.0), (E, ValueError,
     r"truncate must be a quantile between 0.5 and 1")),
    ("propensity", "truncate as a percentage", lambda: _ps(truncate=99), (E, ValueError,
     r"truncate must be a quantile .*got 99")),
    ("propensity", "truncate as text", lambda: _ps(truncate="0.99"), (E, ValueError,
     r"truncate must be a quantile .*got '0.99'")),
    ("propensity", "missing covariate with missing='raise'", lambda: _ps(
        df=PS_DF.assign(x=np.where(np.arange(N) == 4, np.nan, PS_DF["x"]))), (E, CE,
     r"'x' \(1 row\(s\): row 4 = nan\).*missing=\"drop\"")),
    ("propensity", "missing treatment", lambda: _ps(
        df=PS_DF.assign(tr=np.where(np.arange(N) == 5, np.nan, PS_DF["tr"]))), (E, CE,
     r"'tr' \(treatment\).*row 5 = nan.*missing='drop'")),
    ("propensity", "missing typo", lambda: _ps(missing="omit"), (E, ValueError,
     r"missing must be \"raise\" or \"drop\", got 'omit'")),
    ("propensity", "a covariate separates the arms", lambda: _ps(
        df=PS_DF.assign(sep=PS_DF["tr"] * 2.0 + 1.0), covariates=["x", "sep"]), (E, CE,
     r"separates the arms perfectly: the coefficients of \['sep'\] diverge.*penalty")),
    ("propensity", "a single arm", lambda: _ps(df=PS_DF.assign(tr=1)), (E, CE,
     r"column 'tr' \(treatment\) is 1 in every row")),
    ("propensity", "trim leaves an arm empty", lambda: _ps(trim=0.49), (E, CE,
     r"no person with 'tr' = \d keeps a positive weight after trim=0.49: loosen the trim")),
    ("propensity", "penalty typo", lambda: _ps(penalty="l2"), (E, ValueError,
     r"penalty must be None, engine.L1\(lam\), engine.L2\(lam\) or 'cv', got 'l2'")),
    ("propensity", "repeated ids", lambda: _ps(df=PS_DF.assign(id=1), id="id"), (E, CE,
     r"'id' \(id\) has 39 row\(s\) with a repeated id.*keep each subject's first row")),
    ("propensity", "an array", lambda: _ps(df=PS_DF.to_numpy()), (E, CE,
     r"propensity_weights takes a pandas DataFrame or an engine.Cohort, got ndarray")),
    ("propensity", "cohort without the treatment", lambda: engine.propensity_weights(
        COX, "tr"), (E, CE, r"treatment 'tr' is not a covariate of the cohort")),
    ("propensity", "an outlier carries the weight", lambda: _ps(
        df=PS_DF.assign(x=np.where(np.arange(N) == 0, 6.0, PS_DF["x"]))), (W, engine.DataWarning,
     r"extreme weights: 1 person\(s\) with 'tr' = 0 \(rows \[0\]\).*truncate=0.99")),
    # predictions and curves
    ("prediction", "newdata lacks a column", lambda: _fitted().predict(NEW.drop(columns="x")),
     (E, CE, r"column 'x' \(formula term 'x', in newdata\) is not in the data")),
    ("prediction", "newdata holds an unknown level", lambda: _fitted().predict(
        NEW.assign(s="zzz")), (E, CE, r"'s' \(newdata column of the term 's'\).*levels the "
                                      r"model was not fitted on: row 0 = 'zzz'.*\['a', 'b'\]")),
    ("prediction", "predict type typo", lambda: _fitted().predict(NEW, type="hazard"), (E,
     ValueError, r"type must be one of \('lp', 'risk', 'expected', 'survival', 'terms'\), "
                 r"got 'hazard'")),
    ("prediction", "expected without follow-up", lambda: _fitted().predict(
        NEW.drop(columns="t"), type="expected"), (E, ValueError,
     r"newdata lacks the column\(s\) \['t'\]")),
    ("prediction", "newdata missing x", lambda: _fitted().predict(NEW.assign(x=np.nan)), (E, CE,
     r"'x' \(newdata column\) has 3 row\(s\) with missing values: row 0 = nan")),
    ("prediction", "survival at a negative time", lambda: _fitted().predict_survival(
        NEW, times=[-5, 3]), (E, ValueError, r"times must be finite and >= 0 .*got -5 at "
                                             r"position 0")),
    ("prediction", "survival at NaN", lambda: _fitted().predict_survival(NEW, times=[np.nan]),
     (E, ValueError, r"times must be finite and >= 0 .*got nan")),
    ("prediction", "survival at a 2-d grid", lambda: _fitted().predict_survival(
        NEW, times=[[1, 2], [3, 4]]), (E, ValueError, r"times must be a 1-d list of times, "
                                                      r"got shape \(2, 2\)")),
    ("prediction", "survival after follow-up", lambda: _fitted().predict_survival(
        NEW, times=[1000]), (W, engine.DataWarning, r"3 predicted value\(s\) at times after "
                                                    r"the last follow-up")),
    ("prediction", "survival conf_type typo", lambda: _fitted().predict_survival(
        NEW, conf_type="logit"), (E, ValueError, r"conf_type must be one of")),
    ("prediction", "survival level in percent", lambda: _fitted().predict_survival(
        NEW, level=95), (E, ValueError, r"level must be between 0 and 1, got 95")),
    ("prediction", "adjusted curves of an unknown treatment", lambda: engine.adjusted_curves(
        _fitted(), "treat", times=[5, 10]), (E, CE, r"treatment 'treat' is not a covariate of "
                                                    r"the fit; its covariates are")),
    ("prediction", "adjusted curves at decreasing times", lambda: engine.adjusted_curves(
        _fitted(), "tr", times=[10, 5]), (E, ValueError, r"times must be finite, increasing "
                                                         r"and >= 0; got \[10.0, 5.0\]")),
    ("prediction", "adjusted curves by a formula's text column", lambda: engine.adjusted_curves(
        _fitted(), "s", times=[5, 10]), (E, CE, r"treatment 's' enters the fit as the formula's "
                                                r"columns \['s\[T.b\]'\]")),
    ("prediction", "adjusted curves at a level beyond the data", lambda: engine.adjusted_curves(
        _fitted(), "tr", times=[5, 10], levels=[0, 2]), (W, engine.DataWarning,
     r"levels \[2.0\] of 'tr' lie outside its values in the data \(0 to 1\): the adjusted "
     r"estimates there extrapolate")),
    ("prediction", "baseline hazard centered as text", lambda: _fitted().baseline_hazard(
        centered="no"), (E, ValueError, r"centered must be True or False, got 'no'")),
    ("prediction", "adjusted curves at a negative time", lambda: engine.adjusted_curves(
        _fitted(), "tr", times=[-5, 5]), (E, ValueError, r"times must be finite, increasing "
                                                         r"and >= 0 .*got -5")),
    ("prediction", "adjusted curves of (start, stop] rows", lambda: engine.adjusted_curves(
        _fitted("x + tr", start=True), "tr", times=[5]), (E, CE,
     r"adjusted curves average over one row per subject; this cohort has entry times")),
    ("prediction", "adjusted curves bootstrap -1", lambda: engine.adjusted_curves(
        _fitted(), "tr", times=[5], bootstrap=-1), (E, ValueError,
     r"bootstrap must be a number of replicates \(0 for none\), got -1")),
    ("prediction", "adjusted RMST beyond follow-up", lambda: engine.adjusted_curves(
        _fitted(), "tr", times=[5], rmst_tau=1000), (E, ValueError,
     r"rmst_tau must be positive and within every stratum's follow-up \(up to 27\)")),
    ("prediction", "adjusted RMST of Fine-Gray", lambda: engine.adjusted_curves(
        _fitted("x + tr", model="fine_gray"), "tr", times=[5], rmst_tau=5), (E, ValueError,
     r"rmst_tau is for Cox fits")),
    ("prediction", "baseline hazard of Fine-Gray", lambda: _fitted(
        "x + tr", model="fine_gray").baseline_hazard(), (E, ValueError,
     r"this fit is model='fine_gray'. Use res.predict_cif")),
    ("prediction", "baseline hazard of logistic", lambda: engine.fit(
        BIN, model="logistic").baseline_hazard(), (E, ValueError,
     r"baseline hazards and predicted curves are for Cox fits; this fit is model='logistic'")),
    ("prediction", "predict_cif of Cox", lambda: _fitted().predict_cif(NEW), (E, ValueError,
     r"predicted cumulative incidence is for Fine-Gray fits; this fit is model='cox'")),
    ("prediction", "predict_cif at NaN", lambda: _fitted(
        "x + tr", model="fine_gray").predict_cif(NEW, times=[np.nan]), (E, ValueError,
     r"times must be finite and >= 0 .*got nan")),
    ("prediction", "predict_cif at a negative time", lambda: _fitted(
        "x + tr", model="fine_gray").predict_cif(NEW, times=[-3]), (E, ValueError,
     r"times must be finite and >= 0 .*got -3")),
    ("prediction", "predict_cif lacks a column", lambda: _fitted(
        "x + tr", model="fine_gray").predict_cif(NEW.drop(columns="x")), (E, CE,
     r"column 'x' \(formula term 'x', in newdata\)")),
    ("prediction", "curves of a fit with cut points", lambda: engine.fit(
        COX, cut_points={"x": [10.0]}).predict(), (E, ValueError,
     r"this fit has cut points.*Predict from a fit without cut_points")),
    # formulas and splines
    ("formula", "syntax error", lambda: _formula("x +* z"), (E, CE,
     r"the formula 'x \+\* z' cannot be parsed.*Write it as R does")),
    ("formula", "unbalanced parenthesis", lambda: _formula("x + (z"), (E, CE,
     r"cannot be parsed")),
    ("formula", "unknown column", lambda: _formula("x + age"), (E, CE,
     r"column 'age' \(formula term 'age'\) is not in the data")),
    ("formula", "unknown strata column", lambda: _formula("x + strata(q)"), (E, CE,
     r"column 'q' \(strata\) is not in the data")),
    ("formula", "strata crossed with a covariate", lambda: _formula("x * strata(s)"), (E, CE,
     r"crosses strata\(\) with a covariate")),
    ("formula", "no covariate terms", lambda: _formula("1"), (E, CE,
     r"the formula '1' has no covariate terms")),
    ("formula", "left side not Surv", lambda: engine.Cohort.from_frame(FORMULA_DF,
                                                                       formula="y ~ x"),
     (E, CE, r"the left side 'y' of the formula 'y ~ x' is not Surv\(time, event\)")),
    ("formula", "formula and covariates", lambda: engine.Cohort.from_frame(
        FORMULA_DF, "t", "e", covariates=["x"], formula="z"), (E, CE,
     r"give the covariates either as covariates=\[\.\.\.\] or inside formula=, not both")),
    ("formula", "spline df 0", lambda: _formula("ns(x, df=0)"), (E, CE,
     r"the term 'ns\(x, df=0\)': ns\(x, df=0\): df must be a whole number >= 1")),
    ("formula", "spline df a fraction", lambda: _formula("ns(x, df=2.5)"), (E, CE,
     r"df must be a whole number >= 1")),
    ("formula", "spline without df", lambda: _formula("ns(x)"), (E, CE,
     r"ns\(x\): give df= \(e.g. ns\(bmi, df=4\)\) or knots=")),
    ("formula", "spline of a text column", lambda: _formula("ns(s, df=3)"), (E, CE,
     r"the term 'ns\(s, df=3\)' cannot be evaluated.*could not convert string to float.*"
     r"numbers for splines")),
    ("formula", "spline of a 0/1 column", lambda: _formula("ns(tr, df=3)"), (E, CE,
     r"ns\(x, df=3\): 2 distinct value\(s\) are too few for df=3.*C\(x\)")),
    ("formula", "spline of a constant", lambda: _formula("ns(k, df=3)",
                                                         FORMULA_DF.assign(k=1.0)),
     (E, CE, r"1 distinct value\(s\) are too few for df=3")),
    ("formula", "spline knot outside the data", lambda: _formula("ns(x, knots=[100])"), (E, CE,
     r"ns: the knots \[100\] must be distinct and lie strictly inside the boundary knots")),
    ("formula", "spline boundary away from the data", lambda: _formula(
        "ns(x, df=3, boundary_knots=(5, 6))"), (E, CE,
     r"ns: no value of x lies within boundary_knots \(5, 6\)")),
    ("formula", "spline infinite value", lambda: _formula("ns(x, df=3)", FORMULA_DF.assign(
        x=np.where(np.arange(N) == 2, np.inf, FORMULA_DF["x"]))), (E, CE,
     r"ns: infinite values at rows \[3\] \(1-based\)")),
    ("formula", "rcs with 2 knots", lambda: _formula("rcs(x, 2)"), (E, CE,
     r"rcs: nk=2; Harrell's default knots exist for 3 to 7 knots")),
    ("formula", "rcs of a 0/1 column", lambda: _formula("rcs(tr, 3)"), (E, CE,
     r"rcs: 2 distinct values are too few for 3 knots")),
    ("formula", "log of negative values", lambda: _formula("np.log(x)"), (E, CE,
     r"'np.log\(x\)' cannot be evaluated.*(contains null values|invalid value "
     r"encountered in log)")),
    ("formula", "prediction outside the spline's range", lambda: _fitted(
        "ns(x, df=3)").predict(NEW.assign(x=100.0)), (E, CE,
     r"ns: 3 value\(s\) outside the range the spline was fitted on")),
    # sensitivity and calibration
    ("sensitivity", "unknown axis", lambda: engine.sensitivity_study(
        COX, "x", {"subgroups": [None]}), (E, ValueError,
     r"vary has unknown axes \['subgroups'\]; the axes are \['subgroup'")),
    ("sensitivity", "unknown adjustment column", lambda: engine.sensitivity_study(
        COX, "x", {"covariates": [["x", "age"]]}), (E, ValueError,
     r"vary\['covariates'\]\['x\+age'\] names \['age'\], which are not covariates")),
    ("sensitivity", "unknown covariate of interest", lambda: engine.sensitivity_study(
        COX, "age", {"ties": ["efron"]}), (E, ValueError,
     r"of_interest names \['age'\], which are not covariates")),
    ("sensitivity", "empty axis", lambda: engine.sensitivity_study(COX, "x", {"ties": []}),
     (E, ValueError, r"vary\['ties'\] is empty; give at least one choice")),
    ("sensitivity", "subgroup of another length", lambda: engine.sensitivity_study(
        COX, "x", {"subgroup": [np.ones(3, bool)]}), (E, ValueError,
     r"must be a boolean mask with one value per cohort row \(40\)")),
    ("sensitivity", "negative follow-up", lambda: engine.sensitivity_study(
        COX, "x", {"follow_up": [-1]}), (E, ValueError,
     r"vary\['follow_up'\]\['-1'\] must be a positive finite time")),
    ("sensitivity", "unknown base option", lambda: engine.sensitivity_study(
        COX, "x", {}, base={"solverr": "x"}), (E, ValueError,
     r"base has unknown options \['solverr'\]")),
    ("sensitivity", "E-value of a CI not holding the estimate", lambda: engine.evalues_hr(
        2.0, 0.5, 1.5, True), (E, ValueError, r"the estimate 2 is outside its confidence "
                                              r"interval")),
    ("sensitivity", "E-value of a log HR", lambda: engine.evalues_hr(-0.7, -1.0, -0.2, True),
     (E, ValueError, r"hr must hold hazard ratios \(>= 0\), got -0.7 at position 0; pass "
                     r"exp\(coef\)")),
    ("sensitivity", "E-value of a negative true ratio", lambda: engine.evalues_hr(
        2.0, 1.5, 3.0, True, true=-1), (E, ValueError, r"true must be a hazard ratio > 0")),
    ("sensitivity", "E-values of ragged lengths", lambda: engine.evalues_hr(
        [2.0, 3.0], [1.5, 1.0, 1.2], [3.0, 4.0], True), (E, ValueError,
     r"hr, lower and upper must have one length, got 2, 3 and 2")),
    ("sensitivity", "no usable negative control", lambda: engine.fit_null([0.1, 0.2],
                                                                          [0.0, 0.0]),
     (E, ValueError, r"no usable negative-control estimate")),
    ("sensitivity", "one negative control", lambda: engine.fit_null([0.1, np.nan], [0.2, 0.1]),
     (E, ValueError, r"fit_null needs at least 2 usable negative-control estimates, got 1 "
                     r"\(1 left out\)")),
    ("sensitivity", "few negative controls", lambda: engine.fit_null([0.1, -0.2], [0.2, 0.1]),
     (W, engine.DataWarning, r"the empirical null rests on 2 negative-control estimates")),
    ("sensitivity", "calibrated p two_sided as text", lambda: engine.calibrate_p(
        engine.fit_null([0.1, -0.2, 0.0, 0.05, -0.1], [0.2, 0.1, 0.15, 0.1, 0.2]), [0.5], [0.1],
        two_sided="no"), (E, ValueError, r"two_sided must be True or False, got 'no'")),
    ("sensitivity", "negative controls of two lengths", lambda: engine.fit_null(
        [0.1, 0.2], [0.2]), (E, ValueError, r"log_rr and se must have the same length")),
    ("sensitivity", "error model of negative controls only", lambda: (
        engine.fit_systematic_error_model([0.1, 0.2], [0.1, 0.1], [0, 0])), (E, ValueError,
     r"needs controls of at least two true effects.*error_model\(fit_null")),
    ("sensitivity", "negative controls of an unknown treatment", lambda: (
        engine.negative_control_estimates(COX, {"o": DF["e"].to_numpy()}, "treat")),
     (E, ValueError, r"treatment 'treat' is not a covariate of the cohort")),
    # inference and prediction metrics after a fit
    ("metrics", "ph_test of a penalised fit", lambda: engine.ph_test(
        engine.fit(COX, penalty=engine.L2(1.0))), (E, ValueError,
     r"take unpenalised Cox fits \(with cut points: checked on their episodes\).*"
     r"penalty='L2\(1\)'")),
    ("metrics", "ph_test transform typo", lambda: engine.ph_test(engine.fit(COX),
                                                                 transform="logit"),
     (E, ValueError, r"transform must be one of \('km', 'identity', 'rank', 'log'\)")),
    ("metrics", "concordance of another cohort", lambda: engine.concordance(
        engine.fit(COX), _cohort(DF.iloc[:10], covariates=["x", "z"])), (E, ValueError,
     r"the cohort is not the one fitted")),
    ("metrics", "Uno's C of scores of another length", lambda: engine.uno_concordance(
        T_, E_, RISK[:5]), (E, ValueError, r"risk must be one finite score per row of time")),
    ("metrics", "Uno's C of competing causes", lambda: engine.uno_concordance(
        T_, DF["c"].to_numpy(), RISK), (E, ValueError,
     r"the test events must be 0/1 \(or bool\); got codes \[0, 1, 2\]")),
    ("metrics", "Brier score beyond follow-up", lambda: engine.brier_score(
        T_, E_, np.full((N, 1), 0.5), [1000]), (E, ValueError,
     r"times must lie in \[1, 27\) \(the test data's follow-up\); got \[1000, 1000\]")),
    ("metrics", "Brier score at NaN", lambda: engine.brier_score(
        T_, E_, np.full((N, 1), 0.5), [np.nan]), (E, ValueError,
     r"times must be finite numbers; got nan at position 0")),
    ("metrics", "Brier score of a risk score", lambda: engine.brier_score(
        T_, E_, np.full((N, 1), 1.5), [10]), (E, ValueError,
     r"survival must hold probabilities in \[0, 1\]; row 0, time 10 has 1.5")),
    ("metrics", "Brier score of another shape", lambda: engine.brier_score(
        T_, E_, np.full((5, 1), 0.5), [10]), (E, ValueError,
     r"survival must be finite, of shape \(40, 1\); got \(5, 1\)")),
    ("metrics", "integrated Brier at decreasing times", lambda: engine.integrated_brier_score(
        T_, E_, np.full((N, 2), 0.5), [20, 10]), (E, ValueError,
     r"the integrated Brier score needs increasing times, got \[20.0, 10.0\]")),
    ("metrics", "time AUC at NaN", lambda: engine.time_dependent_auc(T_, E_, RISK, [np.nan]),
     (E, ValueError, r"times must be finite numbers; got nan")),
    ("metrics", "time AUC beyond follow-up", lambda: engine.time_dependent_auc(
        T_, E_, RISK, [1000]), (E, ValueError, r"times must lie in \[1, 27\)")),
    ("metrics", "time AUC train not a pair", lambda: engine.time_dependent_auc(
        T_, E_, RISK, [10], train=[T_, E_]), (E, ValueError,
     r"train must be a \(time, event\) pair of arrays")),
    ("metrics", "calibration table at a negative time", lambda: engine.calibration_table(
        engine.fit(COX), -5), (E, ValueError, r"time must be one finite follow-up time > 0, "
                                              r"got -5")),
    ("metrics", "calibration table at NaN", lambda: engine.calibration_table(
        engine.fit(COX), np.nan), (E, ValueError, r"time must be one finite follow-up time")),
    ("metrics", "calibration table beyond follow-up", lambda: engine.calibration_table(
        engine.fit(COX), 1000), (E, ValueError, r"times after the last follow-up of a stratum "
                                                r"\(27\)")),
    ("metrics", "calibration table of one group", lambda: engine.calibration_table(
        engine.fit(COX), 10, groups=1), (E, ValueError,
     r"groups must be an integer from 2 to the number of rows, got 1")),
    # the OMOP study's weighting, refused before the CDM is read
    ("omop", "study weighting IPTW", lambda: __import__("engine.cdm", fromlist=["cdm"]).run_study(
        None, T, C, O, weighting="IPTW"), (E, ValueError,
     r"weighting must be one of \['ATE', 'ATT', 'ATC', 'ATO', 'ATM'\] or None, got 'IPTW'")),
    ("omop", "study weighting lower case", lambda: __import__(
        "engine.cdm", fromlist=["cdm"]).run_study(None, T, C, O, weighting="ato"),
     (E, ValueError, r"weighting must be one of .* or None, got 'ato'")),
    # rates: standard populations, Poisson's bands, predictions and adjusted rates
    ("descriptive", "an unknown standard population", lambda: engine.standard_population(
        "mars"), (E, ValueError, r"unknown standard population 'mars'; choose one of")),
    ("descriptive", "negative ages for a standard population",
     lambda: engine.standardized_rates(_formula("x"), -np.ones(N), standard="who2000"),
     (E, ValueError, r"standardize_by must be ages in years \(finite, >= 0\)")),
    ("regression", "follow-up bands of a Cox model", lambda: engine.fit(_formula("x"),
                                                                      bands=[5]),
     (E, ValueError, r"bands give a Poisson regression one baseline rate per follow-up band")),
    ("prediction", "expected events without the time column", lambda: engine.fit(
        _formula("x + tr"), model="poisson").predict(NEW[["x", "tr"]], type="expected"),
     (E, ValueError, r"type='expected' needs each row's person-time")),
    ("prediction", "adjusted rates of a Cox fit", lambda: engine.adjusted_rates(_fitted(), "tr"),
     (E, ValueError, r"adjusted rates standardise a Poisson fit's rates")),
]


def _read_upload(name, content):
    from app.data.loading import read_upload

    return read_upload(name, content)


def _query(sql):
    from app.data.loading import query_duckdb

    return query_duckdb("", sql)


UPLOADS = [
    ("empty file", "a.csv", b"", r"'a.csv' is empty \(0 bytes\)"),
    ("wrong extension", "a.xlsx", b"PK\x03\x04junk", r"'a.xlsx': open a .csv or .parquet file"),
    ("broken Parquet", "a.parquet", b"PAR1 not really", r"could not read 'a.parquet'"),
    ("Parquet named .csv", "a.csv", _parquet_bytes(DF), r"could not read 'a.csv'|'a.csv' has"),
    ("header only", "a.csv", b"t,e,x\n", r"'a.csv' has 0 rows"),
]
QUERIES = [
    ("two statements", "SELECT 1; SELECT 2", r"one SELECT query at a time"),
    ("DROP", "DROP TABLE rossi", r"only a read-only SELECT"),
    ("COPY out", "COPY rossi TO '/tmp/x.csv'", r"only a read-only SELECT"),
    ("ATTACH", "ATTACH '/tmp/x.duckdb'", r"only a read-only SELECT"),
    ("INSTALL", "INSTALL httpfs", r"only a read-only SELECT"),
    ("SET", "SET memory_limit='100GB'", r"only a read-only SELECT"),
    ("read a server file", "SELECT * FROM read_csv('/etc/passwd')", r"refused"),
    ("read a URL", "SELECT * FROM read_parquet('https://example.com/x.parquet')", r"refused"),
    ("not SQL", "SELEKT 1", r"not valid SQL"),
    ("empty", "   ", r"type a SQL query"),
    ("no rows", "SELECT * FROM rossi WHERE 1 = 0", r"the query returned no rows"),
    ("unknown table", "SELECT * FROM nothere", r"the DuckDB query failed"),
]
for name, filename, content, pattern in UPLOADS:
    CASES.append(("app", f"upload {name}",
                  lambda filename=filename, content=content: _read_upload(filename, content),
                  (E, "DataLoadError", pattern)))
for name, sql, pattern in QUERIES:
    CASES.append(("app", f"DuckDB {name}", lambda sql=sql: _query(sql),
                  (E, "DataLoadError", pattern)))
