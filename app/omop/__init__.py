"""The OMOP study page: its settings and last study (state), the study job, the view and its
plots."""
