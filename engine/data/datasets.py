"""Bundled real survival datasets, read from the repository's ``sample_data/`` folder.

Each loader returns the file as published (no recoding, no dropped rows) in a new pandas
DataFrame; origins, licences and reference values are listed in ``sample_data/README.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

__all__ = [
    "sample_data_dir",
    "load_rossi",
    "load_stanford_heart",
    "load_jasa1",
    "load_mgus2",
    "load_bmtcrr",
    "load_lung",
    "load_sccs",
    "load_breast_cancer",
]

_CANDIDATES = (
    Path(__file__).resolve().parents[2] / "sample_data",  # source tree / editable install
    Path(sys.prefix) / "share" / "survscan" / "sample_data",  # wheel install (data-files)
)


def sample_data_dir() -> Path:
    """Return the folder that holds the bundled CSV files.

    Returns
    -------
    pathlib.Path
        ``<repo>/sample_data`` when running from the source tree or an editable install,
        otherwise ``<prefix>/share/survscan/sample_data`` from a regular install.

    Raises
    ------
    FileNotFoundError
        If neither location exists.
    """
    for path in _CANDIDATES:
        if path.is_dir():
            return path
    raise FileNotFoundError(
        "survscan's sample_data folder was not found in "
        + " or ".join(str(p) for p in _CANDIDATES)
        + "; install survscan with `pip install -e .` from the repository root."
    )


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(sample_data_dir() / name)


def load_rossi() -> pd.DataFrame:
    """Recidivism of 432 prisoners released from Maryland state prisons.

    Rossi, Berk & Lenihan's experiment: half the released prisoners received financial aid;
    follow-up is one year in weeks. One row per subject, no missing values.

    Returns
    -------
    pandas.DataFrame
        Shape (432, 9), all int64:

        - week: week of first arrest after release, or 52 (censored)
        - arrest: 1 if arrested during follow-up, else 0
        - fin: 1 if the prisoner received financial aid
        - age: age in years at release
        - race: 1 if black
        - wexp: 1 if the prisoner had full-time work experience
        - mar: 1 if married at release
        - paro: 1 if released on parole
        - prio: number of prior convictions

    Notes
    -----
    R ``coxph(Surv(week, arrest) ~ fin + age + race + wexp + mar + paro + prio)``, Efron ties:
    fin -0.3794222, age -0.0574377, race 0.3138998, wexp -0.1497957, mar -0.4337039,
    paro -0.0848711, prio 0.0914971. Source: lifelines (MIT).

    References
    ----------
    .. [1] Rossi, P.H., Berk, R.A. and Lenihan, K.J. (1980). Money, Work, and Crime: Some
       Experimental Results. New York: Academic Press.
    .. [2] Fox, J. and Weisberg, S. (2011). Cox proportional-hazards regression for survival
       data in R. Appendix to An R Companion to Applied Regression.
    """
    return _read("rossi.csv")


def load_stanford_heart() -> pd.DataFrame:
    """Stanford heart transplant programme, counting-process form (R survival's ``heart``).

    103 patients accepted into the programme; those who received a transplant have two
    ``(start, stop]`` episodes, before and after the transplant. 75 deaths. No missing values.

    Returns
    -------
    pandas.DataFrame
        Shape (172, 8):

        - start, stop (float64): episode in days since acceptance (plus one, as in R's ``heart``)
        - event (int64): 1 if the patient died at ``stop``
        - age (float64): age at acceptance minus 48 years
        - year (float64): year of acceptance, in years since 1 Nov 1967
        - surgery (int64): 1 if prior bypass surgery
        - transplant (int64): 1 in the episode after the transplant
        - id (int64): patient id, 1..103

    Notes
    -----
    R ``coxph(Surv(start, stop, event) ~ age + year + surgery + transplant)``, Efron ties:
    0.0272, -0.1463, -0.6372, -0.0103 (se 0.0137, 0.0705, 0.3672, 0.3138). With
    ``strata(transplant)``: age 0.0293, year -0.1527, surgery -0.6176; log-likelihood
    -254.7144. Source: lifelines (MIT); equal to R's ``heart``.

    References
    ----------
    .. [1] Crowley, J. and Hu, M. (1977). Covariance analysis of heart transplant survival
       data. Journal of the American Statistical Association, 72, 27-36.
    """
    return _read("stanford_heart.csv")


def load_jasa1() -> pd.DataFrame:
    """Stanford heart transplant data as in Kalbfleisch & Prentice (R survival's ``jasa1``).

    The same 103 patients as :func:`load_stanford_heart`, with times in days since acceptance
    (a death on the day of acceptance is at 0.5) and a patient transplanted on day 0 counted
    as transplanted from the start, hence 170 episodes. 75 deaths. No missing values.

    Returns
    -------
    pandas.DataFrame
        Shape (170, 8):

        - id (int64): patient id, 1..103
        - start, stop (float64): episode in days since acceptance
        - event (int64): 1 if the patient died at ``stop``
        - transplant (int64): 1 in the episode after the transplant
        - age (float64): age at acceptance minus 48 years
        - year (float64): year of acceptance, in years since 1 Nov 1967
        - surgery (int64): 1 if prior bypass surgery

    Notes
    -----
    R ``coxph(Surv(start, stop, event) ~ age*transplant + surgery + year, ties="breslow")``
    (R survival ``tests/jasa.Rout.save``): age 0.01527, transplant 0.04457,
    surgery -0.62113, year -0.13608, age:transplant 0.02703. Source: R survival 3.8 (LGPL >= 2).

    References
    ----------
    .. [1] Kalbfleisch, J.D. and Prentice, R.L. (1980). The Statistical Analysis of Failure
       Time Data. New York: Wiley.
    """
    return _read("jasa1.csv")


def load_mgus2() -> pd.DataFrame:
    """Monoclonal gammopathy (MGUS): progression to plasma cell malignancy and death.

    1,384 patients from the Mayo Clinic; progression (PCM) and death are competing events.
    One row per subject.

    Returns
    -------
    pandas.DataFrame
        Shape (1384, 11):

        - id (int64)
        - age (int64): age at diagnosis, years
        - sex (object): "F" or "M"
        - dxyr (int64): year of diagnosis
        - hgb (float64): haemoglobin; 13 missing
        - creat (float64): creatinine; 30 missing
        - mspike (float64): size of the monoclonal serum spike; 11 missing
        - ptime (int64): months to progression or last PCM-free contact
        - pstat (int64): 1 if progression to PCM
        - futime (int64): months to death or last contact
        - death (int64): 1 if dead

    Notes
    -----
    Competing-risks coding: etime = ptime if pstat == 1 else futime; event = 1 (PCM) if
    pstat == 1 else 2 * death. Fine-Gray (R vignette "compete", finegray + coxph, Efron):
    PCM ~ sex: male -0.2290 (115 events); death ~ sex: male 0.23349 (860 events);
    PCM ~ age + sex + mspike: -0.017, -0.213, 0.888; death ~ same: 0.059, 0.369, -0.154.
    Source: R survival 3.8 (LGPL >= 2).

    References
    ----------
    .. [1] Kyle, R.A. et al. (2002). A long-term study of prognosis in monoclonal gammopathy
       of undetermined significance. New England Journal of Medicine, 346, 564-569.
    """
    return _read("mgus2.csv")


def load_bmtcrr() -> pd.DataFrame:
    """Bone-marrow transplant for acute leukaemia: relapse with death as competing risk.

    177 patients; 56 relapses, 75 deaths without relapse, 46 censored. No missing values.

    Returns
    -------
    pandas.DataFrame
        Shape (177, 7):

        - Sex (object): "F" or "M"
        - D (object): disease, "ALL" or "AML"
        - Phase (object): "CR1", "CR2", "CR3" or "Relapse"
        - Age (int64): years
        - Status (int64): 0 censored, 1 relapse, 2 competing death
        - Source (object): stem-cell source, "BM+PB" or "PB"
        - ftime (float64): months to failure or censoring

    Notes
    -----
    Source: R package casebase (MIT).

    References
    ----------
    .. [1] Scrucca, L., Santucci, A. and Aversa, F. (2010). Regression modeling of competing
       risk using R: an in depth guide for clinicians. Bone Marrow Transplantation, 45,
       1388-1395.
    """
    return _read("bmtcrr.csv")


SCCS_DATASETS = ("itpdat", "gidat", "hipdat")


def load_lung() -> pd.DataFrame:
    """Survival in advanced lung cancer: 228 patients of the North Central Cancer Treatment
    Group, with missing values (R survival's ``lung``, status recoded to 0/1 by lifelines).

    Returns
    -------
    pandas.DataFrame
        Shape (228, 10): inst, time (days), status (1 dead, 0 censored), age, sex (1 male,
        2 female), ph.ecog, ph.karno, pat.karno, meal.cal, wt.loss; NaN in inst (1), ph.ecog
        (1), ph.karno (1), pat.karno (3), meal.cal (47), wt.loss (14).

    Notes
    -----
    R ``coxph(Surv(time, status) ~ age + sex + ph.ecog, data = lung)``, Efron ties, "1
    observation deleted due to missingness", n = 227, 164 events: age 0.011067, sex
    -0.552612, ph.ecog 0.463728 (se 0.009267, 0.167739, 0.113577). Source: lifelines (MIT).

    References
    ----------
    .. [1] Loprinzi, C. L. et al. (1994). Prospective evaluation of prognostic variables from
       patient-completed questionnaires. Journal of Clinical Oncology, 12(3), 601-607.
    """
    return _read("lung.csv")


def load_sccs(name: str) -> pd.DataFrame:
    """A self-controlled case series dataset of R's SCCS package (GPL >= 2), as published.

    ``itpdat``: MMR vaccine and idiopathic thrombocytopenic purpura, 44 admissions in 35
    children (ages in days: sta, end, itp, mmr; Miller et al. 2001); ``gidat``: NSAIDs and GI
    bleeding, 838 simulated cases, one row per exposure (sta, end, bleed, ns, endns);
    ``hipdat``: antidepressants and hip fracture (frac, sta, end, ad, endad).  Build eras with
    ``engine.SccsData.from_cases``; see sample_data/README.md.
    """
    if name not in SCCS_DATASETS:
        raise ValueError(f"unknown SCCS dataset {name!r}; choose one of {SCCS_DATASETS}")
    return pd.read_csv(sample_data_dir() / "sccs" / f"{name}.tsv", sep="\t")
def load_breast_cancer() -> pd.DataFrame:
    """Wisconsin diagnostic breast cancer: 569 fine-needle aspirates, benign or malignant.

    The binary-outcome example of the horseshoe probit sampler (``engine.sample``).

    Returns
    -------
    pandas.DataFrame
        Shape (569, 31): 30 numeric features of the cell nuclei ("mean radius" ...
        "worst fractal dimension": mean, standard error and worst value of ten measurements)
        and target_benign (int64): 1 benign (357), 0 malignant (212).

    Notes
    -----
    Source: scikit-learn's bundled copy (BSD-3-Clause); originally UCI, CC BY 4.0.

    References
    ----------
    .. [1] Street, W. N., Wolberg, W. H. and Mangasarian, O. L. (1993). Nuclear feature
       extraction for breast tumor diagnosis. IS&T/SPIE 1993 International Symposium on
       Electronic Imaging, 1905, 861-870.
    """
    return _read("breast_cancer_wisconsin_diagnostic.csv")
