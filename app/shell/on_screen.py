"""Redraws that wait while their page is hidden.

A session that had opened every tab redrew every page on each change of the data or the fits
(issue 29: opening rossi took 78 s after all tabs had been visited, 1.6 s in a fresh session).
A page's redraws go through ``OnScreen.run``: they run at once while the page is shown, and are
remembered (once each) while it is hidden, to run when it is shown again. Drawing on showing
also puts a plot into a visible container: a Bokeh grid laid out in a hidden tab stayed blank.
"""

from __future__ import annotations

from collections.abc import Callable


class OnScreen:
    """Whether a page is shown, and the redraws it owes since it was hidden."""

    def __init__(self, shown: bool = True):
        self.shown = shown
        self.waiting: dict[Callable, None] = {}  # ordered, each redraw once

    def run(self, draw: Callable[[], None]) -> None:
        """``draw()`` now if the page is shown, else when it is next shown."""
        if self.shown:
            draw()
        else:
            self.waiting[draw] = None

    def show(self) -> None:
        self.shown = True
        self.catch_up()

    def hide(self) -> None:
        self.shown = False

    def catch_up(self) -> None:
        """Run the redraws owed (the page's numbers are wanted, say for an export)."""
        waiting, self.waiting = self.waiting, {}
        for draw in waiting:
            draw()
