"""The OMOP tab's default study on the bundled Eunomia data, as the engine computes it: the
oracle the app's OMOP tests read their numbers against (computed once per test process)."""

from __future__ import annotations

import functools

CELECOXIB, DICLOFENAC, GI_BLEED = 1118084, 1124300, 192671
STRATIFIED = "PS stratified (5 strata)"


@functools.cache
def default_study():
    """engine.cdm.run_study with the tab's defaults (celecoxib vs diclofenac, GI bleeding)."""
    from engine.cdm import open_eunomia, run_study

    con = open_eunomia()
    try:
        return run_study(con, CELECOXIB, DICLOFENAC, GI_BLEED, ps_strata=5, match_ratio=1,
                         caliper=0.2, prior_observation=183, risk_window_end=30)
    finally:
        con.close()
