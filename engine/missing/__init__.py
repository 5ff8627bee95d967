"""Missing covariates: multiple imputation by chained equations with the outcome in every
imputation model (``imputation``), and Rubin's rules to pool the fits (``pooling``)."""
