"""The GWAS page: the multi-trait scan, its state, view and plots."""
