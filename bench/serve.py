"""Many users on one served app: page-ready time for users arriving together, and concurrent
rossi fits (all correct, server memory bounded).

python -m bench serve [--arrivals 6] [--fits 10] [--out bench/results] [--no-niced]

Starts ``python -m app.serve app/main.py`` (``make run``'s server) on a free local port, drives headless Chromium (Playwright,
/usr/bin/chromium) with one browser context per user, and samples the server's resident memory
every 0.2 s. (1) ``--arrivals`` users open the page at once: the seconds until each sees "Ready
to fit." (2) ``--fits`` other users open it, then all press Fit together on rossi: the seconds
until each sees its fit converged, and every page's coefficients read back and compared with a
fit of the same data in this process. (3) Unless ``--no-niced``, phase (1) again in a fresh
browser whose threads are kept at ``nice 19``: the users' browsers would run on their own machines,
so this run lets the server's work go first on the shared cores. It is reported beside the plain
figure, never instead of it. (4) The server alone: ``--arrivals`` page requests at once with
no browser (each request builds that user's session; the document then goes over the websocket,
which this phase does not open): the seconds until each page's HTML is back. Every browser clock
starts at the page's ``goto``, the browser already running; the load average is recorded before
and after each phase.
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
from collections import Counter
from pathlib import Path

import psutil
from playwright.async_api import TimeoutError as PlaywrightTimeout

from bench.report import machine_info, save

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
TIMEOUT_MS = 600_000


class Server:
    """``python -m app.serve app/main.py`` in a subprocess, with a thread sampling its memory."""

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
            [sys.executable, "-m", "app.serve", "app/main.py", "--port", str(self.port),
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


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def browser_processes(server_pid: int) -> list[psutil.Process]:
    """The Chromium processes this benchmark started (and still running)."""
    found = []
    for q in psutil.Process().children(recursive=True):
        try:
            if q.pid != server_pid and "chrom" in q.name():
                found.append(q)
        except psutil.Error:
            pass  # a process that ended meanwhile
    return found


def browser_threads(server_pid: int) -> list[int]:
    """Thread ids of those processes (Linux keeps a niceness per thread)."""
    tids = []
    for q in browser_processes(server_pid):
        try:
            tids += [t.id for t in q.threads()]
        except psutil.Error:
            pass  # a process that ended meanwhile
    return tids


def browser_niceness(server_pid: int) -> dict[int, int]:
    """{niceness: number of Chromium threads at it}."""
    counts = Counter()
    for tid in browser_threads(server_pid):
        try:
            counts[os.getpriority(os.PRIO_PROCESS, tid)] += 1
        except OSError:
            pass
    return dict(sorted(counts.items()))


class Niced:
    """Keeps every Chromium thread at nice 19 (every 0.05 s, while in the ``with``): Chromium
    sets its own threads' priorities (0, or -8 for display work, as root), and a renderer
    forked later would not inherit a niceness set once."""

    def __init__(self, server_pid: int):
        self.server_pid = server_pid
        self._stop = threading.Event()

    def _renice(self):
        while not self._stop.is_set():
            for tid in browser_threads(self.server_pid):
                try:
                    os.setpriority(os.PRIO_PROCESS, tid, 19)
                except OSError:
                    pass  # a thread that ended meanwhile
            self._stop.wait(0.05)

    def __enter__(self):
        self._thread = threading.Thread(target=self._renice, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


async def launch(p):
    return await p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                   args=["--headless=new", "--no-sandbox", "--disable-gpu"])


async def arrive(browser, url, n, label, server_pid):
    """``n`` users open the page at once; seconds until each is ready, load before/after, and
    the niceness of the browser's processes while the pages are open."""
    load = {"before": load_average()}
    opened = await asyncio.gather(*(open_page(browser, url) for _ in range(n)))
    load["after"] = load_average()
    load["browser_niceness"] = browser_niceness(server_pid)
    ready = [s for _, s in opened]
    print(f"page ready, {n} arriving together{label} (s): {ready}; load {load}", flush=True)
    for page, _ in opened:
        await page.context.close()
    return ready, load


async def measure(url, arrivals, fits, server_pid, niced):
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await launch(p)
        try:
            ready, load = await arrive(browser, url, arrivals, "", server_pid)
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
        nice = None
        if niced:  # a fresh browser, every thread of it held at nice 19
            browser = await launch(p)
            try:
                with Niced(server_pid):
                    await asyncio.sleep(0.2)  # the browser's threads reniced before the clock
                    ready_niced, load_niced = await arrive(browser, url, arrivals,
                                                           " (browsers niced)", server_pid)
                nice = {"page_ready_s": ready_niced, "load_average": load_niced}
            finally:
                await browser.close()
    return {"ready": ready, "load": load, "opened": [s for _, s in users], "done": done,
            "niced": nice}


