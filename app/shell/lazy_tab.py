"""Tabs whose pages are built the first time they are opened, then kept.

A served session used to construct and render all eleven pages up front (about 1 s of widget
construction and 4 s of Bokeh model building per session, GIL bound), so six users arriving
together waited a minute for the first page. Here only the open page is built; the others are
empty slots until the user (or the app, say after a fit) opens them. The stores behind the pages
do not depend on their views, so an unopened page loses nothing: its view reads the store when
it is built.

Only the open page is in the browser: leaving a page empties its slot (its Bokeh models leave
the document), opening it puts the kept page back. With every visited page kept in the browser,
each change anywhere made Bokeh re-measure every hidden view (``LayoutDOMView.update_bbox``
calls ``getComputedStyle`` on each element that has no offset parent), so opening rossi after
every tab had been visited took 12.9 s of browser time against 0.5 s in a fresh session (a CDP
profile: 4.6 s in ``getPropertyValue``, 1.1 s in ``_update_bbox``).

This is Panel's ``Tabs(dynamic=True)`` done in an order Panel's cannot give: the page is told it
is shown (``shown(name)``: it draws what changed while hidden) *before* its models are made, so
they reach the browser as drawn. Panel's dynamic tabs made the models first, and the redraws
then arrived as patches to tables that Tabulator had not finished building ("Calling the
setColumns function before the table is initialized", then "Cannot read properties of null":
Describe's Table 1 stayed empty for good, once in a few browser-suite runs).
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn


class LazyTabs:
    """A ``pn.Tabs`` (``.tabs``) of named pages, each built by its function on first opening;
    ``hidden(name)`` is called when a page is left and ``shown(name)`` before it is shown."""

    def __init__(self, pages: dict[str, Callable[[], object]],
                 shown: Callable[[str], None] = lambda name: None,
                 hidden: Callable[[str], None] = lambda name: None, **tabs_params):
        self.builders = dict(pages)
        self.shown, self.hidden = shown, hidden
        self.pages: dict[str, object] = {}
        self.slots = {name: pn.Column(sizing_mode="stretch_width") for name in self.builders}
        self.tabs = pn.Tabs(*self.slots.items(), **tabs_params)
        # registered before any other watcher on ``active``: a page exists before they run
        self.tabs.param.watch(self._open, ["active"])
        self._open()

    def _open(self, *events) -> None:
        name = list(self.slots)[self.tabs.active]
        for other, slot in self.slots.items():
            if other != name and slot.objects:
                slot.objects = []
                self.hidden(other)
        if name not in self.pages:  # as a layout holds it (a Viewer's layout, made once)
            self.pages[name] = pn.panel(self.builders[name]())
        self.shown(name)
        if self.slots[name].objects != [self.pages[name]]:
            self.slots[name].objects = [self.pages[name]]

    def built(self, name: str) -> bool:
        """Whether page ``name`` has been opened (and so built) in this session."""
        return name in self.pages
