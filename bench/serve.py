"""Many users on one served app: page-ready time for users arriving together, and concurrent
rossi fits (all correct, server memory bounded).

python -m bench serve [--arrivals 6] [--fits 10] [--out bench/results]

Starts ``panel serve app/main.py`` on a free local port, drives headless Chromium (Playwright,
/usr/bin/chromium) with one browser context per user, and samples the server's resident memory
every 0.2 s. (1) ``--arrivals`` users open the page at once: the seconds until each sees "Ready
to fit." (2) ``--fits`` other users open it, then all press Fit together on rossi: the seconds
until each sees its fit converged, and every page's coefficients read back and compared with a
fit of the same data in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

import psutil
from playwright.async_api import TimeoutError as PlaywrightTimeout

from bench.report import machine_info, save

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
TIMEOUT_MS = 600_000


class Server:
    """``panel serve app/main.py`` in a subprocess, with a thread sampling its memory."""

    def __init__(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/main"
        self.samples: list[float] = []
        self._stop = threading.Event()

    def __enter__(self):
        state = tempfile.mkdtemp(prefix="survscan-bench-sessions-")
        env = {**os.environ, "PYTHONPATH": str(ROOT), "SURVSCAN_STATE_DIR": state,
               "OPENBLAS_NUM_THREADS": "1"}
        self.log = tempfile.NamedTemporaryFile(prefix="survscan-serve-", suffix=".log",
                                               delete=False)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "panel", "serve", "app/main.py", "--port", str(self.port),
             "--address", "127.0.0.1", f"--allow-websocket-origin=127.0.0.1:{self.port}"],
            cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(self.url, timeout=30) as response:
                    if response.status == 200:
                        break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"panel serve did not start; see {self.log.name}")
                time.sleep(0.5)
        self.process = psutil.Process(self.proc.pid)
        threading.Thread(target=self._sample, daemon=True).start()
        return self

    def _sample(self):
        while not self._stop.is_set():
            try:
                self.samples.append(self.process.memory_info().rss / 1e6)
            except psutil.Error:
                return
            self._stop.wait(0.2)

    def rss_mb(self) -> float:
        return self.process.memory_info().rss / 1e6

    def __exit__(self, *exc):
        self._stop.set()
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


async def open_page(browser, url):
    """A new user's page; returns (page, seconds until "Ready to fit." shows)."""
    context = await browser.new_context(viewport={"width": 1400, "height": 1200})
    context.set_default_timeout(TIMEOUT_MS)
    page = await context.new_page()
    t0 = time.perf_counter()
    try:
        await page.goto(url, timeout=TIMEOUT_MS)
        await page.get_by_text("Ready to fit.").wait_for(timeout=TIMEOUT_MS)
    except PlaywrightTimeout:
        return page, None  # not ready within TIMEOUT_MS: reported as such
    return page, time.perf_counter() - t0


async def tab(page, name):
    await page.locator(".bk-tab", has_text=re.compile(rf"^\s*{name}\s*$")).first.click()


async def fit_and_read(page, name):
    """Press Fit under ``name`` (the Fit tab open), wait for it; the Results table's coef
    column as {covariate: text}."""
    try:
        await page.get_by_text(re.compile(rf"{re.escape(name)}: converged after \d+ iterations")
                               ).wait_for(timeout=TIMEOUT_MS)
    except PlaywrightTimeout:
        return None
    await tab(page, "Results")
    rows = page.locator(".hr-table .tabulator-row")
    await rows.first.wait_for()
    out = {}
    for k in range(await rows.count()):
        row = rows.nth(k)
        covariate = await row.locator('[tabulator-field="covariate"]').inner_text()
        out[covariate.strip()] = (await row.locator('[tabulator-field="coef"]').inner_text()).strip()
    return out


async def press_fit(page, name):
    await tab(page, "Fit")
    box = page.locator(".bk-input-group", has=page.locator(
        "label", has_text=re.compile("^Fit name"))).first.locator("input")
    await box.fill(name)
    await box.press("Enter")
    await page.get_by_role("button", name="Fit", exact=True).click()


