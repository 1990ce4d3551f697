"""The descriptions of settings fields, as ``stagerl run <name> --help`` lists them: a field's
own ``# ...`` comment, or its entry under ``Attributes:`` in a class's docstring."""

from __future__ import annotations

import ast
import inspect
import io
import re
import textwrap
import tokenize

__all__ = ["field_descriptions"]


def field_descriptions(config_type: type) -> dict[str, str]:
    """The description of each field of ``config_type``, looked up from the class through its
    bases (the algorithm's config): a subclass's word wins over its base's."""
    found: dict[str, str] = {}
    for cls in reversed(config_type.__mro__):
        found.update(_docstring_attributes(cls))
        found.update(_field_comments(cls))
    return {name: text.replace("``", "") for name, text in found.items()}


def _docstring_attributes(cls: type) -> dict[str, str]:
    """The entries of the ``Attributes:`` section of ``cls``'s own docstring (Google style:
    ``name: text`` or ``a, b: text``, continued on more indented lines)."""
    doc = inspect.cleandoc(cls.__dict__.get("__doc__") or "")
    found: dict[str, str] = {}
    lines = iter(doc.splitlines())
    for line in lines:
        if line.strip() == "Attributes:":
            break
    else:
        return found
    names: list[str] = []
    indent = None
    for line in lines:
        if not line.strip():
            if names:
                continue
            break
        width = len(line) - len(line.lstrip())
        if indent is None:
            indent = width
        if width < indent:
            break
        entry = re.match(r"\s*([\w, ]+):\s*(.*)", line) if width == indent else None
        if entry:
            names = [n.strip() for n in entry.group(1).split(",")]
            for name in names:
                found[name] = entry.group(2).strip()
        elif names:
            for name in names:
                found[name] = f"{found[name]} {line.strip()}"
    return found


def _field_comments(cls: type) -> dict[str, str]:
    """The ``# ...`` comments of the fields that ``cls`` itself declares."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    comments = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = (token.start[1], token.string.lstrip("#:").strip())
    found = {}
    (body,) = ast.parse(source).body
    for node in body.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            line = node.lineno
            if line in comments and comments[line][0] > node.col_offset:
                found[node.target.id] = comments[line][1]
                continue
            above = []
            while line - 1 in comments and comments[line - 1][0] == node.col_offset:
                line -= 1
                above.insert(0, comments[line][1])
            if above:
                found[node.target.id] = " ".join(above)
    return found
