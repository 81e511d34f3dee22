"""The library versions a repo pins, read from its dependency files as text."""

from __future__ import annotations

import pytest
from conftest import make_repo

from wamf_tui.read.pins import pinned


@pytest.mark.parametrize(("file", "text", "version", "below", "line"), [
    ("requirements.txt", "# transformers==9.9\nsentence-transformers==2.0\ntransformers==4.2.1\n", (4, 2, 1), False, 3),
    ("setup.py", "install_requires=['torch', 'transformers>=4.0,<4.3']\n", (4, 3), True, 1),
    ("pyproject.toml", 'dependencies = ["transformers[torch] ~= 4.2.1"]\n', (4, 2, 1), False, 1),
    ("requirements/base.txt", "transformers~=4.30\n", (5,), True, 1),
    ("environment.yml", "  - pip:\n    - transformers<=4.40.0\n", (4, 40), False, 2),
])
def test_the_first_pin_of_the_package_names_its_version(tmp_path, file, text, version, below, line):
    pin = pinned(make_repo(tmp_path, {file: text}), "transformers")
    assert pin is not None and (pin.version, pin.below, pin.where) == (version, below, f"{file}:{line}")


def test_no_pin_and_a_lower_bound_alone_say_nothing(tmp_path):
    assert pinned(make_repo(tmp_path / "a", {"requirements.txt": "transformers\n"}), "transformers") is None
    assert pinned(make_repo(tmp_path / "b", {"requirements.txt": "transformers>=4.30\n"}), "transformers") is None


def test_older_than_compares_releases_and_upper_bounds(tmp_path):
    pin = pinned(make_repo(tmp_path / "a", {"requirements.txt": "transformers==4.2.1\n"}), "transformers")
    assert pin is not None and pin.older_than("4.3") and not pin.older_than("4.2") and pin.where == "requirements.txt:1"
    bound = pinned(make_repo(tmp_path / "b", {"requirements.txt": "transformers<4.3\n"}), "transformers")
    assert bound is not None and bound.older_than("4.3") and not bound.older_than("4.2")
