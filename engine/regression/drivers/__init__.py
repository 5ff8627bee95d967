"""Verbs that fit one prepared Problem many times: the regularisation path, cross-validation, the bootstrap and the resampling they share."""
