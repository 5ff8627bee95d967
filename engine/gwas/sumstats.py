"""A scan's rows as summary statistics in the columns of regenie and PLINK 2 ``--glm`` files.

PHENO, CHROM, GENPOS, ID, ALLELE0 (the other allele), ALLELE1 (the counted, effect allele:
.bim allele 2 unless ``count_A1``), N (the trait's individuals), TEST ("ADD"), BETA and SE (FaST-LMM's SnpWeight and
SnpWeightSE: per standard deviation of the allele count, as ``gwas.scan`` standardises SNPs),
T_STAT = BETA / SE, P, LOG10P = -log10 P from the t distribution's log tail (exact where P
underflows) and NULL_H2.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

COLUMNS = ["PHENO", "CHROM", "GENPOS", "ID", "ALLELE0", "ALLELE1", "N", "TEST", "BETA", "SE",
           "T_STAT", "P", "LOG10P", "NULL_H2"]


def summary_statistics(result, frame: pd.DataFrame | None = None) -> pd.DataFrame:
    """``frame`` (default ``result.frame``: rows of ``gwas.scan``) in regenie/PLINK columns."""
    from bed_reader import open_bed

    frame = result.frame if frame is None else frame
    spec = result.spec
    with open_bed(spec["bed"], count_A1=spec["count_A1"]) as b:
        alleles = pd.DataFrame({"a1": b.allele_1, "a2": b.allele_2}, index=b.sid)
    alleles = alleles[~alleles.index.duplicated()].reindex(frame["SNP"].to_numpy())
    counted, other = ("a1", "a2") if spec["count_A1"] else ("a2", "a1")
    beta, se = frame["SnpWeight"].to_numpy(), frame["SnpWeightSE"].to_numpy()
    t_stat = beta / se
    n = result.summary["n"].reindex(frame["Pheno"].astype(str).to_numpy()).to_numpy()
    dof = n - spec["covariates"] - 2             # intercept and SNP besides the covariates
    log_p = np.log(2.0) + stats.t.logsf(np.abs(t_stat), dof)
    return pd.DataFrame({
        "PHENO": frame["Pheno"].astype(str).to_numpy(), "CHROM": frame["Chr"].to_numpy(),
        "GENPOS": frame["ChrPos"].astype(np.int64).to_numpy(), "ID": frame["SNP"].to_numpy(),
        "ALLELE0": alleles[other].to_numpy(), "ALLELE1": alleles[counted].to_numpy(),
        "N": n, "TEST": "ADD", "BETA": beta, "SE": se, "T_STAT": t_stat,
        "P": frame["PValue"].to_numpy(), "LOG10P": -log_p / np.log(10.0),
        "NULL_H2": frame["Nullh2"].to_numpy()}, columns=COLUMNS)
