"""The served app in a browser, a click at a time: how long a user waits, beside the compute.

python -m bench app [--out bench/results] [--repeats 2]

Starts ``python -m app.serve app/main.py`` (bench/serve.py's Server) and drives headless Chromium
(Playwright, /usr/bin/chromium) through one session, as issue 29's targets are stated:
(1) the first page ready ("Ready to fit.") and its weight (the transfer sizes of its requests,
from the browser's Performance entries); (2) rossi: open the sample (after mgus2, so its data
line is new), press Fit, until Results shows the fin row of its hazard ratios and their forest
plot (click to drawn; a new fit opens that page of Results), beside the worker's own seconds
(cohort + engine.fit, from the Fit tab's status line); (3) every tab's first opening, until the
page's own control shows; (4) step (2) again after every tab has been visited, and the ratio to
the fresh session (the target: within 1.2x); (5) every tab opened again (the tabs are dynamic:
a page shown again is sent to the browser anew, app/shell/lazy_tab.py); (6) each page's default
run once (rossi's Residuals page, an L1 fit of a simulated 10^5 x 1,000 cohort, rossi's L1
cross-validation, the SCCS, Bayesian and GWAS pages' defaults, an unpenalised fit of a simulated
10^6 x 20 cohort and its Residuals page), from the click until the job's "done in ... s" toast
shows (in one patch with the page's results), beside the worker's seconds that the toast gives:
the difference is the app's overhead. The load average is recorded before and after; the machine
is shared, so read the figures with it.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import time

from bench.report import machine_info, save
from bench.serve import CHROMIUM, TIMEOUT_MS, Server, open_page, tab

# the control each page shows once built and drawn
TAB_READY = {
    "Design": ("text", "Detected device"),
    "Describe": ("css", ".table-one .tabulator-row"),
    "Fit": ("button", "Fit"),
    "Results": ("css", ".forest-plot .bk-Canvas"),
    "Sensitivity": ("button", "Run the variants"),
    "OMOP study": ("button", "Run study"),
    "SCCS": ("button", "Fit SCCS"),
    "Bayesian": ("button", "Run sampler"),
    "GWAS": ("button", "Run scan"),
    "Timing": ("button", "Run timings"),
    "Export": ("button", "Hazard ratios (CSV)"),
}


def ready_locator(page, kind, what):
    if kind == "css":
        return page.locator(what).first
    if kind == "button":
        return page.get_by_role("button", name=what, exact=True).first
    return page.get_by_text(what).first


async def open_sample(page, name: str) -> float:
    """Data tab, Open sample ``name``: seconds until its data line and "Ready to fit." show."""
    await tab(page, "Data")
    await tab(page, "Sample")
    await page.locator(".bk-input-group", has=page.locator(
        "label", has_text="Bundled sample")).locator("select").first.select_option(name)
    t0 = time.perf_counter()
    await page.get_by_role("button", name="Open sample").click()
    await page.get_by_text(f"sample: {name} —").first.wait_for(timeout=TIMEOUT_MS)
    await page.get_by_text("Ready to fit.").wait_for(timeout=TIMEOUT_MS)
    return time.perf_counter() - t0


async def open_rossi(page) -> float:
    """mgus2 first (untimed), so that rossi's data line is new: seconds to open rossi."""
    await open_sample(page, "mgus2")
    return await open_sample(page, "rossi")


async def fit_to_results(page, name: str) -> tuple[float, float]:
    """Fit tab, name the fit, press Fit: (seconds until Results shows the fin row of the
    hazard ratios and their forest plot, the worker's seconds from the status line)."""
    await tab(page, "Fit")
    box = page.locator(".bk-input-group", has=page.locator("label", has_text="Fit name")) \
        .locator("input").first
    await box.fill(name)
    await box.press("Enter")
    t0 = time.perf_counter()
    await page.get_by_role("button", name="Fit", exact=True).click()
    fin = page.locator(".hr-table .tabulator-row", has=page.locator(
        '.tabulator-cell[tabulator-field="covariate"]', has_text=re.compile(r"^\s*fin\s*$")))
    await fin.first.wait_for(timeout=TIMEOUT_MS)
    await page.locator(".forest-plot .bk-Canvas").first.wait_for(timeout=TIMEOUT_MS)
    drawn = time.perf_counter() - t0
    await tab(page, "Fit")
    status = page.get_by_text(re.compile(rf"{re.escape(name)}: converged after \d+ iterations "
                                         r"in [\d.]+ s"))
    text = await status.first.text_content()
    worker = float(re.search(r"iterations in ([\d.]+) s", text).group(1))
    return drawn, worker


