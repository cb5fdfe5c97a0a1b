"""The private-names contract (tests/layers.py) that `make lint` runs with the layer contracts."""

from __future__ import annotations

import sys
from pathlib import Path

import grimp
import pytest

from tests.layers import PrivateUse, private_uses


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> grimp.ImportGraph:
    """A package with two features: `orders` reads names of `stock`, and `stock` uses its own private ones."""
    root = tmp_path / "shop"
    for folder in (root, root / "stock", root / "orders"):
        folder.mkdir()
        (folder / "__init__.py").write_text("")
    (root / "stock" / "levels.py").write_text("def level():\n    return 1\n\n\ndef _raw():\n    return 2\n")
    (root / "stock" / "views.py").write_text("from shop.stock.levels import _raw\n\nx = _raw()\n")
    (root / "orders" / "checkout.py").write_text(
        "from shop.stock.levels import level, _raw\n"
        "from shop.stock import levels as lv\n"
        "import shop.stock.levels as lv2\n"
        "\n"
        "a = level() + lv.level() + lv._raw() + lv2._raw()\n"
        "b = lv.__name__\n")
    (root / "orders" / "clean.py").write_text("from ..stock import levels\n\nx = levels.level()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield grimp.build_graph("shop", cache_dir=None)
    for name in [m for m in sys.modules if m == "shop" or m.startswith("shop.")]:
        del sys.modules[name]


def test_another_features_private_names_are_found_however_reached(shop: grimp.ImportGraph) -> None:
    uses = private_uses(shop, "shop.orders.checkout", depth=2)
    assert sorted(uses, key=lambda u: u.line) == [
        PrivateUse("shop.orders.checkout", 1, "shop.stock.levels", "_raw"),
        PrivateUse("shop.orders.checkout", 5, "shop.stock.levels", "_raw"),
        PrivateUse("shop.orders.checkout", 5, "shop.stock.levels", "_raw"),
    ]


def test_own_private_names_public_names_and_dunders_pass(shop: grimp.ImportGraph) -> None:
    assert private_uses(shop, "shop.stock.views", depth=2) == []
    assert private_uses(shop, "shop.orders.clean", depth=2) == []
