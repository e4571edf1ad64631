"""Resolve references into other projects' documentation without a network.

Intersphinx downloads each project's inventory when the site is built; the CI machine reaches
only the package registries, so the references into scikit-learn, NumPy, SciPy, pandas, Dask,
PyTorch, matplotlib and Python would stay dead text. Each of those projects gives every public
object a page whose address follows from the object's full name; this extension builds that
address for a reference Sphinx could not resolve and whose name starts with one of the projects'
top-level modules. The object is imported first, so that a misspelt name stays unresolved (and
fails the build, which treats warnings as errors) instead of becoming a dead link.
"""

from __future__ import annotations

import builtins
import importlib
import inspect
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

# The top-level module, and the page of an object given its full name (a module's page for
# a module). A method or attribute links to its owner's page, with its full name as the anchor.
PAGES = {
    "sklearn": ("https://scikit-learn.org/stable/modules/generated/{name}.html",
                "https://scikit-learn.org/stable/api/{name}.html"),
    "numpy": ("https://numpy.org/doc/stable/reference/generated/{name}.html",
              "https://numpy.org/doc/stable/reference/routines.html"),
    "scipy": ("https://docs.scipy.org/doc/scipy/reference/generated/{name}.html",
              "https://docs.scipy.org/doc/scipy/reference/{short}.html"),
    "pandas": ("https://pandas.pydata.org/docs/reference/api/{name}.html",
               "https://pandas.pydata.org/docs/reference/index.html"),
    "dask": ("https://docs.dask.org/en/stable/generated/{name}.html",
             "https://docs.dask.org/en/stable/api.html"),
    "distributed": ("https://distributed.dask.org/en/stable/api.html#{name}",
                    "https://distributed.dask.org/en/stable/api.html"),
    "torch": ("https://docs.pytorch.org/docs/stable/generated/{name}.html",
              "https://docs.pytorch.org/docs/stable/{short}.html"),
    "matplotlib": ("https://matplotlib.org/stable/api/_as_gen/{name}.html",
                   "https://matplotlib.org/stable/api/{short}_api.html"),
}
PYTHON = "https://docs.python.org/3/library/{page}.html#{name}"


def _page(name: str) -> tuple[str, bool] | None:
    """The name of the page that documents ``name`` -- the outermost class or function the
    dotted name passes through after its module, or else the module (for a module, or a
    constant of one) -- and whether that page is a module's; None when the name does not
    import."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        page = None
        for index in range(cut, len(parts)):
            if not hasattr(obj, parts[index]):
                return None
            obj = getattr(obj, parts[index])
            if page is None and callable(obj):
                page = ".".join(parts[: index + 1])
        return (page, False) if page else (".".join(parts[:cut]), True)
    return None


def external_url(name: str) -> str | None:
    """The documentation address of ``name`` in another project, or None."""
    top = name.split(".")[0]
    if top in PAGES:
        found = _page(name)
        if found is None:
            return None
        page, is_module = found
        object_page, module_page = PAGES[top]
        if is_module:
            if top == "sklearn":  # one page per subpackage: sklearn.metrics.pairwise is in it
                page = ".".join(page.split(".")[:2])
            url = module_page.format(name=page, short=page.split(".", 1)[-1].replace(".", "_"))
            return url if page == name else f"{url}#{name}"
        url = object_page.format(name=page)
        return url if page == name or "#" in url else f"{url}#{name}"
    if "." not in name and hasattr(builtins, name):
        kind = getattr(builtins, name)
        if inspect.isclass(kind) and issubclass(kind, BaseException):
            return PYTHON.format(page="exceptions", name=name)
        return PYTHON.format(page="functions", name=name)
    module = name.rsplit(".", 1)[0]
    if module in ("pathlib", "os", "typing", "collections.abc", "warnings", "logging") and \
            _page(name) is not None:
        return PYTHON.format(page=module, name=name)
    return None


def resolve(app: Sphinx, env: BuildEnvironment, node: Any, contnode: Any) -> Any:
    """Sphinx's ``missing-reference`` handler: a link for another project's object."""
    if node.get("refdomain") != "py":
        return None
    url = external_url(node["reftarget"])
    if url is None:
        return None
    reference = nodes.reference("", "", internal=False, refuri=url, reftitle=node["reftarget"])
    reference += contnode
    return reference


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("missing-reference", resolve)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
