"""survscan benchmarks: survscan's Cox fits against lifelines, scikit-survival Coxnet and skglm.

Run `python -m bench quick` (N=20,000, P=200) or `python -m bench cox --n 100000 --p 1000 ...`;
results go to bench/results/ as JSON and Markdown.
"""