DONE = re.compile(r"done in ([\d.]+) s")


async def run_job(page, button: str) -> dict:
    """Press ``button`` and wait for the job's "done in ... s" toast: {"click_to_done_s",
    "worker_s", "overhead_s"}; a RuntimeError with the page's message when the job failed."""
    await page.wait_for_timeout(3500)      # the toasts of earlier jobs close (3 s)
    done = page.locator(".notyf__message", has_text=DONE)
    failed = page.locator(".notyf__message", has_text=re.compile(r"failed|Cannot"))
    seen = await done.count()
    t0 = time.perf_counter()
    await page.get_by_role("button", name=button, exact=True).click()
    while await done.count() <= seen:
        if await failed.count():
            raise RuntimeError(f"{button}: {await failed.last.text_content()}")
        if time.perf_counter() - t0 > 600:
            raise TimeoutError(f"{button}: no result in 600 s")
        await page.wait_for_timeout(50)
    took = time.perf_counter() - t0
    worker = float(DONE.search(await done.last.text_content()).group(1))
    return {"click_to_done_s": took, "worker_s": worker, "overhead_s": took - worker}


async def default_runs(page) -> dict[str, dict]:
    """Every page's default run, as a user starts it (see the module's step 6); rossi open."""
    out = {}
    await tab(page, "Results")         # the last unpenalised rossi fit
    await tab(page, "Residuals")
    out["rossi Residuals page (form of age, dfbeta of fin, deviance)"] = await run_job(
        page, "Show residuals")
    await tab(page, "Design")
    await page.get_by_role("button", name="L1", exact=True).click()
    await tab(page, "Fit")
    out["rossi L1 cross-validation (default folds and grid)"] = await run_job(
        page, "Cross-validate penalty")
    await tab(page, "SCCS")
    await page.get_by_role("button", name="Open dataset").click()
    await page.get_by_text(re.compile(r"R SCCS: \w+ — \d+ rows")).first.wait_for(
        timeout=TIMEOUT_MS)
    out["SCCS page's default run (its first bundled dataset)"] = await run_job(page, "Fit SCCS")
    for name, button in (("Bayesian", "Run sampler"), ("GWAS", "Run scan")):
        await tab(page, name)
        out[f"{name} page's default run"] = await run_job(page, button)
    await simulate(page, 100_000, 1000)
    await tab(page, "Design")
    await page.get_by_role("button", name="L1", exact=True).click()
    await tab(page, "Fit")
    out["Cox L1 fit, simulated 10^5 x 1,000"] = await run_job(page, "Fit")
    await simulate(page, 1_000_000, 20)
    await tab(page, "Design")
    await page.get_by_role("button", name="none", exact=True).click()
    await tab(page, "Fit")
    out["Cox fit, simulated 10^6 x 20, unpenalised"] = await run_job(page, "Fit")
    await tab(page, "Results")
    await tab(page, "Residuals")
    out["its Residuals page (form of x0, dfbeta of x0, deviance)"] = await run_job(
        page, "Show residuals")
    return out


async def simulate(page, n: int, p: int) -> None:
    """Data tab, Simulate: an n x p cohort (the page's density and seed), until its line shows."""
    await tab(page, "Data")
    await tab(page, "Simulate")
    for label, value in (("N (rows)", str(n)), ("P (covariates)", str(p))):
        box = page.locator(".bk-input-group", has=page.locator(
            "label", has_text=re.compile("^" + re.escape(label)))).filter(visible=True) \
            .locator("input").first
        await box.fill(value)
        await box.press("Enter")
    await page.get_by_role("button", name="Simulate cohort").click()
    await page.get_by_text(f"simulated N={n:,} P={p} —").first.wait_for(timeout=600_000)


async def openings(page) -> dict[str, float]:
    """Seconds from each tab's click until its page's own control shows."""
    out = {}
    for name, (kind, what) in TAB_READY.items():
        t0 = time.perf_counter()
        await tab(page, name)
        await ready_locator(page, kind, what).wait_for(timeout=TIMEOUT_MS)
        out[name] = time.perf_counter() - t0
    return out


