"""Check the patch-point table (lever_plugins/patch_points.py) against an installed vLLM.

Each row is checked one of two ways, and the result says which:
- `import`: the module is imported and the class inspected (`inspect.signature`, `hasattr`);
  an instance attribute, which a class does not carry until an instance sets it, is then
  read from the imported class's own source;
- `source`: the module's file is parsed (`ast`) without running it, where importing it
  fails (a GPU wheel's module on a machine without a GPU) or where asked (`how="source"`).
`text` rows are always read from the source. Nothing here runs at plugin load: the
checks are for tests and `make compat` (experiments/vllm_compat.py).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lever_plugins.patch_points import POINTS, PatchPoint

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Result:
    """One row's check: ok, how it was made, what was found, and what is wrong (None when ok)."""

    key: str
    ok: bool
    how: str
    found: str
    problem: str | None = None
    # Why the import was not used (the first line of its error), where it fell back to source.
    import_error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "ok": self.ok,
            "how": self.how,
            "found": self.found,
            "problem": self.problem,
            "import_error": self.import_error,
        }


# ---------------------------------------------------------------- source (ast) side


def package_dir(package: str) -> Path | None:
    """Where the installed top-level `package` lives, found without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def module_files(module: str) -> list[Path]:
    """The file of `module`, or every .py file under it if it is a package; found without importing it."""
    top, *rest = module.split(".")
    if (root := package_dir(top)) is None:
        return []
    base = root.joinpath(*rest)
    if base.is_dir():
        return sorted(base.rglob("*.py"))
    return [path] if (path := base.with_suffix(".py")).is_file() else []


def parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def find_class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    return next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name), None)


def find_method(cls: ast.ClassDef, name: str) -> FunctionNode | None:
    return next((n for n in cls.body if isinstance(n, FunctionNode) and n.name == name), None)


def param_names(fn: FunctionNode) -> tuple[str, ...]:
    args = fn.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    names += [f"*{args.vararg.arg}"] if args.vararg else []
    names += [a.arg for a in args.kwonlyargs]
    return (*names, *([f"**{args.kwarg.arg}"] if args.kwarg else []))


def _targets(node: ast.AST) -> Iterable[ast.expr]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from ast.walk(target)
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        yield node.target


def attribute_source(cls: ast.ClassDef, name: str) -> str | None:
    """Where `cls` gives its instances `name`: a property or method, a class field, a `self.name =`."""
    for node in cls.body:
        if isinstance(node, FunctionNode) and node.name == name:
            decorators = {ast.unparse(d).rpartition(".")[2] for d in node.decorator_list}
            return "property" if decorators & {"property", "cached_property"} else "method"
        if any(isinstance(t, ast.Name) and t.id == name for t in _targets(node)):
            return "class field"
    for method in (n for n in cls.body if isinstance(n, FunctionNode)):
        for node in ast.walk(method):
            for target in _targets(node):
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr == name
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "self"
                ):
                    return f"self.{name} set in {method.name}()"
    return None


def class_fields(cls: ast.ClassDef) -> set[str]:
    return {t.id for node in cls.body for t in _targets(node) if isinstance(t, ast.Name)}


def method_shape(point: PatchPoint, params: tuple[str, ...], returns: str) -> tuple[str, str | None]:
    """What was found, and what is wrong with it for `point` (None: it fits)."""
    found = f"({', '.join(params)})" + (f" -> {returns}" if returns else "")
    if point.params and params not in point.params:
        return found, f"signature {params} is none of {list(point.params)}"
    if missing := [name for name in point.accepts if name not in params]:
        return found, f"takes no {', '.join(missing)}"
    if point.returns and not returns.replace('"', "").replace("'", "").startswith(point.returns):
        return found, f"returns {returns or 'unannotated'}, not {point.returns}..."
    return found, None


def where_text(module: str, needles: Iterable[str]) -> dict[str, str | None]:
    """Each needle -> the first file of `module` (a package: every file under it) holding it, or None."""
    files = module_files(module)
    top = package_dir(module.split(".")[0])
    if not files or top is None:
        return dict.fromkeys(needles)
    texts = {path: path.read_text(encoding="utf-8", errors="replace") for path in files}
    return {
        needle: next(
            (str(path.relative_to(top.parent)) for path, text in texts.items() if needle in text), None
        )
        for needle in needles
    }


def check_text(point: PatchPoint) -> Result:
    where = where_text(point.module, point.accepts)
    if not module_files(point.module):
        return Result(point.key, False, "source", "", f"no source for {point.module}")
    missing = [needle for needle, path in where.items() if path is None]
    found = "; ".join(f"{needle} in {path}" for needle, path in where.items() if path)
    return Result(point.key, not missing, "source", found, f"no {', '.join(missing)}" if missing else None)


def check_source(point: PatchPoint, import_error: str | None = None) -> Result:
    """The row read from the module's file, without importing it."""
    if point.kind == "text":
        return check_text(point)
    files = module_files(point.module)
    fail = lambda problem: Result(point.key, False, "source", "", problem, import_error)  # noqa: E731
    if len(files) != 1:
        return fail(f"no module file for {point.module}")
    cls = find_class(parse(files[0]), point.class_name)
    if cls is None:
        return fail(f"no class {point.class_name} in {point.module}")
    found, problem = f"class {point.class_name}", None
    if point.kind == "method":
        fn = find_method(cls, point.member or "")
        if fn is None:
            return fail(f"no method {point.qualname}")
        found, problem = method_shape(point, param_names(fn), ast.unparse(fn.returns) if fn.returns else "")
    elif point.kind == "attribute":
        where = attribute_source(cls, point.member or "")
        found, problem = where or "", None if where else f"nothing sets {point.qualname}"
    elif point.kind == "members":
        missing = [m for m in point.accepts if m not in class_fields(cls)]
        found = ", ".join(m for m in point.accepts if m not in missing)
        problem = f"no member {', '.join(missing)}" if missing else None
    return Result(point.key, problem is None, "source", found, problem, import_error)


