"""A griffe extension: the docstrings' numpydoc roles (``:func:`x```) become cross-references.

The docstrings keep Sphinx's roles, which ``help()`` and numpydoc read; mkdocstrings renders
Markdown, where a role is raw text. This rewrites each role, when griffe loads the package, into an
mkdocs-autorefs link ``[text][identifier]``: a target inside prdist is resolved from the
docstring's scope (``:func:`silverman_bandwidth``` in :mod:`prdist.bootstrap.asymptotics`), and a public name
``prdist.X`` to the module that defines it (``prdist._LAZY``), so ``mkdocs build --strict`` fails on
any reference whose target no page documents. Targets outside prdist (numpy, distributed) become
code: no inventory of theirs is loaded (the build reads no network); so do private names.
"""

from __future__ import annotations

import re

import griffe

import prdist

#: ``:role:`target``` or ``:role:`~target``` (``~``: show the last component only).
ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj):`(~?)([\w.]+)(?:\(\))?`")


def target_path(name: str, scope: griffe.Object) -> str | None:
    """The documented path of ``name`` as written in ``scope``'s docstring.

    None for a target outside prdist, or a private one (``_draw_false_positives``): no page
    documents those.
    """
    if any(part.startswith("_") for part in name.split(".")):
        return None
    head, _, rest = name.partition(".")
    if head == "prdist":
        first, _, tail = rest.partition(".")
        module = prdist._LAZY.get(first, "")
        if module:  # a public name of prdist: documented where it is defined
            return ".".join(filter(None, ("prdist", module, first, tail)))
        return name
    try:
        resolved = scope.resolve(head)
    except (griffe.NameResolutionError, ValueError):
        return None
    return ".".join(filter(None, (resolved, rest))) if resolved.startswith("prdist") else None


def rewritten(text: str, scope: griffe.Object) -> str:
    def link(match: re.Match) -> str:
        short, name = match.groups()
        shown = name.rsplit(".", 1)[-1] if short else name
        path = target_path(name, scope)
        return f"`{shown}`" if path is None else f"[`{shown}`][{path}]"

    return ROLE.sub(link, text)


class RstRoles(griffe.Extension):
    """Rewrite the roles of every docstring of a loaded package."""

    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        self._rewrite(pkg)

    def _rewrite(self, obj: griffe.Object) -> None:
        if obj.docstring is not None:
            scope = obj if obj.is_module or obj.is_class else obj.parent
            obj.docstring.value = rewritten(obj.docstring.value, scope)
        for member in obj.members.values():
            if not member.is_alias:
                self._rewrite(member)