WEIGHT_JS = """() => {
    const entries = [...performance.getEntriesByType('navigation'),
                     ...performance.getEntriesByType('resource')];
    return [entries.reduce((sum, e) => sum + (e.transferSize || e.encodedBodySize || 0), 0),
            entries.length];
}"""


async def session(url: str, repeats: int) -> dict:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                          args=["--headless=new", "--no-sandbox",
                                                "--disable-gpu", "--no-first-run"])
        try:
            page, ready = await open_page(browser, url)
            weight, requests = await page.evaluate(WEIGHT_JS)
            fresh = [await open_rossi(page) for _ in range(repeats)]
            fresh_fits = [await fit_to_results(page, f"fresh {k}") for k in range(repeats)]
            await tab(page, "Data")
            tabs = await openings(page)
            long_open = [await open_rossi(page) for _ in range(repeats)]
            long_fits = [await fit_to_results(page, f"long {k}") for k in range(repeats)]
            await tab(page, "Data")
            again = await openings(page)
            defaults = await default_runs(page)
        finally:
            await browser.close()
    return {"first_page_ready_s": ready, "first_page_bytes": weight,
            "first_page_requests": requests, "open_rossi_fresh_s": fresh,
            "fit_to_results_fresh_s": [f[0] for f in fresh_fits],
            "fit_worker_fresh_s": [f[1] for f in fresh_fits],
            "tab_first_open_s": tabs, "tab_open_again_s": again, "open_rossi_long_s": long_open,
            "fit_to_results_long_s": [f[0] for f in long_fits],
            "fit_worker_long_s": [f[1] for f in long_fits], "default_runs": defaults}


def report(r: dict, machine: dict, load: tuple) -> str:
    best = min
    lines = [
        "# The served app, click to drawn (python -m bench app)",
        "",
        f"CPU: {machine.get('cpu')}, {machine.get('logical_cores')} cores; load average before "
        f"{load[0]}, after {load[1]} (a shared machine: other engineers' jobs ran meanwhile).",
        "",
        "| step | fresh session (s) | after every tab was visited (s) | ratio |",
        "|---|---|---|---|",
        f"| open rossi (Data tab) | {best(r['open_rossi_fresh_s']):.2f} | "
        f"{best(r['open_rossi_long_s']):.2f} | "
        f"{best(r['open_rossi_long_s']) / best(r['open_rossi_fresh_s']):.2f} |",
        f"| rossi Fit, click to drawn Results | {best(r['fit_to_results_fresh_s']):.2f} | "
        f"{best(r['fit_to_results_long_s']):.2f} | "
        f"{best(r['fit_to_results_long_s']) / best(r['fit_to_results_fresh_s']):.2f} |",
        f"| of which the worker (cohort + engine.fit) | {best(r['fit_worker_fresh_s']):.2f} | "
        f"{best(r['fit_worker_long_s']):.2f} | |",
        "",
        f"First page ready: {r['first_page_ready_s']:.2f} s; it weighs "
        f"{r['first_page_bytes'] / 1e6:.2f} MB over {r['first_page_requests']} requests (the "
        "browser's transfer sizes, the websocket's document not included).",
        "",
        "| tab | first opening (s) | opened again, after the long session's fits (s) |",
        "|---|---|---|",
        *[f"| {name} | {s:.2f} | {r['tab_open_again_s'][name]:.2f} |"
          for name, s in r["tab_first_open_s"].items()],
        "",
        "Best of the repeats; every step's clock starts at the click and stops when the page "
        "shows the step's own result.",
        "",
        "| each page's default run (once) | click to done (s) | worker (s) | overhead (s) |",
        "|---|---|---|---|",
        *[f"| {name} | {d['click_to_done_s']:.2f} | {d['worker_s']:.2f} | "
          f"{d['overhead_s']:.2f} |" for name, d in r["default_runs"].items()],
        "",
        "The clock stops when the job's \"done in ... s\" toast shows (it comes in one patch "
        "with the page's results); the worker's seconds are the toast's.",
    ]
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench app", description=__doc__)
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    before = tuple(round(v, 2) for v in os.getloadavg())
    with Server() as server:
        result = asyncio.run(session(server.url, args.repeats))
    after = tuple(round(v, 2) for v in os.getloadavg())
    machine = machine_info()
    record = {"machine": machine, "load_before": before, "load_after": after, **result}
    return save(record, report(result, machine, (before, after)), args.out, "app_browser")