# ---------------------------------------------------------------- import side


def _class_source_attribute(cls: type, name: str) -> str | None:
    """`name` set on instances in the source of `cls` or a base of it (what an import cannot show)."""
    for klass in cls.__mro__[:-1]:
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):  # compiled or built-in: no source to read
            continue
        node = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
        if node is not None and (where := attribute_source(node, name)):
            return where if klass is cls else f"{where} of {klass.__name__}"
    return None


def _annotation(value: object) -> str:
    """A return annotation as source would spell it: `tuple[CUDAGraphMode, ...]`, modules dropped."""
    if value is inspect.Signature.empty:
        return ""
    text = value if isinstance(value, str) else inspect.formatannotation(value)
    return re.sub(r"\b(?:\w+\.)+(?=\w)", "", text)


def check_imported(point: PatchPoint, cls: type) -> Result:
    """The row checked on the imported class."""
    how = "import"
    member = point.member or ""
    problem: str | None = None
    found = f"class {cls.__name__}"
    if point.kind == "method":
        fn = getattr(cls, member, None)
        if fn is None:
            return Result(point.key, False, how, "", f"no method {point.qualname}")
        signature = inspect.signature(fn)
        returns = _annotation(signature.return_annotation)
        found, problem = method_shape(point, tuple(signature.parameters), returns)
    elif point.kind == "attribute":
        if member in getattr(cls, "__dataclass_fields__", {}) or hasattr(cls, member):
            found = "class attribute or property"
        else:
            how = "import+source"
            where = _class_source_attribute(cls, member)
            found, problem = where or "", None if where else f"nothing sets {point.qualname}"
    elif point.kind == "members":
        missing = [m for m in point.accepts if not hasattr(cls, m)]
        found = ", ".join(m for m in point.accepts if m not in missing)
        problem = f"no member {', '.join(missing)}" if missing else None
    return Result(point.key, problem is None, how, found, problem)


def check_point(point: PatchPoint, how: str = "import") -> Result:
    """One row: imported where the module imports (how="import"), else from its source."""
    if point.kind == "text" or how == "source":
        return check_source(point)
    try:
        module = importlib.import_module(point.module)
    except Exception as exc:  # any import failure (no GPU, other torch) falls back to source
        return check_source(point, import_error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
    cls = getattr(module, point.class_name, None)
    if not isinstance(cls, type):
        return Result(point.key, False, "import", "", f"no class {point.class_name} in {point.module}")
    return check_imported(point, cls)


def check_all(points: Iterable[PatchPoint] = POINTS, how: str = "import") -> list[Result]:
    return [check_point(point, how) for point in points]


def failures(results: Iterable[Result]) -> list[str]:
    """'key: problem' for every row that does not hold."""
    return [f"{r.key}: {r.problem}" for r in results if not r.ok]