async def measure(url, arrivals, fits):
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                          args=["--headless=new", "--no-sandbox",
                                                "--disable-gpu"])
        try:
            opened = await asyncio.gather(*(open_page(browser, url) for _ in range(arrivals)))
            ready = [s for _, s in opened]
            print(f"page ready, {arrivals} arriving together (s): {ready}", flush=True)
            for page, _ in opened:
                await page.context.close()
            users = await asyncio.gather(*(open_page(browser, url) for _ in range(fits)))
            print(f"page ready, {fits} more arriving together (s): {[s for _, s in users]}",
                  flush=True)
            pages = [page for page, s in users if s is not None]
            t0 = time.perf_counter()
            names = [f"user {k + 1}" for k in range(len(pages))]
            await asyncio.gather(*(press_fit(pg, n) for pg, n in zip(pages, names)))

            async def finish(pg, name):
                table = await fit_and_read(pg, name)
                return table, None if table is None else time.perf_counter() - t0

            done = await asyncio.gather(*(finish(pg, n) for pg, n in zip(pages, names)))
            print(f"fit done (s): {[s for _, s in done]}", flush=True)
        finally:
            await browser.close()
    return ready, [s for _, s in users], done


def lone_fit() -> dict:
    """rossi fitted as a fresh session would (the app's store, in this process)."""
    sys.path.insert(0, str(ROOT))
    from app.store import Store

    s = Store()
    s.load_sample("rossi")
    summary = s.fit_job("lone").run().summary
    return {name: f"{value:.6f}" for name, value in summary["coef"].items()}


def run(arrivals=6, fits=10, out="bench/results"):
    expected = lone_fit()
    with Server() as server:
        idle_mb = server.rss_mb()
        ready, opened, done = asyncio.run(measure(server.url, arrivals, fits))
        peak_mb = max(server.samples)
        after_mb = server.rss_mb()
    equal = [table == expected for table, _ in done]
    done_s = [s for _, s in done]
    record = {
        "experiment": "serve", "arrivals": arrivals, "fits": fits, "timeout_s": TIMEOUT_MS / 1e3,
        "page_ready_s": ready, "fit_users_page_ready_s": opened, "fit_done_s": done_s,
        "fits_equal_lone_fit": equal,
        "server_rss_mb": {"idle": idle_mb, "peak": peak_mb, "after": after_mb},
        "machine": machine_info(),
    }

    def span(values):
        got = [v for v in values if v is not None]
        late = len(values) - len(got)
        text = f"{min(got):.1f} | {max(got):.1f}" if got else "- | -"
        return text + (f" ({late} not within {TIMEOUT_MS / 1e3:.0f} s)" if late else "")

    lines = [f"# Served app: {arrivals} users arriving together, {fits} concurrent rossi fits",
             "", "| measure | min | max |", "|---|---:|---:|",
             f"| page ready, {arrivals} arriving together (s) | {span(ready)} |",
             f"| page ready, {fits} more arriving together (s) | {span(opened)} |",
             f"| fit done after all pressed Fit, {len(done)} users (s) | {span(done_s)} |", "",
             f"Every page's coefficients equal a lone fit: {all(equal)} "
             f"({sum(equal)} of {len(done)}).",
             f"Server memory (RSS): {idle_mb:.0f} MB idle, {peak_mb:.0f} MB at peak, "
             f"{after_mb:.0f} MB after.",
             f"Machine: {record['machine'].get('cpu', '')}, {os.cpu_count()} cores shared with "
             f"other jobs, load average {record['machine']['load_average_1_5_15min']}; the "
             "browser runs on the same cores as the server."]
    text = "\n".join(lines)
    return save(record, text, out, f"serve_a{arrivals}_f{fits}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench serve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arrivals", type=int, default=6)
    parser.add_argument("--fits", type=int, default=10)
    parser.add_argument("--out", default="bench/results")
    args = parser.parse_args(argv)
    return run(args.arrivals, args.fits, args.out)
