"""``import slateboard`` is the public face: ``__all__`` is exactly the curated set, every name
in it imports and documents itself, and every exception derives from ``SlateboardError``."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import slateboard
from slateboard import errors

EXPECTED = {
    # blueprints
    "Architect",
    "Blueprint",
    "Board",
    "ref",
    "CompiledBlueprint",
    "compile_blueprint",
    "load_blueprint",
    # the kernel
    "Decision",
    "Event",
    "InvariantContext",
    "Kernel",
    "Proposal",
    "Record",
    "ReplayReport",
    "Usage",
    "replay",
    # runs and stores
    "RunEvent",
    "RunResult",
    "Runner",
    "Store",
    "create_board",
    "open_store",
    "verify_board",
    # teams
    "Agent",
    "Team",
    "TeamResult",
    # errors
    "ArchitectError",
    "BlueprintError",
    "BoardNotFound",
    "Conflict",
    "KernelBusy",
    "ModelError",
    "RunError",
    "RunnerError",
    "SlateboardError",
    "StoreError",
    "UsageError",
    "__version__",
}


def test_all_is_exactly_the_curated_set() -> None:
    # A name added to or dropped from the public API is a decision: make it here too.
    assert set(slateboard.__all__) == EXPECTED
    assert len(slateboard.__all__) == len(set(slateboard.__all__)), "duplicates in __all__"


def test_every_public_name_imports_and_has_a_docstring() -> None:
    for name in slateboard.__all__:
        value = getattr(slateboard, name)
        if name == "__version__":
            assert isinstance(value, str) and value.count(".") == 2
            continue
        doc = inspect.getdoc(value)
        assert doc and len(doc.strip()) > 10, f"slateboard.{name} has no docstring"
        module = getattr(value, "__module__", "")
        assert module.startswith("slateboard."), f"slateboard.{name} comes from {module}"


def test_star_import_gives_the_same_names() -> None:
    namespace: dict[str, object] = {}
    exec("from slateboard import *", namespace)
    assert {k for k in namespace if k != "__builtins__"} == set(slateboard.__all__)


def test_the_public_names_are_the_ones_the_subpackages_define() -> None:
    # The facade re-exports, it does not wrap: the same objects as in their home modules.
    from slateboard.blueprint import compile_blueprint
    from slateboard.kernel import Kernel
    from slateboard.runtime import Runner
    from slateboard.stores import open_store

    assert slateboard.compile_blueprint is compile_blueprint
    assert slateboard.Kernel is Kernel
    assert slateboard.Runner is Runner
    assert slateboard.open_store is open_store


def _exception_classes() -> list[type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(slateboard.__path__, "slateboard."):
        try:
            module = importlib.import_module(info.name)
        except ImportError as exc:  # an optional extra that is not installed here
            print(f"not checked: {info.name} ({exc})")
            continue
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__.startswith("slateboard")
            ):
                found[f"{value.__module__}.{value.__qualname__}"] = value
    return list(found.values())


def test_every_exception_derives_from_slateboard_error() -> None:
    classes = _exception_classes()
    assert len(classes) >= 40, "the walk found too few exception classes to be looking everywhere"
    outside = sorted(f"{c.__module__}.{c.__qualname__}" for c in classes if not issubclass(c, errors.SlateboardError))
    assert outside == []


def test_the_three_branches() -> None:
    from slateboard.kernel.pointer import PointerError
    from slateboard.models import ModelAuthError, ModelConfigError, ModelTimeout
    from slateboard.stores import Conflict

    assert issubclass(errors.UsageError, errors.SlateboardError)
    assert issubclass(errors.RunError, errors.SlateboardError)
    assert issubclass(errors.StoreError, errors.SlateboardError)
    # Re-parenting kept the standard bases callers catch.
    assert issubclass(slateboard.BlueprintError, errors.UsageError) and issubclass(
        slateboard.BlueprintError, ValueError
    )
    assert issubclass(PointerError, errors.UsageError) and issubclass(PointerError, ValueError)
    assert issubclass(ModelTimeout, errors.RunError) and issubclass(ModelTimeout, TimeoutError)
    # Issue 35: found before any call, a usage error; refused during a call, a failed call.
    assert issubclass(ModelConfigError, errors.UsageError) and not issubclass(ModelConfigError, slateboard.ModelError)
    assert issubclass(ModelAuthError, slateboard.ModelError) and not issubclass(ModelAuthError, errors.UsageError)
    assert issubclass(Conflict, errors.StoreError)
    assert not issubclass(Conflict, errors.UsageError | errors.RunError)


def test_no_exception_sits_in_two_branches() -> None:
    branches = (errors.UsageError, errors.RunError, errors.StoreError)
    both = sorted(
        f"{c.__module__}.{c.__qualname__}"
        for c in _exception_classes()
        if sum(issubclass(c, branch) for branch in branches) > 1
    )
    assert both == []


def test_invalid_input_is_a_usage_error_and_a_value_error() -> None:
    from slateboard.kernel import Record
    from slateboard.models import RetryPolicy

    for bad in (lambda: RetryPolicy(max_attempts=0), lambda: Record.from_json({"seq": 1})):
        try:
            bad()
        except errors.InvalidInput as exc:
            assert isinstance(exc, errors.UsageError) and isinstance(exc, ValueError)
        else:
            raise AssertionError("no InvalidInput raised")


def test_issue12_narrow_errors_keep_their_standard_bases() -> None:
    """Lookups by name raise UnknownName subclasses (UsageError and KeyError, message shown
    plainly); bad arguments raise InvalidInput subclasses (UsageError and ValueError)."""
    from slateboard.blueprint.compile import StateModelMissing
    from slateboard.blueprint.templates import UnknownTemplate, load_template
    from slateboard.kernel.anchor import AnchorError, parse_checkpoints

    try:
        load_template("nope")
    except UnknownTemplate as exc:
        assert isinstance(exc, errors.UnknownName) and isinstance(exc, KeyError)
        assert isinstance(exc, errors.UsageError) and str(exc).startswith("unknown template 'nope' (templates: ")
    else:
        raise AssertionError("no UnknownTemplate raised")
    assert issubclass(StateModelMissing, errors.InvalidInput) and issubclass(StateModelMissing, ValueError)
    for line, reason in ((b"[1]", "not a checkpoint object"), (b"{", "line 1: ")):
        try:
            parse_checkpoints(line)
        except AnchorError as exc:
            assert reason in str(exc) and str(exc).count("anchor file line") == 1
        else:
            raise AssertionError("no AnchorError raised")


def test_no_bare_value_error_is_raised_in_the_package() -> None:
    # A bad value raises InvalidInput (or a narrower class): a ValueError for code written
    # against the standard exception, and a SlateboardError for code that catches ours. Read
    # from the source with ast, so a raise on a path no test reaches is found too.
    src = Path(slateboard.__file__).resolve().parent
    bare = []
    for path in sorted(src.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Raise) and node.exc is not None:
                exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                if isinstance(exc, ast.Name) and exc.id == "ValueError":
                    bare.append(f"{path.relative_to(src)}:{node.lineno}")
    assert len(list(src.rglob("*.py"))) > 50  # the walk saw the package
    assert bare == []
