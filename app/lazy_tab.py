"""Tabs whose pages are built the first time they are opened, then kept.

A served session used to construct and render all eleven pages up front (about 1 s of widget
construction and 4 s of Bokeh model building per session, GIL bound), so six users arriving
together waited a minute for the first page. Here only the open page is built; the others are
empty slots until the user (or the app, say after a fit) opens them. The stores behind the pages
do not depend on their views, so an unopened page loses nothing: its view reads the store when
it is built.

The tabs are ``dynamic``: only the open page's Bokeh models are in the browser's document. With
every visited page kept there, each change anywhere made Bokeh re-measure every hidden view
(``LayoutDOMView.update_bbox`` calls ``getComputedStyle`` on each element that has no offset
parent), so opening rossi after every tab had been visited took 12.9 s of browser time against
0.5 s in a fresh session (a CDP profile: 4.6 s in ``getPropertyValue``, 1.1 s in
``_update_bbox``). A page's Python view is kept; showing it again sends its models anew.
"""

from __future__ import annotations

from collections.abc import Callable

import panel as pn


class LazyTabs:
    """A ``pn.Tabs`` (``.tabs``) of named pages, each built by its function on first opening."""

    def __init__(self, pages: dict[str, Callable[[], object]], **tabs_params):
        self.builders = dict(pages)
        self.slots = {name: pn.Column(sizing_mode="stretch_width") for name in self.builders}
        self.tabs = pn.Tabs(*self.slots.items(), dynamic=True, **tabs_params)
        # registered before any other watcher on ``active``: a page exists before they run
        self.tabs.param.watch(self._open, ["active"])
        self._open()

    def _open(self, *events) -> None:
        name = list(self.slots)[self.tabs.active]
        slot = self.slots[name]
        if not slot.objects:
            slot.objects = [self.builders[name]()]

    def built(self, name: str) -> bool:
        """Whether page ``name`` has been opened (and so built) in this session."""
        return bool(self.slots[name].objects)