def requests_alone(url: str, n: int) -> tuple[list[float], dict]:
    """``n`` page requests at once, no browser: seconds until each page's HTML is back."""
    load = {"before": load_average()}
    seconds = [None] * n

    def get(k):
        t0 = time.perf_counter()
        with urllib.request.urlopen(url, timeout=TIMEOUT_MS / 1e3) as response:
            response.read()
        seconds[k] = time.perf_counter() - t0

    threads = [threading.Thread(target=get, args=(k,)) for k in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    load["after"] = load_average()
    print(f"page HTML, {n} requests together, no browser (s): {seconds}; load {load}", flush=True)
    return seconds, load


def lone_fit() -> dict:
    """rossi fitted as a fresh session would (the app's store, in this process)."""
    sys.path.insert(0, str(ROOT))
    from app.data.store import Store
    from app.survival.state import Workbench

    s = Store()
    s.load_sample("rossi")
    summary = Workbench(store=s).fit_job("lone").run().summary
    return {name: f"{value:.6f}" for name, value in summary["coef"].items()}


def run(arrivals=6, fits=10, out="bench/results", niced=True):
    expected = lone_fit()
    with Server() as server:
        idle_mb = server.rss_mb()
        got = asyncio.run(measure(server.url, arrivals, fits, server.proc.pid, niced))
        alone, alone_load = requests_alone(server.url, arrivals)
        peak_mb = max(server.samples)
        after_mb = server.rss_mb()
    ready, opened, done, nice = got["ready"], got["opened"], got["done"], got["niced"]
    equal = [table == expected for table, _ in done]
    done_s = [s for _, s in done]
    record = {
        "experiment": "serve", "arrivals": arrivals, "fits": fits, "timeout_s": TIMEOUT_MS / 1e3,
        "page_ready_s": ready, "page_ready_load_average": got["load"],
        "page_ready_browsers_niced": nice,
        "server_alone_page_html_s": alone, "server_alone_load_average": alone_load,
        "fit_users_page_ready_s": opened, "fit_done_s": done_s,
        "fits_equal_lone_fit": equal,
        "server_rss_mb": {"idle": idle_mb, "peak": peak_mb, "after": after_mb},
        "machine": machine_info(),
    }

    def span(values):
        got = [v for v in values if v is not None]
        late = len(values) - len(got)
        text = f"{min(got):.1f} | {max(got):.1f}" if got else "- | -"
        return text + (f" ({late} not within {TIMEOUT_MS / 1e3:.0f} s)" if late else "")

    def loads(load):
        return f"load {load['before'][0]:.1f} -> {load['after'][0]:.1f}"

    lines = [f"# Served app: {arrivals} users arriving together, {fits} concurrent rossi fits",
             "", "| measure | min | max | 1-min load average, before -> after |",
             "|---|---:|---:|---|",
             f"| page ready, {arrivals} arriving together (s) | {span(ready)} | "
             f"{loads(got['load'])} |"]
    if nice is not None:
        lines.append(f"| page ready, {arrivals} arriving together, browsers at nice 19 (s) | "
                     f"{span(nice['page_ready_s'])} | {loads(nice['load_average'])} |")
    lines += [f"| server alone: page HTML (session built), {arrivals} requests together, no "
              f"browser (s) | {span(alone)} | {loads(alone_load)} |",
              f"| page ready, {fits} more arriving together (s) | {span(opened)} | |",
              f"| fit done after all pressed Fit, {len(done)} users (s) | {span(done_s)} | |",
              "",
             f"Every page's coefficients equal a lone fit: {all(equal)} "
             f"({sum(equal)} of {len(done)}).",
             f"Chromium threads by niceness while the pages were open: plain run "
             f"{got['load']['browser_niceness']}"
             + (f", niced run {nice['load_average']['browser_niceness']}." if nice else "."),
             f"Server memory (RSS): {idle_mb:.0f} MB idle, {peak_mb:.0f} MB at peak, "
             f"{after_mb:.0f} MB after.",
             f"Machine: {record['machine'].get('cpu', '')}, {os.cpu_count()} cores shared with "
             f"other jobs, load average {record['machine']['load_average_1_5_15min']}; the "
             "browser runs on the same cores as the server (every user's page in one headless "
             "Chromium, a context each). In the niced run the server keeps the bench's "
             "priority and the browsers get what is left: users' browsers would run on their "
             "own machines."]
    text = "\n".join(lines)
    return save(record, text, out, f"serve_a{arrivals}_f{fits}")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m bench serve", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arrivals", type=int, default=6)
    parser.add_argument("--fits", type=int, default=10)
    parser.add_argument("--out", default="bench/results")
    parser.add_argument("--no-niced", dest="niced", action="store_false",
                        help="skip the arrivals run with the browsers at nice 19")
    args = parser.parse_args(argv)
    return run(args.arrivals, args.fits, args.out, args.niced)
