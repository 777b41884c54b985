"""No module of mprof imports a private name (`_name`) of another package: what one package
shares with another is public, so it can be found, documented and kept."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def package_of(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2])


def imported_privates(path: Path) -> list[str]:
    relative = path.relative_to(ROOT).with_suffix("")
    module = ".".join(relative.parts)
    here = module.split(".")[:-1]  # the package the module is in (__init__ too)
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        base = here[: len(here) - node.level + 1] if node.level else []
        source = ".".join([*base, *(node.module or "").split(".")]).strip(".")
        for alias in node.names:
            if (
                alias.name.startswith("_")
                and not alias.name.startswith("__")
                and package_of(source) != package_of(module)
            ):
                out.append(f"{relative}:{node.lineno}: {alias.name} from {source}")
    return out


def test_no_module_imports_another_packages_private_names():
    found = [
        hit for path in sorted((ROOT / "mprof").rglob("*.py")) for hit in imported_privates(path)
    ]
    assert not found, "\n".join(found)


def test_the_check_sees_a_private_import_across_packages(tmp_path, monkeypatch):
    fake = ROOT / "mprof" / "gate" / "x.py"
    source = "from ..model.session import _match_module\nfrom .stats import _u_cdf\n"
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source)
    assert imported_privates(fake) == ["mprof/gate/x:1: _match_module from mprof.model.session"]
