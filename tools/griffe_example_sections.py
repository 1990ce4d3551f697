"""A griffe extension for the documentation site: our docstrings title their runnable examples
``Example:`` (singular); griffe's Google parser knows ``Examples:`` only, and would render the
doctest lines as prose. This reads the singular as the plural before griffe parses them."""

from __future__ import annotations

import re

import griffe

_EXAMPLE = re.compile(r"^(\s*)Example:\s*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _EXAMPLE.sub(r"\1Examples:", obj.docstring.value)
