"""The cell texts of one HTML table of a report page, found by its ``id`` (shared by the report and
CLI tests; it sits beside the suite-wide conftest, whose folder is on the import path).
"""

from __future__ import annotations

from html.parser import HTMLParser


class _Table(HTMLParser):
    def __init__(self, table_id: str):
        super().__init__()
        self.id, self.rows, self._in, self._cell = table_id, [], False, None

    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("id", self.id) in attrs:
            self._in = True
        elif self._in and tag == "tr":
            self.rows.append([])
        elif self._in and tag == "td":
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "table":
            self._in = False
        elif tag == "td" and self._cell is not None:
            self.rows[-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def table_rows(page: str, table_id: str) -> list[list[str]]:
    """Rows of the table with ``id`` ``table_id`` (header rows, which have no <td>, left out)."""
    parser = _Table(table_id)
    parser.feed(page)
    return [r for r in parser.rows if r]
